#include "fake_llm_process.h"

#include "headless_process.h"

#include <QJsonDocument>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>
#include <csignal>

FakeLlmServer::FakeLlmServer(const QStringList &args)
{
    const QString source = qEnvironmentVariable("BATCHPILOT_SOURCE_DIR");
    m_process.setProgram(QStandardPaths::findExecutable(QStringLiteral("python3")));
    m_process.setArguments(QStringList{source + QStringLiteral("/tools/fake_llm_server.py"), "--port", "0"} +
                           args);
}

FakeLlmServer::~FakeLlmServer()
{
    if (m_process.state() != QProcess::NotRunning) {
        m_process.kill();
        m_process.waitForFinished(10000);
    }
}

bool FakeLlmServer::start(int timeoutMs)
{
    static const QRegularExpression line(QStringLiteral("^listening on http://127\\.0\\.0\\.1:(\\d+)$"),
                                         QRegularExpression::MultilineOption);
    const auto match = startAndAwaitLine(m_process, m_stdout, m_stderr, line, timeoutMs);
    m_port = match.hasMatch() ? quint16(match.captured(1).toUInt()) : 0;
    return m_port != 0;
}

bool FakeLlmServer::stop()
{
    if (m_process.state() == QProcess::NotRunning)
        return false;
    ::kill(pid_t(m_process.processId()), SIGTERM);
    return m_process.waitForFinished(10000) && m_process.exitStatus() == QProcess::NormalExit &&
           m_process.exitCode() == 0;
}

QString FakeLlmServer::url() const
{
    return QStringLiteral("http://127.0.0.1:%1").arg(m_port);
}

QString FakeLlmServer::output()
{
    m_stdout += m_process.readAllStandardOutput();
    m_stderr += m_process.readAllStandardError();
    return QString::fromUtf8(m_stdout + m_stderr);
}

Calibrated calibrateFake(const QString &db, const QString &url, const QStringList &more)
{
    Calibrated c;
    c.run = bp::test::runProcess(batchpilotExecutable(),
                                 QStringList{"calibrate", "--db", db, "--target", url, "--model", "fake-llm",
                                             "--scrape-interval", "50", "--json"} +
                                     more,
                                 120000);
    if (c.run.code == 0)
        c.remote = QJsonDocument::fromJson(c.run.out.toUtf8()).object().value("remote").toObject();
    return c;
}
