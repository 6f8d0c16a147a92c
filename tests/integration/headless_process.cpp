#include "headless_process.h"

#include <QDeadlineTimer>
#include <QRegularExpression>

#include <csignal>

QString batchpilotExecutable()
{
    return QStringLiteral(BATCHPILOT_EXE);
}

HeadlessProcess::HeadlessProcess(QStringList args, QProcessEnvironment environment)
{
    m_args = QStringList{"--headless", "--port", "0", "--db", m_dir.filePath("trace.sqlite")} + args;
    m_process.setProcessEnvironment(environment);
    m_process.setProgram(batchpilotExecutable());
    m_process.setArguments(m_args);
}

HeadlessProcess::~HeadlessProcess()
{
    if (m_process.state() != QProcess::NotRunning) {
        m_process.kill();
        m_process.waitForFinished(10000);
    }
}

QRegularExpressionMatch startAndAwaitLine(QProcess &process, QByteArray &out, QByteArray &err,
                                          const QRegularExpression &line, int timeoutMs)
{
    process.start();
    if (!process.waitForStarted(10000))
        return {};
    QDeadlineTimer deadline(timeoutMs);
    while (!deadline.hasExpired()) {
        out += process.readAllStandardOutput();
        err += process.readAllStandardError();
        if (auto match = line.match(QString::fromUtf8(out)); match.hasMatch())
            return match;
        if (process.state() == QProcess::NotRunning)
            return {};
        process.waitForReadyRead(int(std::max<qint64>(1, deadline.remainingTime())));
    }
    return {};
}

bool HeadlessProcess::start(int timeoutMs)
{
    static const QRegularExpression line(QStringLiteral("^listening on (http://\\S+:(\\d+))$"),
                                         QRegularExpression::MultilineOption);
    const auto match = startAndAwaitLine(m_process, m_stdout, m_stderr, line, timeoutMs);
    if (!match.hasMatch())
        return false;
    m_listeningLine = match.captured(0);
    m_port = quint16(match.captured(2).toUInt());
    return m_port != 0;
}

bool HeadlessProcess::waitForExit(int timeoutMs)
{
    const bool done = m_process.state() == QProcess::NotRunning || m_process.waitForFinished(timeoutMs);
    m_stdout += m_process.readAllStandardOutput();
    m_stderr += m_process.readAllStandardError();
    return done;
}

bool HeadlessProcess::stop(int signal, int timeoutMs)
{
    if (m_process.state() == QProcess::NotRunning)
        return true;
    ::kill(pid_t(m_process.processId()), signal);
    return waitForExit(timeoutMs);
}

QString HeadlessProcess::output()
{
    m_stdout += m_process.readAllStandardOutput();
    m_stderr += m_process.readAllStandardError();
    return QString::fromUtf8(m_stdout + m_stderr);
}
