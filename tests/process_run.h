// Runs one of the project's programs to completion, for the CLI tests.
#pragma once

#include <QByteArray>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <utility>

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

// The CLI tests' set-up: `program` run against a trace database of its
// own in a temporary folder, and files written beside it.
class CliDb {
public:
    explicit CliDb(QString program, int timeoutMs = 120000)
        : m_program(std::move(program)), m_timeoutMs(timeoutMs), m_db(m_dir.filePath("traces.sqlite"))
    {
    }
    QString path(const QString &name) const { return m_dir.filePath(name); }
    const QString &db() const { return m_db; }

    // `args` with --db (this database, or `db`); `input` on stdin.
    ProcessRun run(QStringList args, const QString &db = {}, const QByteArray &input = {}) const
    {
        args << "--db" << (db.isEmpty() ? m_db : db);
        return runProcess(m_program, args, m_timeoutMs, input);
    }

    QString write(const QString &name, const QByteArray &text) const
    {
        QFile f(path(name));
        // not Q_ASSERT(f.open(...)): the call would vanish in release builds
        if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
            qFatal("cannot write %s", qPrintable(f.fileName()));
        return f.fileName();
    }

private:
    QString m_program;
    int m_timeoutMs;
    QTemporaryDir m_dir;
    QString m_db;
};

} // namespace bp::test
