// Small helpers shared by the batchpilot-bench stages: flag parsing and
// printing. Qt-free.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace bp::bench {

// --key value / --key=value / --flag. Positional arguments are kept in order.
class Args {
public:
    Args(int argc, char **argv, int first);
    bool has(const std::string &key) const { return m_values.count(key) > 0; }
    std::string str(const std::string &key, const std::string &fallback) const;
    double num(const std::string &key, double fallback) const;
    std::vector<std::string> list(const std::string &key, const std::string &fallback) const;
    const std::vector<std::string> &positional() const { return m_positional; }
    // Keys given but never read: reported as errors by the caller.
    std::vector<std::string> unknown(const std::vector<std::string> &known) const;

private:
    std::map<std::string, std::string> m_values;
    std::vector<std::string> m_positional;
};

// One option of a stage, for its parser and its --help alike: the parser
// accepts exactly the names in the stage's table (plus --help), and --help
// prints every row, so the two cannot drift apart.
struct OptionHelp {
    std::string name;  // without "--"
    std::string value; // placeholder, e.g. "N" or "FILE.json"; empty for a flag
    std::string help;  // one line; says the default
};

struct StageOptions {
    std::string name;        // "load"
    std::string synopsis;    // after "batchpilot-bench NAME", e.g. "[OPTIONS]"
    std::string summary;     // one line for the stage list
    std::string description; // a paragraph for --help
    std::vector<OptionHelp> options;
    std::vector<std::string> names() const;
};

// The text --help prints: "Usage:" line, description, "Options:" with one
// "  --name VALUE  help" line per option (help2man reads it as is).
std::string helpText(const StageOptions &stage);

// Call first in a stage: --help prints helpText() to stdout and returns 0;
// an option not in the table prints "unknown option" to stderr and returns 2;
// otherwise returns -1 (go on).
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

// Sets the calling thread's timer slack to 1 ns (Linux) so short sleeps are
// not stretched by the default 50 µs.
void tightenTimerSlack();

} // namespace bp::bench
