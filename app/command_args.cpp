#include "command_args.h"

#include "engine/core/cli_args.h"

namespace bp::app {

namespace {
std::vector<std::string> utf8(const QStringList &list)
{
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(list.size()));
    for (const QString &s : list)
        out.push_back(s.toStdString());
    return out;
}

std::set<std::string> utf8(const QSet<QString> &set)
{
    std::set<std::string> out;
    for (const QString &s : set)
        out.insert(s.toStdString());
    return out;
}
} // namespace

cli::OptionTable optionTable(const QList<OptionSpec> &options)
{
    cli::OptionTable out;
    out.reserve(static_cast<std::size_t>(options.size()));
    for (const OptionSpec &o : options)
        out.push_back({o.name.toStdString(), o.value.toStdString(), o.help.toStdString()});
    return out;
}

QString formatOptions(const QList<OptionSpec> &options)
{
    return QString::fromStdString(cli::formatOptions(optionTable(options), 26));
}

CommandArgs::CommandArgs(const QStringList &args, const QList<OptionSpec> &spec)
{
    take(cli::Args(utf8(args), optionTable(spec)));
}

CommandArgs::CommandArgs(const QStringList &args, const QSet<QString> &valueFlags,
                         const QSet<QString> &boolFlags)
{
    take(cli::Args(utf8(args), utf8(valueFlags), utf8(boolFlags)));
}

void CommandArgs::take(const cli::Args &parsed)
{
    m_error = QString::fromStdString(parsed.error());
    for (const std::string &p : parsed.positional())
        m_positional << QString::fromStdString(p);
    for (const auto &[name, value] : parsed.values())
        m_values.insert(QString::fromStdString(name), QString::fromStdString(value));
}

std::optional<double> CommandArgs::number(const QString &flag, double fallback, double lo, double hi)
{
    if (!has(flag))
        return fallback;
    bool ok = false;
    const double v = value(flag).toDouble(&ok);
    if (!ok || !(v >= lo && v <= hi)) {
        m_error = QStringLiteral("--%1 must be a number in [%2, %3], got '%4'")
                      .arg(flag)
                      .arg(lo)
                      .arg(hi)
                      .arg(value(flag));
        return std::nullopt;
    }
    return v;
}

} // namespace bp::app
