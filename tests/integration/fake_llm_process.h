// tools/fake_llm_server.py in its own process, and `batchpilot calibrate
// --target` against it: shared by test_fake_llm_server and
// test_fake_llm_client.
#pragma once

#include "tests/process_run.h"

#include <QByteArray>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>

// Started with --port 0 (BATCHPILOT_SOURCE_DIR names the checkout), ready
// once it printed "listening on http://127.0.0.1:PORT"; SIGTERM on stop,
// killed by the destructor if it still runs.
class FakeLlmServer {
public:
    explicit FakeLlmServer(const QStringList &args);
    ~FakeLlmServer();
    FakeLlmServer(const FakeLlmServer &) = delete;
    FakeLlmServer &operator=(const FakeLlmServer &) = delete;

    bool start(int timeoutMs = 20000);
    // SIGTERM; true when it exited with status 0.
    bool stop();
    quint16 port() const { return m_port; }
    QString url() const;
    // Everything it wrote so far (stdout and stderr).
    QString output();

private:
    QProcess m_process;
    QByteArray m_stdout, m_stderr;
    quint16 m_port = 0;
};

struct Calibrated {
    bp::test::ProcessRun run;
    QJsonObject remote; // the calibration's "remote" object; empty when it failed
};

// `calibrate --db DB --target URL --model fake-llm --scrape-interval 50 --json MORE...`, run to completion.
Calibrated calibrateFake(const QString &db, const QString &url, const QStringList &more);
