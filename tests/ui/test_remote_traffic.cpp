// The console aimed at a remote server, against
// a real `batchpilot --headless` started by the test:
//  - the Traffic panel's target selector sends its generated traffic to
//    the server instead of the embedded engine, in every protocol (OIP
//    infer, OpenAI /v1/completions and /v1/chat/completions streaming),
//    recorded as a session of
//    kind "remote" with the server's URL: every request sent is stored,
//    and the server's own counters equal the client's;
//  - form edits while it runs restart the arrivals in the same session;
//  - the Remote target view charts the server's scraped /metrics series
//    beside the client-side figures, for the session it follows or, on
//    its own, for a remote session started meanwhile.
#include "gui_test_support.h"

#include "tests/integration/headless_process.h"
#include "tests/integration/rest_test_util.h"

#include "engine/store/session_summary.h"

#include "ui/remote_target_form.h"
#include "ui/remote_target_view.h"
#include "ui/time_chart_view.h"
#include "ui/trace_list_model.h"
#include "ui/traffic_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTcpServer>
#include <QTcpSocket>

#include <set>

using namespace bp;
using namespace bp::ui;

namespace {

struct Fixture {
    std::unique_ptr<Engine> engine = test::makeEchoEngine();
    app::EngineBridge bridge{*engine};
    test::TempStore temp;
    TraceListModel traces;
    TrafficPanel panel{bridge, temp.store, &traces};

    void aimAt(const QString &url, const QString &protocol)
    {
        panel.targetBox()->setCurrentIndex(1);
        RemoteTargetForm *form = panel.remoteForm();
        form->urlEdit()->setText(url);
        form->modelEdit()->setText(QStringLiteral("echo"));
        form->protocolBox()->setCurrentIndex(form->protocolBox()->findData(protocol));
        form->concurrencyBox()->setValue(4);
        form->scrapeBox()->setValue(50);
        panel.arrivalsBox()->setCurrentIndex(panel.arrivalsBox()->findText("constant"));
        panel.lengthsBox()->setCurrentIndex(panel.lengthsBox()->findText("fixed"));
        panel.fixedLengthBox()->setValue(12);
        panel.maxNewTokensBox()->setValue(3);
        panel.rateBox()->setValue(200);
    }
};

double counter(quint16 port, const QByteArray &sample)
{
    return metricValue(httpRequest(port, "GET", "/metrics").body, sample);
}

} // namespace

class TestRemoteTraffic : public QObject {
    Q_OBJECT

    std::unique_ptr<HeadlessProcess> m_server;
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(m_server->port()); }

private slots:
    void initTestCase()
    {
        test::isolateSettings();
        m_server = std::make_unique<HeadlessProcess>(QStringList{"--model", "builtin:echo"});
        QVERIFY2(m_server->start(), qPrintable(m_server->output()));
    }

    void trafficPanelRecordsEveryRequestAtTheServer_data()
    {
        QTest::addColumn<QString>("protocol");
        QTest::newRow("oip") << QStringLiteral("oip");
        QTest::newRow("openai") << QStringLiteral("openai");
        QTest::newRow("openai-chat") << QStringLiteral("openai-chat");
    }

    void trafficPanelRecordsEveryRequestAtTheServer()
    {
        QFETCH(QString, protocol);
        const quint16 port = m_server->port();
        const double okBefore = counter(port, "batchpilot_requests_total{status=\"ok\"}");
        const double outBefore = counter(port, "batchpilot_output_tokens_total");
        Fixture f;
        f.aimAt(url(), protocol);
        QSignalSpy started(&f.panel, &TrafficPanel::remoteSessionStarted);
        QSignalSpy finished(&f.panel, &TrafficPanel::remoteSessionFinished);
        f.panel.startButton()->click();
        QVERIFY(f.panel.running());
        QCOMPARE(started.count(), 1);
        const qint64 id = started.at(0).at(0).toLongLong();
        QCOMPARE(started.at(0).at(1).toString(), url());
        QCOMPARE(f.panel.remoteSessionId(), id);
        QVERIFY(!f.panel.targetBox()->isEnabled()); // the server is fixed while it runs
        QVERIFY2(f.panel.loadLabel()->text().contains(url()), qPrintable(f.panel.loadLabel()->text()));
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.counters().completed >= 40, 30000);
        f.panel.startButton()->click();
        QVERIFY(!f.panel.running());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QCOMPARE(finished.at(0).at(0).toLongLong(), id);

        const std::uint64_t sent = f.panel.counters().sent;
        QVERIFY(sent >= 40);
        QCOMPARE(f.engine->snapshot().submitted, std::uint64_t(0)); // the embedded engine saw none

        auto session = f.temp.store->session(id);
        QVERIFY2(session, session.status().toString().c_str());
        QCOMPARE(session->kind, std::string("remote"));
        QCOMPARE(session->targetUrl, url().toStdString());
        QVERIFY(session->endedAtUs.has_value());
        QVERIFY(session->replay["target"]["protocol"] == nlohmann::json(protocol.toStdString()));
        QVERIFY(session->replay["traffic"]["arrivals"] == nlohmann::json("constant"));
        QVERIFY(session->replay["client"]["http_status"]["200"] == nlohmann::json(sent));
        auto requests = f.temp.store->requests(id);
        QVERIFY2(requests, requests.status().toString().c_str());
        QCOMPARE(requests->size(), std::size_t(sent)); // every request sent, stored
        std::int64_t outputTokens = 0;
        for (const StoredRequest &r : *requests) {
            QCOMPARE(r.status, StatusCode::Ok);
            QCOMPARE(r.source, std::string("remote"));
            QCOMPARE(r.inputTokens, 12);
            outputTokens += r.outputTokens;
        }
        QCOMPARE(outputTokens, std::int64_t(3 * sent));
        // The server counted exactly what the client stored.
        QCOMPARE(counter(port, "batchpilot_requests_total{status=\"ok\"}") - okBefore, double(sent));
        QCOMPARE(counter(port, "batchpilot_output_tokens_total") - outBefore, double(outputTokens));

        // Item 2: the scraped series charted beside the client's figures.
        auto samples = f.temp.store->targetSamples(id);
        QVERIFY(samples && samples->size() >= 2);
        RemoteTargetView view(f.temp.store);
        QSignalSpy updated(&view, &RemoteTargetView::updated);
        view.follow(id);
        QTRY_VERIFY_WITH_TIMEOUT(view.sessionId() == id && !view.targetSamples().empty(), 10000);
        QCOMPARE(view.targetSamples().size(), samples->size());
        int queuePoints = 0, batchPoints = 0;
        for (const TargetSample &t : view.targetSamples()) {
            QVERIFY2(t.error.empty(), t.error.c_str());
            QCOMPARE(t.server, std::string("batchpilot"));
            queuePoints += t.queue.has_value();
            batchPoints += t.batchSize.has_value();
        }
        QVERIFY(batchPoints > 0); // Δ batch size over a scrape interval with traffic
        QCOMPARE(view.serverChart()->series(RemoteTargetView::Queue)->count(), queuePoints);
        QCOMPARE(view.serverChart()->series(RemoteTargetView::BatchSize)->count(), batchPoints);
        QVERIFY(!view.clientSamples().empty());
        QCOMPARE(view.clientChart()->series(RemoteTargetView::RequestsPerS)->count(),
                 int(view.clientSamples().size()));
        double peakRate = 0;
        for (const QPointF &p : view.clientChart()->series(RemoteTargetView::RequestsPerS)->points())
            peakRate = std::max(peakRate, p.y());
        QVERIFY(peakRate > 0);
        QVERIFY2(view.header()->text().contains(url()) && view.header()->text().contains("batchpilot") &&
                     view.header()->text().contains("ended"),
                 qPrintable(view.header()->text()));
    }

    void editsWhileRunningRestartInTheSameSession()
    {
        Fixture f;
        f.aimAt(url(), QStringLiteral("oip"));
        f.panel.rateBox()->setValue(100);
        QSignalSpy started(&f.panel, &TrafficPanel::remoteSessionStarted);
        QSignalSpy finished(&f.panel, &TrafficPanel::remoteSessionFinished);
        f.panel.startButton()->click();
        QCOMPARE(started.count(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.counters().completed >= 5, 30000);
        QSignalSpy restarted(&f.panel, &TrafficPanel::restarted);
        f.panel.fixedLengthBox()->setValue(20); // restarts the arrivals (debounced)
        QTRY_COMPARE_WITH_TIMEOUT(restarted.count(), 1, 10000);
        const std::uint64_t before = f.panel.counters().sent;
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.counters().sent >= before + 10, 30000);
        QCOMPARE(started.count(), 1); // no second session
        f.panel.stop();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        auto requests = f.temp.store->requests(started.at(0).at(0).toLongLong());
        QCOMPARE(requests->size(), std::size_t(f.panel.counters().sent));
        bool shortOnes = false, longOnes = false;
        std::set<std::uint64_t> ids;
        for (const StoredRequest &r : *requests) {
            shortOnes |= r.inputTokens == 12;
            longOnes |= r.inputTokens == 20;
            ids.insert(r.requestId);
        }
        QVERIFY(shortOnes && longOnes);
        QCOMPARE(ids.size(), requests->size()); // request ids stay unique across the restart
    }

    void badTargetIsRefusedWithAClearError()
    {
        Fixture f;
        f.aimAt(QStringLiteral("ftp://nowhere"), QStringLiteral("oip"));
        QSignalSpy started(&f.panel, &TrafficPanel::remoteSessionStarted);
        f.panel.startButton()->click();
        QVERIFY(!f.panel.running());
        QCOMPARE(started.count(), 0);
        QVERIFY(!f.panel.startButton()->isChecked());
        QVERIFY(f.temp.store->sessions()->empty() ||
                f.temp.store->sessions()->front().kind != "remote"); // nothing recorded
        f.panel.remoteForm()->urlEdit()->setText(url());
        f.panel.remoteForm()->modelEdit()->clear();
        f.panel.startButton()->click();
        QVERIFY(!f.panel.running());
        const auto errors = f.panel.findChildren<QLabel *>();
        bool said = false;
        for (QLabel *l : errors)
            said |= l->isVisibleTo(&f.panel) && l->text().contains("--model NAME");
        QVERIFY(said);
    }

    void viewFollowsARemoteSessionStartedMeanwhile()
    {
        Fixture f;
        RemoteTargetView view(f.temp.store);
        view.setPollInterval(20);
        QTRY_VERIFY_WITH_TIMEOUT(view.watching(), 10000);
        QCOMPARE(view.sessionId(), qint64(0));
        f.aimAt(url(), QStringLiteral("oip"));
        QSignalSpy started(&f.panel, &TrafficPanel::remoteSessionStarted);
        QSignalSpy finished(&f.panel, &TrafficPanel::remoteSessionFinished);
        f.panel.startButton()->click(); // not connected to the view: it finds the session itself
        QCOMPARE(started.count(), 1);
        const qint64 id = started.at(0).at(0).toLongLong();
        QTRY_COMPARE_WITH_TIMEOUT(view.sessionId(), id, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!view.targetSamples().empty() && !view.clientSamples().empty(), 10000);
        QVERIFY(view.header()->text().contains("running"));
        f.panel.stop();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QTRY_VERIFY_WITH_TIMEOUT(view.header()->text().contains("ended"), 10000);
        QCOMPARE(view.sessionId(), id); // kept on screen after it ended
    }

    // 1,000 req/s offered to a server that answers none.
    // The client's queue stays at its cap (the rest is shed, and the panel
    // says so) instead of growing until Stop.
    void clientQueueStaysBoundedAgainstASlowServer()
    {
        QTcpServer silent; // accepts and never answers
        QVERIFY(silent.listen(QHostAddress::LocalHost));
        QList<QPointer<QTcpSocket>> held;
        connect(&silent, &QTcpServer::newConnection, this, [&] {
            while (QTcpSocket *s = silent.nextPendingConnection())
                held.append(s);
        });
        Fixture f;
        f.aimAt(QStringLiteral("http://127.0.0.1:%1").arg(silent.serverPort()), QStringLiteral("oip"));
        f.panel.remoteForm()->concurrencyBox()->setValue(1);
        f.panel.remoteForm()->maxQueuedBox()->setValue(5);
        f.panel.remoteForm()->scrapeBox()->setValue(0);
        f.panel.rateBox()->setValue(1000);
        QSignalSpy started(&f.panel, &TrafficPanel::remoteSessionStarted);
        QSignalSpy finished(&f.panel, &TrafficPanel::remoteSessionFinished);
        f.panel.startButton()->click();
        QVERIFY(f.panel.running());
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.counters().shed >= 200, 30000);
        QTRY_VERIFY_WITH_TIMEOUT(
            f.panel.countersLabel()->text().contains(QStringLiteral("shed by the client")), 5000);
        f.panel.startButton()->click(); // Stop
        for (const QPointer<QTcpSocket> &s : held)
            if (s)
                s->abort(); // the one request on the wire fails now, not at its timeout
        silent.close();     // and those still queued are refused
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        const qint64 id = started.at(0).at(0).toLongLong();
        const LoadGenerator::Counters c = f.panel.counters();
        QVERIFY(c.shed >= 200);
        QCOMPARE(c.completed, std::uint64_t(0));
        // At most one on the wire and five waiting: everything else was shed.
        QVERIFY2(c.sent - c.shed <= 6,
                 qPrintable(QStringLiteral("%1 sent, %2 shed").arg(c.sent).arg(c.shed)));
        auto samples = f.temp.store->metricSamples(id);
        QVERIFY(samples && !samples->empty());
        for (const MetricSample &m : *samples)
            QVERIFY2(m.queueDepth <= 5, std::to_string(m.queueDepth).c_str());
        const SessionSummary summary = f.temp.store->summary(id).value();
        QCOMPARE(summary.clientShed, c.shed);
    }

    // Stop sends nothing more: what still waits for a connection fails
    // there (shutting_down), so a server that fell behind is not sent a
    // backlog after Stop. A closing console (shutdown()) does not wait for
    // the answers on the wire either (the default request timeout is 60 s).
    void stopDropsTheBacklogAndShutdownWaitsForNothing()
    {
        QTcpServer silent; // accepts and never answers
        QVERIFY(silent.listen(QHostAddress::LocalHost));
        QList<QPointer<QTcpSocket>> held;
        int connections = 0;
        connect(&silent, &QTcpServer::newConnection, this, [&] {
            while (QTcpSocket *s = silent.nextPendingConnection()) {
                held.append(s);
                ++connections;
            }
        });
        Fixture f;
        f.aimAt(QStringLiteral("http://127.0.0.1:%1").arg(silent.serverPort()), QStringLiteral("oip"));
        f.panel.remoteForm()->concurrencyBox()->setValue(1);
        f.panel.remoteForm()->maxQueuedBox()->setValue(1000);
        f.panel.remoteForm()->scrapeBox()->setValue(0);
        QSignalSpy started(&f.panel, &TrafficPanel::remoteSessionStarted);
        QSignalSpy finished(&f.panel, &TrafficPanel::remoteSessionFinished);
        f.panel.startButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.counters().sent >= 20 && connections == 1, 20000);
        f.panel.startButton()->click(); // Stop
        for (const QPointer<QTcpSocket> &s : held)
            if (s)
                s->abort(); // the one request on the wire fails now
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        QCOMPARE(connections, 1); // nothing queued went out after Stop
        const SessionSummary summary = f.temp.store->summary(started.at(0).at(0).toLongLong()).value();
        QVERIFY2(summary.byStatus.at("shutting_down") >= 19,
                 qPrintable(QString::fromStdString(formatSummary(summary))));
        QCOMPARE(summary.completed, std::uint64_t(0));

        // Stopped with its one request still on the wire (the session waits
        // for it), then shut down: finished at once, not at the timeout.
        f.panel.startButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.counters().sent >= 5 && connections == 2, 20000);
        f.panel.startButton()->click(); // Stop
        QVERIFY(!f.panel.running());
        f.panel.shutdown();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 20000);

        // Shut down while running, a request on the wire and a backlog.
        f.panel.startButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.counters().sent >= 5 && connections == 3, 20000);
        f.panel.shutdown();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 20000);
        const SessionSummary third = f.temp.store->summary(started.at(2).at(0).toLongLong()).value();
        QCOMPARE(third.byStatus.at("shutting_down"), third.requests);
    }

    void cleanupTestCase() { QVERIFY(m_server->stop(SIGTERM)); }
};

QTEST_MAIN(TestRemoteTraffic)
#include "test_remote_traffic.moc"
