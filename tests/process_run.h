// Runs one of the project's programs to completion, for the CLI tests.
#pragma once

#include <QByteArray>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace bp::test {

struct ProcessRun {
    int code = -1; // -1: crashed or timed out
    QString out, err;
};

// Runs `program` with `args` on the offscreen platform; a run past
// `timeoutMs` is killed and reported with code -1 and err "timed out".
// `input` is written to its stdin, which is then closed.
inline ProcessRun runProcess(const QString &program, const QStringList &args, int timeoutMs = 120000,
                             const QByteArray &input = {})
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!input.isEmpty())
        p.write(input);
    p.closeWriteChannel();
    ProcessRun r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

} // namespace bp::test
