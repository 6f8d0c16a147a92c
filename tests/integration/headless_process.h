// The real `batchpilot --headless` binary under test: started with
// `--port 0` and a throw-away database, ready once it has printed
// "listening on http://HOST:PORT" (the port is parsed from that line).
#pragma once

#include <QProcess>
#include <QRegularExpression>
#include <QStringList>
#include <QTemporaryDir>

#include <csignal> // SIGTERM, SIGINT for stop()

class HeadlessProcess {
public:
    // `args` come after "--headless --port 0 --db <tmp>".
    explicit HeadlessProcess(QStringList args,
                             QProcessEnvironment environment = QProcessEnvironment::systemEnvironment());
    ~HeadlessProcess(); // kills the process if it still runs

    // Starts and waits (at most timeoutMs) for the "listening on" line.
    bool start(int timeoutMs = 60000);
    // Waits for the process to exit on its own (e.g. a refused option).
    bool waitForExit(int timeoutMs = 30000);
    // Sends `signal` and waits for the exit.
    bool stop(int signal, int timeoutMs = 30000);

    quint16 port() const { return m_port; }
    QString listeningLine() const { return m_listeningLine; }
    int exitCode() const { return m_process.exitCode(); }
    QProcess::ExitStatus exitStatus() const { return m_process.exitStatus(); }
    bool isRunning() const { return m_process.state() != QProcess::NotRunning; }
    // Everything it wrote so far (stdout and stderr).
    QString output();

private:
    QTemporaryDir m_dir;
    QStringList m_args;
    QProcess m_process;
    QByteArray m_stdout, m_stderr;
    quint16 m_port = 0;
    QString m_listeningLine;
};

// Starts `process` and reads its output (into `out`, `err`) until a line
// of stdout matches `line`: that match, or no match when it exited first,
// failed to start or `timeoutMs` passed.
QRegularExpressionMatch startAndAwaitLine(QProcess &process, QByteArray &out, QByteArray &err,
                                          const QRegularExpression &line, int timeoutMs);

// Path of the binary (compile definition BATCHPILOT_EXE).
QString batchpilotExecutable();
