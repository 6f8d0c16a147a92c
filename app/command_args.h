// Flags of one subcommand: positional arguments, `--name value`,
// `--name=value` and boolean `--flag`s, checked against what the command
// accepts so that a typo is an error, not a silently ignored option. The
// parsing is engine/core/cli_args.h's, which batchpilot-bench shares; this
// is its face in Qt types. number() keeps QString's reading of a number, so
// a command accepts and refuses what it always did.
#pragma once

#include "engine/core/cli_args.h"

#include <QMap>
#include <QSet>
#include <QString>
#include <QStringList>

#include <optional>

namespace bp::app {

// One option of a command, for its parser and its --help alike.
struct OptionSpec {
    QString name;  // without "--"
    QString value; // placeholder ("N", "FILE"); empty for a flag that takes no value
    QString help;  // one line; says the default
};

// The same table in the shared parser's terms.
cli::OptionTable optionTable(const QList<OptionSpec> &options);

// "  --name VALUE   help" lines, aligned (help2man reads them as options).
QString formatOptions(const QList<OptionSpec> &options);

class CommandArgs {
public:
    // Accepts exactly the options in `spec`.
    CommandArgs(const QStringList &args, const QList<OptionSpec> &spec);
    // `valueFlags` take a value, `boolFlags` do not (names without "--").
    // On a problem, error() is non-empty.
    CommandArgs(const QStringList &args, const QSet<QString> &valueFlags, const QSet<QString> &boolFlags);

    const QString &error() const { return m_error; }
    const QStringList &positional() const { return m_positional; }
    bool has(const QString &flag) const { return m_values.contains(flag); }
    QString value(const QString &flag, const QString &fallback = {}) const
    {
        return m_values.value(flag, fallback);
    }
    // nullopt (and error() set) when present but not a number in [lo, hi].
    std::optional<double> number(const QString &flag, double fallback, double lo, double hi);

private:
    void take(const cli::Args &parsed);

    QStringList m_positional;
    QMap<QString, QString> m_values;
    QString m_error;
};

} // namespace bp::app
