#include "commands.h"

namespace bp::app {

const std::vector<Command> &commands()
{
    static const std::vector<Command> list = {
        // Subcommands register here: {"name", "summary", runFunction},
    };
    return list;
}

const Command *findCommand(const QString &name)
{
    for (const Command &c : commands())
        if (c.name == name)
            return &c;
    return nullptr;
}

} // namespace bp::app
