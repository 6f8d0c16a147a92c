// Small text helpers shared by the CLI's commands and the report writers.
#pragma once

#include <QString>
#include <QTextStream>

#include <string>

namespace bp {

inline QString q(const std::string &s)
{
    return QString::fromStdString(s);
}

namespace app {

// "batchpilot COMMAND: MESSAGE" on stderr; returns `code`, the exit status.
inline int failCommand(const QString &command, const QString &message, int code = 1)
{
    QTextStream(stderr) << "batchpilot " << command << ": " << message << "\n";
    return code;
}

} // namespace app

} // namespace bp
