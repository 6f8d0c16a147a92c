// Small helpers shared by the batchpilot-bench stages: flag parsing and
// printing. Qt-free.
#pragma once

#include <map>
#include <optional>
#include <string>
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

// Sets the calling thread's timer slack to 1 ns (Linux) so short sleeps are
// not stretched by the default 50 µs.
void tightenTimerSlack();

} // namespace bp::bench
