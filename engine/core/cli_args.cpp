#include "cli_args.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace bp::cli {

namespace {

// Characters, not bytes: a placeholder may be UTF-8.
std::size_t width(const std::string &text)
{
    return static_cast<std::size_t>(std::count_if(
        text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::set<std::string> namesWhere(const OptionTable &table, bool takesValue)
{
    std::set<std::string> out;
    for (const Option &o : table)
        if (o.value.empty() != takesValue)
            out.insert(o.name);
    return out;
}

std::string shortest(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

} // namespace

std::string formatOptions(const OptionTable &options, std::size_t maxWidth)
{
    auto left = [](const Option &o) {
        return "--" + o.name + (o.value.empty() ? std::string() : " " + o.value);
    };
    std::size_t column = 0;
    for (const Option &o : options)
        column = std::max(column, width(left(o)));
    column = std::min(column, maxWidth);
    std::string out;
    for (const Option &o : options) {
        std::string l = "  " + left(o);
        const std::size_t w = width(l);
        if (w < column + 4)
            l += std::string(column + 4 - w, ' ');
        else
            l += "\n" + std::string(column + 4, ' ');
        out += l + o.help + "\n";
    }
    return out;
}

Args::Args(const std::vector<std::string> &args, const OptionTable &table)
    : Args(args, namesWhere(table, true), namesWhere(table, false))
{
}

Args::Args(const std::vector<std::string> &args, const std::set<std::string> &valueOptions,
           const std::set<std::string> &flags)
{
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (a.rfind("--", 0) != 0) {
            m_positional.push_back(a);
            continue;
        }
        std::string key = a.substr(2), value;
        const auto eq = key.find('=');
        if (eq != std::string::npos) {
            value = key.substr(eq + 1);
            key.resize(eq);
        }
        if (valueOptions.count(key)) {
            if (eq == std::string::npos) {
                if (i + 1 >= args.size()) {
                    m_error = "option --" + key + " needs a value";
                    return;
                }
                value = args[++i];
            }
        } else if (flags.count(key)) {
            if (eq != std::string::npos) {
                m_error = "option --" + key + " takes no value";
                return;
            }
            value = "1";
        } else {
            m_error = "unknown option --" + key;
            return;
        }
        m_values[key] = value;
    }
}

std::vector<std::string> Args::fromArgv(int argc, const char *const *argv, int first)
{
    std::vector<std::string> out;
    for (int i = first; i < argc; ++i)
        out.emplace_back(argv[i]);
    return out;
}

std::string Args::value(const std::string &name, const std::string &fallback) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? fallback : it->second;
}

std::vector<std::string> Args::list(const std::string &name, const std::string &fallback) const
{
    std::vector<std::string> out;
    const std::string text = value(name, fallback);
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto comma = std::min(text.find(',', start), text.size());
        if (comma > start)
            out.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

std::optional<double> Args::number(const std::string &name, double fallback, double lo, double hi)
{
    if (!has(name))
        return fallback;
    const std::string text = value(name);
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(v >= lo && v <= hi)) {
        m_error = "--" + name + " must be a number in [" + shortest(lo) + ", " + shortest(hi) + "], got '" +
                  text + "'";
        return std::nullopt;
    }
    return v;
}

} // namespace bp::cli
