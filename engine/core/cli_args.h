// The command-line parser both front ends share: the subcommands of
// `batchpilot` (app/command_args.h wraps it in Qt types) and the stages of
// `batchpilot-bench`. Each command has one table of the options it accepts;
// the table feeds the parser and --help alike, so the two cannot drift
// apart, and a typo is an error, not a silently ignored option. Qt-free.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace bp::cli {

// One option of a command.
struct Option {
    std::string name;  // without "--"
    std::string value; // placeholder ("N", "FILE"); empty for a flag that takes no value
    std::string help;  // one line; says the default
};
using OptionTable = std::vector<Option>;

// One "  --name VALUE   help" line per option, the help aligned on one
// column: the widest left side, but at most `maxWidth` characters (a longer
// one puts its help on the next line, indented). help2man reads these lines
// as options.
std::string formatOptions(const OptionTable &options, std::size_t maxWidth);

// The arguments after the command's name: `--name value`, `--name=value`,
// a flag `--name`, and positional arguments (anything not starting with
// "--"), kept in order. Parsing stops at the first problem, which error()
// names:
//   "option --NAME needs a value"  (the last argument, no value after it)
//   "option --NAME takes no value" (a flag given "=...")
//   "unknown option --NAME"        (not in the table)
// A repeated option keeps its last value.
class Args {
public:
    Args() = default;
    // Accepts exactly the options of `table`.
    Args(const std::vector<std::string> &args, const OptionTable &table);
    // `valueOptions` take a value, `flags` do not (names without "--").
    Args(const std::vector<std::string> &args, const std::set<std::string> &valueOptions,
         const std::set<std::string> &flags);
    // argv[first..argc), as from main().
    static std::vector<std::string> fromArgv(int argc, const char *const *argv, int first);

    const std::string &error() const { return m_error; }
    bool ok() const { return m_error.empty(); }
    const std::vector<std::string> &positional() const { return m_positional; }
    bool has(const std::string &name) const { return m_values.count(name) > 0; }
    std::string value(const std::string &name, const std::string &fallback = {}) const;
    // The value split at commas, empty items dropped (`fallback` when absent).
    std::vector<std::string> list(const std::string &name, const std::string &fallback = {}) const;
    // `fallback` when absent; nullopt, and error() set to
    // "--NAME must be a number in [LO, HI], got 'VALUE'", when the whole
    // value is not a number (C syntax) or lies outside [lo, hi].
    std::optional<double> number(const std::string &name, double fallback, double lo, double hi);
    // Every option given, name -> value ("1" for a flag).
    const std::map<std::string, std::string> &values() const { return m_values; }

private:
    std::vector<std::string> m_positional;
    std::map<std::string, std::string> m_values;
    std::string m_error;
};

} // namespace bp::cli
