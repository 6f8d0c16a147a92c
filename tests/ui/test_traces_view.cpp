// The trace store in the console: import with a progress bar that reaches
// 100%, replay of a trace and of a session with progress reaching 100% and
// the new session listed, cancel, a superseded replay's result dropped, and
// the comparison of two sessions (table and overlaid charts).
#include "gui_test_support.h"

#include "ui/compare_view.h"
#include "ui/comparison_model.h"
#include "ui/replay_dialog.h"
#include "ui/replay_runner.h"
#include "ui/session_list_model.h"
#include "ui/time_chart_view.h"
#include "ui/trace_importer.h"
#include "ui/trace_list_model.h"
#include "ui/traces_view.h"

#include "engine/store/session_recorder.h"
#include "engine/workload/workload.h"

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTableView>
#include <QTcpServer>
#include <QTemporaryDir>

using namespace bp;
using namespace bp::ui;

namespace {
ReplayRunner::BackendFactory echoFactory()
{
    return [] { return Result<std::shared_ptr<Backend>>(makeEchoBackend(256, 2048)); };
}

struct Fixture {
    std::unique_ptr<Engine> engine = test::makeEchoEngine();
    app::EngineBridge bridge{*engine};
    test::TempStore temp;
    TracesView view{bridge, temp.store, 0, echoFactory()};

    std::int64_t importTrace(int rows, double gapS)
    {
        QSignalSpy imported(view.importer(), &TraceImporter::imported);
        view.importFile(temp.writeCsv(rows, gapS, QStringLiteral("t%1.csv").arg(rows)));
        if (!QTest::qWaitFor([&] { return imported.count() == 1; }, 20000))
            return 0;
        return imported.front().front().value<ImportResult>().trace.id;
    }
};

// Records a live session of `n` requests through the store's own recorder.
std::int64_t recordSession(const std::shared_ptr<TraceStore> &store, BatchingConfig config, int n)
{
    auto engine = test::makeEchoEngine(config);
    auto recorder = SessionRecorder::start(store, *engine, SessionStart{}).value();
    WorkloadSpec spec;
    spec.arrivals = ArrivalKind::Constant;
    spec.rate = 2000;
    spec.limit = std::size_t(n);
    spec.lengths = LengthKind::Uniform;
    LoadGenerator load(*engine, spec);
    load.start();
    load.waitFinished();
    engine->shutdown(ShutdownMode::Drain);
    const std::int64_t id = recorder->sessionId();
    if (!recorder->finish())
        return 0;
    return id;
}
} // namespace

class TestTracesView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { test::isolateSettings(); }

    void importShowsProgressAndListsTheTrace()
    {
        Fixture f;
        QSignalSpy progress(f.view.importer(), &TraceImporter::progressChanged);
        const std::int64_t id = f.importTrace(30000, 0.001);
        QVERIFY(id > 0);
        QCOMPARE(f.view.progressBar()->value(), 100);
        QCOMPARE(progress.last().front().toInt(), 100);
        for (int i = 1; i < progress.count(); ++i) // monotonic
            QVERIFY(progress[i].front().toInt() >= progress[i - 1].front().toInt());
        QTRY_COMPARE(f.view.traceModel()->rowCount(), 1);
        QCOMPARE(f.view.traceModel()->traces().front().rows, 30000ull);
    }

    // The console's importer reads the multi-turn format
    // (detected by its conversation_id) with its conversations.
    void importsAMultiTurnTrace()
    {
        Fixture f;
        QSignalSpy imported(f.view.importer(), &TraceImporter::imported);
        f.view.importFile(QStringLiteral(TRACE_FIXTURES "/multi_turn.jsonl"));
        QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 1, 20000);
        const ImportResult r = imported.front().front().value<ImportResult>();
        QCOMPARE(r.trace.format, TraceFormat::MultiTurn);
        const auto rows = f.temp.store->traceRows(r.trace.id).value();
        QCOMPARE(rows.size(), std::size_t(5));
        QCOMPARE(rows[3].conversation, std::int64_t(1));
        QCOMPARE(rows[3].turn, 3);
        QCOMPARE(rows[3].thinkS, 1.5);
    }

    void importOfABadFileFailsWithTheReason()
    {
        Fixture f;
        QSignalSpy failed(f.view.importer(), &TraceImporter::failed);
        f.view.importFile(f.temp.dir.filePath("missing.csv"));
        QTRY_COMPARE(failed.count(), 1);
        QVERIFY(failed.front().front().toString().contains("missing.csv"));
    }

    void replayOfATraceReaches100Percent()
    {
        Fixture f;
        const std::int64_t trace = f.importTrace(60, 0.002);
        QVERIFY(trace > 0);
        QSignalSpy finished(f.view.replayRunner(), &ReplayRunner::finished);
        QSignalSpy progress(f.view.replayRunner(), &ReplayRunner::progressChanged);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        o.speed = 4;
        f.view.replay(o);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QCOMPARE(f.view.progressBar()->value(), 100);
        QCOMPARE(progress.last().front().toInt(), 100);
        const ReplayOutcome outcome = finished.front().front().value<ReplayOutcome>();
        QVERIFY(!outcome.cancelled);
        QCOMPARE(outcome.submitted, std::size_t(60));
        QTRY_VERIFY(f.view.sessionModel()->rowOf(outcome.sessionId) >= 0); // listed after the refresh
    }

    void replayDialogTargetSelector()
    {
        ReplayDialog dialog(QStringLiteral("trace 1"), BatchingConfig{});
        dialog.targetBox()->setCurrentIndex(0);
        QVERIFY(!dialog.remoteOptions());
        QVERIFY(!dialog.urlEdit()->isVisibleTo(&dialog));
        QVERIFY(dialog.clockBox()->isVisibleTo(&dialog));
        dialog.targetBox()->setCurrentIndex(1);
        QVERIFY(dialog.urlEdit()->isVisibleTo(&dialog));
        QVERIFY(!dialog.clockBox()->isVisibleTo(&dialog)); // a remote replay runs on the real clock
        dialog.urlEdit()->setText(QStringLiteral("ftp://nowhere"));
        dialog.modelEdit()->setText(QStringLiteral("llama"));
        dialog.protocolBox()->setCurrentIndex(1);
        dialog.show();
        dialog.accept(); // refused: the dialog stays open and says why
        QVERIFY(dialog.isVisible());
        QVERIFY(dialog.findChildren<QLabel *>().size() > 0);
        bool shown = false;
        for (QLabel *l : dialog.findChildren<QLabel *>())
            shown |= l->isVisible() && l->text().contains("http:// or https://");
        QVERIFY(shown);
        dialog.urlEdit()->setText(QStringLiteral("http://10.1.2.3:8000/"));
        auto remote = dialog.remoteOptions();
        QVERIFY(remote);
        QCOMPARE(remote->protocol, remote::Protocol::OpenAi);
        QCOMPARE(remote->model, QStringLiteral("llama"));
        QCOMPARE(dialog.options().clock, ReplayClock::Real);
        QVERIFY(!dialog.options().config);
        dialog.accept();
        QVERIFY(!dialog.isVisible());
    }

    void remoteReplayFromTheConsoleRecordsFailuresAndFinishes()
    {
        // Nothing listens at the target: every request is recorded as
        // unavailable, and the replay still finishes with a session.
        Fixture f;
        const std::int64_t trace = f.importTrace(5, 0.001);
        QVERIFY(trace > 0);
        quint16 port = 0;
        {
            QTcpServer s;
            QVERIFY(s.listen(QHostAddress::LocalHost));
            port = s.serverPort();
        }
        remote::RemoteOptions ro;
        ro.target = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(port));
        ro.model = QStringLiteral("echo");
        ro.scrapeInterval = Duration::zero();
        QSignalSpy finished(f.view.replayRunner(), &ReplayRunner::finished);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        f.view.replay(o, ro);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        const ReplayOutcome outcome = finished.front().front().value<ReplayOutcome>();
        QCOMPARE(outcome.failed, std::size_t(5));
        auto session = f.temp.store->session(outcome.sessionId);
        QCOMPARE(session->kind, std::string("remote"));
        QCOMPARE(session->targetUrl, ro.target.toString().toStdString());
        const std::vector<StoredRequest> rows = f.temp.store->requests(outcome.sessionId).value();
        for (const StoredRequest &r : rows)
            QCOMPARE(r.status, StatusCode::Unavailable);
    }

    void replayOfASessionOnTheVirtualClock()
    {
        Fixture f;
        const std::int64_t source = recordSession(f.temp.store, {}, 200);
        QVERIFY(source > 0);
        QSignalSpy finished(f.view.replayRunner(), &ReplayRunner::finished);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Session, source};
        o.clock = ReplayClock::Virtual;
        o.lengthScale = 0.5;
        f.view.replay(o);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QCOMPARE(f.view.replayRunner()->percent(), 100);
        const ReplayOutcome outcome = finished.front().front().value<ReplayOutcome>();
        QCOMPARE(outcome.completed, std::size_t(200));
        QTRY_VERIFY(f.view.sessionModel()->rowOf(outcome.sessionId) >= 0);
        const SessionInfo info = f.temp.store->session(outcome.sessionId).value();
        QCOMPARE(info.sourceSessionId.value_or(0), source);
    }

    void replayCanBeCancelled()
    {
        Fixture f;
        const std::int64_t trace = f.importTrace(2000, 0.01); // 20 s of arrivals
        QSignalSpy finished(f.view.replayRunner(), &ReplayRunner::finished);
        QSignalSpy progress(f.view.replayRunner(), &ReplayRunner::progressChanged);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        f.view.replay(o);
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 2, 20000); // past "loading the model"
        f.view.cancelJob();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        const ReplayOutcome outcome = finished.front().front().value<ReplayOutcome>();
        QVERIFY(outcome.cancelled);
        QVERIFY(outcome.submitted < 2000);
        QVERIFY(f.view.progressBar()->value() < 100);
    }

    void aNewerReplayDropsTheOlderResult()
    {
        test::TempStore temp;
        std::vector<TraceRow> longRows, shortRows;
        for (int i = 0; i < 3000; ++i)
            longRows.push_back({i * 0.01, 16, 0});
        for (int i = 0; i < 20; ++i)
            shortRows.push_back({i * 0.001, 16, 0});
        const std::int64_t longTrace =
            temp.store->addTrace("long", "", TraceFormat::Plain, longRows).value().id;
        const std::int64_t shortTrace =
            temp.store->addTrace("short", "", TraceFormat::Plain, shortRows).value().id;
        auto runner = std::make_unique<ReplayRunner>(temp.store, echoFactory());
        QSignalSpy finished(runner.get(), &ReplayRunner::finished);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, longTrace};
        runner->start(o);
        o.source = {ReplaySource::Kind::Trace, shortTrace};
        runner->start(o); // cancels the long one; its result must not arrive
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        QCOMPARE(finished.front().front().value<ReplayOutcome>().submitted, std::size_t(20));
        runner.reset();                    // waits for the cancelled worker
        QCoreApplication::processEvents(); // deliver whatever it posted
        QCOMPARE(finished.count(), 1);
    }

    void replayWithoutAModelFailsWithAReason()
    {
        test::TempStore temp;
        const std::int64_t trace =
            temp.store->addTrace("t", "", TraceFormat::Plain, std::vector<TraceRow>{{0, 8, 0}}).value().id;
        ReplayRunner runner(temp.store, [] {
            return Result<std::shared_ptr<Backend>>(Status(StatusCode::NotFound, "no such model"));
        });
        QSignalSpy failed(&runner, &ReplayRunner::failed);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        runner.start(o);
        QTRY_COMPARE(failed.count(), 1);
        QCOMPARE(failed.front().front().toString(), QStringLiteral("no such model"));
    }

    void compareTwoSessions()
    {
        test::TempStore temp;
        BatchingConfig small;
        small.maxBatchSize = 4;
        const std::int64_t a = recordSession(temp.store, {}, 300);
        const std::int64_t b = recordSession(temp.store, small, 300);
        CompareView view(temp.store);
        view.resize(1200, 700);
        view.show();
        QSignalSpy compared(&view, &CompareView::compared);
        view.compare(a, b);
        QTRY_COMPARE_WITH_TIMEOUT(compared.count(), 1, 10000);
        QCOMPARE(view.model()->sessionA(), a);
        QCOMPARE(view.model()->sessionB(), b);
        const SessionSummary sa = temp.store->summary(a).value(), sb = temp.store->summary(b).value();
        QCOMPARE(std::size_t(view.model()->rowCount()), comparisonRows(sa, sb).size());
        const QStringList labels = [&] {
            QStringList l;
            for (int r = 0; r < view.model()->rowCount(); ++r)
                l << view.model()->index(r, 0).data().toString();
            return l;
        }();
        QVERIFY(labels.contains("throughput (req/s)"));
        QVERIFY(labels.contains("latency p99 (ms)"));
        // The overlaid charts show both sessions' samples.
        for (TimeChartView *chart : view.charts()) {
            QCOMPARE(std::size_t(chart->series(0)->count()), temp.store->metricSamples(a).value().size());
            QCOMPARE(std::size_t(chart->series(1)->count()), temp.store->metricSamples(b).value().size());
        }
        QVERIFY(!view.grab().isNull());
    }

    void exportWritesTheSessionReport()
    {
        Fixture f;
        const std::int64_t id = recordSession(f.temp.store, {}, 40);
        QVERIFY(id > 0);
        QTemporaryDir dir;
        QSignalSpy done(&f.view, &TracesView::reportExported);
        QSignalSpy failed(&f.view, &TracesView::reportFailed);
        for (const char *name : {"r.json", "r.html", "r.pdf"}) {
            const QString path = dir.filePath(QString::fromLatin1(name));
            f.view.exportReport(id, path);
            QTRY_VERIFY_WITH_TIMEOUT(done.count() + failed.count() > 0, 30000);
            QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().front().toString()));
            QCOMPARE(done.takeFirst().at(1).toString(), path);
            QFile file(path);
            QVERIFY(file.open(QIODevice::ReadOnly));
            const QByteArray head = file.read(64);
            if (path.endsWith(".pdf"))
                QVERIFY(head.startsWith("%PDF-"));
            else if (path.endsWith(".html"))
                QVERIFY(head.startsWith("<!DOCTYPE html>"));
            else
                QVERIFY(head.startsWith("{"));
        }
        // A name without a report extension, and an unknown session, fail with a reason.
        f.view.exportReport(id, dir.filePath("r.txt"));
        QCOMPARE(failed.count(), 1);
        QVERIFY(failed.takeFirst().front().toString().contains(".html"));
        f.view.exportReport(999, dir.filePath("missing.json"));
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
        QVERIFY(!QFile::exists(dir.filePath("missing.json")));
    }

    void compareAnUnknownSessionSaysSo()
    {
        test::TempStore temp;
        CompareView view(temp.store);
        QSignalSpy failed(&view, &CompareView::failed);
        view.compare(1, 999);
        QTRY_COMPARE(failed.count(), 1);
        QVERIFY(failed.front().front().toString().contains("999"));
    }

    void compareButtonTakesTwoSelectedSessions()
    {
        Fixture f;
        const std::int64_t a = recordSession(f.temp.store, {}, 50);
        const std::int64_t b = recordSession(f.temp.store, {}, 50);
        f.view.refresh();
        QTRY_COMPARE(f.view.sessionModel()->rowCount(), 2);
        QSignalSpy requested(&f.view, &TracesView::compareRequested);
        f.view.sessionTable()->selectAll();
        f.view.compareSelected();
        QCOMPARE(requested.count(), 1);
        QCOMPARE(requested.front()[0].value<std::int64_t>(), a);
        QCOMPARE(requested.front()[1].value<std::int64_t>(), b);
    }
};

QTEST_MAIN(TestTracesView)
#include "test_traces_view.moc"
