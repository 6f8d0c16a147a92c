// Small helpers shared by the batchpilot-bench stages: flag parsing and
// printing. Qt-free.
#pragma once

#include "engine/core/cli_args.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace bp::bench {

// One option of a stage, for its parser and its --help alike: the parser
// accepts exactly the names in the stage's table (plus --help), and --help
// prints every row, so the two cannot drift apart. The parser is the one
// both front ends share (engine/core/cli_args.h).
using OptionHelp = cli::Option;

struct StageOptions;

// A stage's arguments, parsed against its option table (plus --help):
// --name value, --name=value, a flag --name (cli::Args). A problem (an
// option not in the table, a value missing or given to a flag) stops the
// parse; error() names it.
class Args {
public:
    // argv[first..argc).
    Args(int argc, char **argv, int first, const StageOptions &stage);
    const std::string &error() const { return m_parsed.error(); }
    // --help was given, wherever it stands: it wins over a problem.
    bool wantsHelp() const { return m_help; }
    bool has(const std::string &key) const { return m_parsed.has(key); }
    std::string str(const std::string &key, const std::string &fallback) const;
    // Throws std::invalid_argument ("--KEY expects a number, got 'VALUE'")
    // when the whole value is not a number (C syntax).
    double num(const std::string &key, double fallback) const;
    std::vector<std::string> list(const std::string &key, const std::string &fallback) const;

private:
    cli::Args m_parsed;
    bool m_help = false;
};

struct StageOptions {
    std::string name;        // "load"
    std::string synopsis;    // after "batchpilot-bench NAME", e.g. "[OPTIONS]"
    std::string summary;     // one line for the stage list
    std::string description; // a paragraph for --help
    cli::OptionTable options;
    std::vector<std::string> names() const;
};

// The text --help prints: "Usage:" line, description, "Options:" with one
// "  --name VALUE  help" line per option (help2man reads it as is).
std::string helpText(const StageOptions &stage);

// Call first in a stage: --help prints helpText() to stdout and returns 0;
// a problem of the parse ("unknown option --x", ...) is printed on stderr
// with a pointer to --help and returns 2; otherwise returns -1 (go on).
int handleHelpAndUnknown(const Args &args, const StageOptions &stage);

// --json FILE: writes `json` there, indented. 0, or 1 after saying on stderr
// that the file cannot be written.
int writeJsonOption(const Args &args, const nlohmann::json &json);

// Why a stage stopped before its end: the line it prints on stderr and the
// exit code it returns. Each stage is parse -> run (a result object) ->
// print -> store; a part that stops hands this back instead of printing.
struct StageError {
    int rc = 1;
    std::string message; // the whole line, without the newline
};
// Prints e.message and a newline on stderr; returns e.rc.
int report(const StageError &e);

// A stage part's result, or the StageError that stopped it.
template <class T> class StageResult {
public:
    StageResult(T value) : m_state(std::move(value)) {}
    StageResult(StageError error) : m_state(std::move(error)) {}
    explicit operator bool() const { return m_state.index() == 0; }
    T &operator*() { return std::get<0>(m_state); }
    const T &operator*() const { return std::get<0>(m_state); }
    T *operator->() { return &std::get<0>(m_state); }
    const T *operator->() const { return &std::get<0>(m_state); }
    const StageError &error() const { return std::get<1>(m_state); }

private:
    std::variant<T, StageError> m_state;
};

// Every stage, in the order `batchpilot-bench --help` lists them.
std::vector<const StageOptions *> benchStages();
// The stage called `name`; null when there is none.
const StageOptions *findStage(const std::string &name);
// Runs the stage findStage() returned with its parsed arguments; its exit code.
int runStage(const StageOptions &stage, const Args &args);

// Sets the calling thread's timer slack to 1 ns (Linux) so short sleeps are
// not stretched by the default 50 µs.
void tightenTimerSlack();

} // namespace bp::bench
