#include "bench_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace bp::bench {

Args::Args(int argc, char **argv, int first)
{
    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) == 0) {
            const auto eq = a.find('=');
            if (eq != std::string::npos) {
                m_values[a.substr(2, eq - 2)] = a.substr(eq + 1);
            } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
                m_values[a.substr(2)] = argv[++i];
            } else {
                m_values[a.substr(2)] = "1";
            }
        } else {
            m_positional.push_back(a);
        }
    }
}

std::string Args::str(const std::string &key, const std::string &fallback) const
{
    auto it = m_values.find(key);
    return it == m_values.end() ? fallback : it->second;
}

double Args::num(const std::string &key, double fallback) const
{
    auto it = m_values.find(key);
    if (it == m_values.end())
        return fallback;
    char *end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || *end != '\0')
        throw std::invalid_argument("--" + key + " expects a number, got '" + it->second + "'");
    return v;
}

std::vector<std::string> Args::list(const std::string &key, const std::string &fallback) const
{
    std::vector<std::string> out;
    std::stringstream ss(str(key, fallback));
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            out.push_back(item);
    return out;
}

std::vector<std::string> Args::unknown(const std::vector<std::string> &known) const
{
    std::vector<std::string> out;
    for (const auto &[k, v] : m_values)
        if (std::find(known.begin(), known.end(), k) == known.end())
            out.push_back(k);
    return out;
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
    out += "Options:\n";
    std::vector<OptionHelp> rows = stage.options;
    rows.push_back({"help", "", "print this help and exit"});
    std::size_t width = 0;
    auto left = [](const OptionHelp &o) { return "--" + o.name + (o.value.empty() ? "" : " " + o.value); };
    for (const auto &o : rows)
        width = std::max(width, left(o).size());
    width = std::min<std::size_t>(width, 30);
    for (const auto &o : rows) {
        std::string l = "  " + left(o);
        if (l.size() < width + 4)
            l += std::string(width + 4 - l.size(), ' ');
        else
            l += "\n" + std::string(width + 4, ' ');
        out += l + o.help + "\n";
    }
    return out;
}

int handleHelpAndUnknown(const Args &args, const StageOptions &stage)
{
    if (args.has("help")) {
        std::cout << helpText(stage);
        return 0;
    }
    if (auto u = args.unknown(stage.names()); !u.empty()) {
        std::cerr << "batchpilot-bench " << stage.name << ": unknown option --" << u.front()
                  << " (see batchpilot-bench " << stage.name << " --help)\n";
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
