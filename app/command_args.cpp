#include "command_args.h"

namespace bp::app {

namespace {
QSet<QString> namesWhere(const QList<OptionSpec> &spec, bool takesValue)
{
    QSet<QString> out;
    for (const OptionSpec &o : spec)
        if (o.value.isEmpty() != takesValue)
            out.insert(o.name);
    return out;
}
} // namespace

QString formatOptions(const QList<OptionSpec> &options)
{
    auto left = [](const OptionSpec &o) {
        return "--" + o.name + (o.value.isEmpty() ? QString() : " " + o.value);
    };
    qsizetype width = 0;
    for (const OptionSpec &o : options)
        width = std::max(width, left(o).size());
    width = std::min<qsizetype>(width, 26);
    QString out;
    for (const OptionSpec &o : options) {
        QString l = "  " + left(o);
        if (l.size() < width + 4)
            l = l.leftJustified(width + 4);
        else
            l += "\n" + QString(width + 4, ' ');
        out += l + o.help + "\n";
    }
    return out;
}

CommandArgs::CommandArgs(const QStringList &args, const QList<OptionSpec> &spec)
    : CommandArgs(args, namesWhere(spec, true), namesWhere(spec, false))
{
}

CommandArgs::CommandArgs(const QStringList &args, const QSet<QString> &valueFlags, const QSet<QString> &boolFlags)
{
    for (int i = 0; i < args.size(); ++i) {
        const QString &a = args[i];
        if (!a.startsWith("--")) {
            m_positional << a;
            continue;
        }
        QString key = a.mid(2), value;
        const int eq = key.indexOf('=');
        if (eq >= 0) {
            value = key.mid(eq + 1);
            key = key.left(eq);
        }
        if (valueFlags.contains(key)) {
            if (eq < 0) {
                if (i + 1 >= args.size()) {
                    m_error = QStringLiteral("option --%1 needs a value").arg(key);
                    return;
                }
                value = args[++i];
            }
        } else if (boolFlags.contains(key)) {
            if (eq >= 0) {
                m_error = QStringLiteral("option --%1 takes no value").arg(key);
                return;
            }
            value = QStringLiteral("1");
        } else {
            m_error = QStringLiteral("unknown option --%1").arg(key);
            return;
        }
        m_values.insert(key, value);
    }
}

std::optional<double> CommandArgs::number(const QString &flag, double fallback, double lo, double hi)
{
    if (!has(flag))
        return fallback;
    bool ok = false;
    const double v = value(flag).toDouble(&ok);
    if (!ok || !(v >= lo && v <= hi)) {
        m_error = QStringLiteral("--%1 must be a number in [%2, %3], got '%4'").arg(flag).arg(lo).arg(hi).arg(value(flag));
        return std::nullopt;
    }
    return v;
}

} // namespace bp::app
