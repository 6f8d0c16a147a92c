#include "commands.h"

#include "cmd_store.h"
#include "report/cmd_report.h"

namespace bp::app {

const std::vector<Command> &commands()
{
    static const std::vector<Command> list = {
        // Subcommands register here: {"name", "summary", runFunction},
        {"import-trace", "import a trace CSV (Azure or plain) into the trace database", runImportTrace},
        {"traces", "list the imported traces", runTraces},
        {"sessions", "list the recorded and replayed sessions", runSessions},
        {"replay", "replay a session (or --trace ID) under a config and compare", runReplay},
        {"report", "write a session report: report SESSION -o FILE.html|FILE.pdf|FILE.json", runReport, true},
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
