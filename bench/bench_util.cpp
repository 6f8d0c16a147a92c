#include "bench_util.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace bp::bench {

namespace {

// The stage's table and --help.
cli::OptionTable withHelp(const StageOptions &stage)
{
    cli::OptionTable rows = stage.options;
    rows.push_back({"help", "", "print this help and exit"});
    return rows;
}

} // namespace

Args::Args(int argc, char **argv, int first, const StageOptions &stage)
    : m_parsed(cli::Args::fromArgv(argc, argv, first), withHelp(stage))
{
    for (int i = first; i < argc; ++i)
        m_help = m_help || std::string(argv[i]) == "--help";
}

std::string Args::str(const std::string &key, const std::string &fallback) const
{
    return m_parsed.value(key, fallback);
}

double Args::num(const std::string &key, double fallback) const
{
    if (!has(key))
        return fallback;
    const std::string text = m_parsed.value(key);
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0')
        throw std::invalid_argument("--" + key + " expects a number, got '" + text + "'");
    return v;
}

std::vector<std::string> Args::list(const std::string &key, const std::string &fallback) const
{
    return m_parsed.list(key, fallback);
}

std::vector<std::string> StageOptions::names() const
{
    std::vector<std::string> out;
    for (const auto &o : options)
        out.push_back(o.name);
    return out;
}

std::string helpText(const StageOptions &stage)
{
    std::string out =
        "Usage: batchpilot-bench " + stage.name + " " + stage.synopsis + "\n" + stage.summary + "\n\n";
    if (!stage.description.empty())
        out += stage.description + "\n\n";
    return out + "Options:\n" + cli::formatOptions(withHelp(stage), 30);
}

int handleHelpAndUnknown(const Args &args, const StageOptions &stage)
{
    if (args.wantsHelp()) {
        std::cout << helpText(stage);
        return 0;
    }
    if (!args.error().empty()) {
        std::cerr << "batchpilot-bench " << stage.name << ": " << args.error() << " (see batchpilot-bench "
                  << stage.name << " --help)\n";
        return 2;
    }
    return -1;
}

int report(const StageError &e)
{
    std::cerr << e.message << "\n";
    return e.rc;
}

void tightenTimerSlack()
{
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
}

int writeJsonOption(const Args &args, const nlohmann::json &json)
{
    std::ofstream out(args.str("json", ""));
    if (!out) {
        std::cerr << "batchpilot-bench: cannot write " << args.str("json", "") << "\n";
        return 1;
    }
    out << json.dump(2) << "\n";
    return 0;
}

} // namespace bp::bench
