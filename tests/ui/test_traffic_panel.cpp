// TrafficPanel drives a real engine: starting it produces requests (the
// engine's counters rise), the lengths, arrival process and max_new_tokens
// chosen reach the requests, lengths can come from an imported trace, edits
// while running restart the load, and stop stops it. The default rate comes
// from the model's capacity measured at start-up (never the fixed 200 req/s
// that overloaded the small decoder), the offered load is shown against that
// capacity, and a warning goes up before the queue runs away.
#include "gui_test_support.h"

#include "ui/trace_list_model.h"
#include "ui/traffic_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>

using namespace bp;
using namespace bp::ui;

namespace {
struct Fixture {
    std::unique_ptr<Engine> engine = test::makeEchoEngine();
    app::EngineBridge bridge{*engine};
    test::TempStore temp;
    TraceListModel traces;
    TrafficPanel panel{bridge, temp.store, &traces};

    void choose(QComboBox *box, const QString &text) { box->setCurrentIndex(box->findText(text)); }
};
} // namespace

class TestTrafficPanel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { test::isolateSettings(); }

    void startProducesRequestsAndStopStops()
    {
        Fixture f;
        QSignalSpy running(&f.panel, &TrafficPanel::runningChanged);
        f.panel.rateBox()->setValue(500);
        f.panel.startButton()->click();
        QVERIFY(f.panel.running());
        QCOMPARE(running.count(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(f.engine->snapshot().completed >= 50, 20000);
        QVERIFY(f.panel.counters().sent >= 50);
        f.panel.startButton()->click();
        QVERIFY(!f.panel.running());
        QCOMPARE(running.count(), 2);
        QCOMPARE(f.panel.startButton()->text(), QStringLiteral("Start traffic"));
        QCOMPARE(f.engine->snapshot().submitted, f.panel.counters().accepted);
    }

    void fixedLengthsAndMaxNewTokensReachTheRequests()
    {
        Fixture f;
        f.choose(f.panel.arrivalsBox(), "constant");
        f.choose(f.panel.lengthsBox(), "fixed");
        f.panel.fixedLengthBox()->setValue(40);
        f.panel.maxNewTokensBox()->setValue(4);
        f.panel.rateBox()->setValue(400);
        f.panel.start();
        QTRY_VERIFY_WITH_TIMEOUT(f.engine->snapshot().completed >= 40, 20000);
        f.panel.stop();
        f.engine->shutdown(ShutdownMode::Drain);
        const Snapshot s = f.engine->snapshot();
        QCOMPARE(s.inputTokens, 40 * s.completed);
        QCOMPARE(s.outputTokens, 4 * s.completed); // echo generates max_new_tokens tokens
    }

    void uniformLengthsStayInRange()
    {
        Fixture f;
        f.choose(f.panel.lengthsBox(), "uniform");
        f.panel.minLengthBox()->setValue(10);
        f.panel.maxLengthBox()->setValue(20);
        f.panel.maxNewTokensBox()->setValue(0);
        f.panel.rateBox()->setValue(400);
        f.panel.start();
        QTRY_VERIFY_WITH_TIMEOUT(f.engine->snapshot().completed >= 40, 20000);
        f.panel.stop();
        f.engine->shutdown(ShutdownMode::Drain);
        const Snapshot s = f.engine->snapshot();
        QVERIFY(s.inputTokens >= 10 * s.completed && s.inputTokens <= 20 * s.completed);
    }

    void burstsArriveTogether()
    {
        Fixture f;
        f.choose(f.panel.arrivalsBox(), "bursts");
        f.panel.burstSizeBox()->setValue(8);
        f.panel.rateBox()->setValue(400);
        QCOMPARE(f.panel.formSpec().arrivals, ArrivalKind::Bursts);
        QCOMPARE(f.panel.formSpec().burstSize, 8);
        f.panel.start();
        QTRY_VERIFY_WITH_TIMEOUT(f.engine->snapshot().completed >= 40, 20000);
    }

    // Shared-prefix and multi-turn traffic from the panel. Each
    // conversation's later turns wait for the previous answer (closed loop)
    // and resend its prompt: the echo engine sees the context grow.
    void conversationsAndASharedSystemPrompt()
    {
        Fixture f;
        f.choose(f.panel.arrivalsBox(), "constant");
        f.choose(f.panel.lengthsBox(), "fixed");
        f.panel.fixedLengthBox()->setValue(10);
        f.panel.maxNewTokensBox()->setValue(2);
        f.panel.rateBox()->setValue(200);
        f.panel.systemPromptBox()->setValue(30);
        f.panel.systemShareBox()->setValue(100);
        QVERIFY(f.panel.turnsBox()->isHidden()); // single requests: no turns to set
        f.panel.conversationsBox()->setValue(5);
        QVERIFY(!f.panel.turnsBox()->isHidden());
        f.panel.turnsBox()->setValue(3);
        f.panel.thinkTimeBox()->setValue(0.01);
        const WorkloadSpec spec = f.panel.formSpec();
        QCOMPARE(spec.systemPromptTokens, 30);
        QCOMPARE(spec.systemPromptShare, 1.0);
        QCOMPARE(spec.conversations, std::size_t(5));
        QCOMPARE(spec.turnsPerConversation, 3);
        QCOMPARE(spec.thinkTimeS, 0.01);
        QSignalSpy running(&f.panel, &TrafficPanel::runningChanged);
        f.panel.start();
        // 5 conversations x 3 turns, then the load ends by itself.
        QTRY_COMPARE_WITH_TIMEOUT(f.engine->snapshot().completed, std::uint64_t(15), 20000);
        QTRY_COMPARE_WITH_TIMEOUT(f.panel.counters().sent, std::uint64_t(15), 20000);
        f.engine->shutdown(ShutdownMode::Drain);
        // Turn 1: 30 + 10; turn 2: 40 + 2 + 10; turn 3: 52 + 2 + 10 (echo answers max_new_tokens ids).
        QCOMPARE(f.engine->snapshot().inputTokens, std::uint64_t(5 * (40 + 52 + 64)));
        f.panel.conversationsBox()->setValue(0);
        f.panel.turnsBox()->setValue(1);
        f.panel.systemShareBox()->setValue(150); // clamped by the box
        QCOMPARE(f.panel.formSpec().systemPromptShare, 1.0);
    }

    void lengthsFromAnImportedTrace()
    {
        Fixture f;
        std::vector<TraceRow> rows;
        for (int i = 0; i < 100; ++i)
            rows.push_back({i * 0.001, 77, 3});
        QVERIFY(f.temp.store->addTrace("sevens", "", TraceFormat::Plain, rows).isOk());
        f.traces.setTraces(f.temp.store->traces().value());
        f.choose(f.panel.lengthsBox(), "from a trace");
        QCOMPARE(f.panel.traceBox()->currentText(), QStringLiteral("sevens"));
        f.panel.rateBox()->setValue(500);
        f.panel.start(); // loads the rows off the GUI thread first
        QTRY_VERIFY_WITH_TIMEOUT(f.panel.running(), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(f.engine->snapshot().completed >= 30, 20000);
        f.panel.stop();
        f.engine->shutdown(ShutdownMode::Drain);
        const Snapshot s = f.engine->snapshot();
        QCOMPARE(s.inputTokens, 77 * s.completed);
        QCOMPARE(s.outputTokens, 3 * s.completed);
    }

    void traceLengthsWithoutATraceSayWhy()
    {
        Fixture f;
        f.choose(f.panel.lengthsBox(), "from a trace");
        f.panel.start();
        QVERIFY(!f.panel.running());
        QVERIFY(!f.panel.startButton()->isChecked());
    }

    void editsWhileRunningRestartTheLoad()
    {
        Fixture f;
        QSignalSpy running(&f.panel, &TrafficPanel::runningChanged);
        f.panel.rateBox()->setValue(300);
        f.panel.start();
        QTRY_VERIFY_WITH_TIMEOUT(f.engine->snapshot().completed >= 10, 20000);
        f.panel.rateBox()->setValue(600);
        QTRY_COMPARE(running.count(), 3); // started, stopped, started again with the new rate
        QVERIFY(f.panel.running());
        const std::uint64_t before = f.engine->snapshot().completed;
        QTRY_VERIFY_WITH_TIMEOUT(f.engine->snapshot().completed >= before + 10, 20000);
    }

    // The real measurement on the engine's model (here builtin:echo) lands
    // after start-up; the rate becomes 70% of it (capped), below capacity.
    void capacityMeasuredAtStartSetsTheDefaultRate()
    {
        Fixture f;
        QSignalSpy measured(&f.panel, &TrafficPanel::capacityMeasured);
        QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, 20000);
        const double capacity = measured.at(0).at(0).toDouble();
        QVERIFY(capacity > 0);
        QCOMPARE(f.panel.capacity().requestsPerS, capacity);
        QCOMPARE(f.panel.rateBox()->value(), defaultRateFor(capacity));
        QVERIFY(f.panel.rateBox()->value() < capacity);
        QCOMPARE(f.panel.loadLevel(), LoadLevel::Comfortable);
        QVERIFY2(f.panel.loadLabel()->text().contains("of capacity"),
                 qPrintable(f.panel.loadLabel()->text()));
        QVERIFY(!f.panel.warning());
    }

    void offeredLoadAgainstCapacity()
    {
        Fixture f;
        QSignalSpy measured(&f.panel, &TrafficPanel::capacityMeasured);
        QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, 20000); // the start-up measurement first
        QSignalSpy warning(&f.panel, &TrafficPanel::warningChanged);

        CapacityEstimate small; // what the small decoder serves on this machine
        small.requestsPerS = 45;
        small.batch = 16;
        small.batchLimit = 16;
        small.length = 68;
        f.panel.setCapacity(small);
        QCOMPARE(f.panel.rateBox()->value(), 32.0); // 0.7 x 45, two significant figures
        QVERIFY2(f.panel.loadLabel()->text().contains(
                     QStringLiteral("offered 32 req/s ≈ 0.71 of capacity ~45 req/s")),
                 qPrintable(f.panel.loadLabel()->text()));
        QCOMPARE(warning.count(), 0);

        f.panel.rateBox()->setValue(40); // 0.89: near
        QCOMPARE(f.panel.loadLevel(), LoadLevel::Near);
        QVERIFY(f.panel.loadLabel()->text().contains("Near capacity"));
        QVERIFY(!f.panel.warning());

        f.panel.rateBox()->setValue(200); // the old default: 4.4x capacity
        QCOMPARE(f.panel.loadLevel(), LoadLevel::Over);
        QVERIFY(f.panel.warning());
        QCOMPARE(warning.count(), 1);
        QCOMPARE(warning.at(0).at(0).toBool(), true);
        QVERIFY(f.panel.loadLabel()->text().contains("above capacity"));
        QVERIFY(f.panel.loadLabel()->styleSheet().contains("#b00020"));

        // A later measurement keeps the operator's rate.
        small.requestsPerS = 400;
        f.panel.setCapacity(small);
        QCOMPARE(f.panel.rateBox()->value(), 200.0);
        QVERIFY(!f.panel.warning());
        QCOMPARE(warning.count(), 2);
    }

    void growingQueueWarns()
    {
        Fixture f;
        QSignalSpy measured(&f.panel, &TrafficPanel::capacityMeasured);
        QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, 20000);
        f.panel.rateBox()->setValue(10);
        f.panel.start();
        QVERIFY(f.panel.running());
        QSignalSpy warning(&f.panel, &TrafficPanel::warningChanged);
        auto snapshotWithQueue = [](std::size_t depth) {
            auto s = std::make_shared<Snapshot>();
            s->queueDepth = depth;
            return app::SnapshotPtr(s);
        };
        for (std::size_t depth : {5, 40, 80, 120})
            f.panel.observe(snapshotWithQueue(depth));
        QVERIFY(!f.panel.warning()); // three rises: not yet
        f.panel.observe(snapshotWithQueue(200));
        QVERIFY(f.panel.warning());
        QVERIFY2(f.panel.loadLabel()->text().contains("queue keeps growing (200 waiting)"),
                 qPrintable(f.panel.loadLabel()->text()));
        f.panel.observe(snapshotWithQueue(150)); // drained a little: the trend resets
        QVERIFY(!f.panel.warning());
        QCOMPARE(warning.count(), 2);
        f.panel.stop();
    }

    void queueTrend_data()
    {
        QTest::addColumn<QList<int>>("depths");
        QTest::addColumn<bool>("growing");
        QTest::newRow("steady") << QList<int>{40, 40, 40, 40, 40, 40} << false;
        QTest::newRow("four rises") << QList<int>{1, 40, 50, 60, 70} << true;
        QTest::newRow("rises below the threshold") << QList<int>{1, 2, 3, 4, 5} << false;
        QTest::newRow("a dip resets") << QList<int>{1, 40, 50, 45, 60, 70, 80} << false;
        QTest::newRow("rises after a dip") << QList<int>{1, 40, 50, 45, 60, 70, 80, 90} << true;
    }
    void queueTrend()
    {
        QFETCH(QList<int>, depths);
        QFETCH(bool, growing);
        QueueTrend trend(4);
        for (int d : depths)
            trend.add(std::size_t(d));
        QCOMPARE(trend.growing(32), growing);
    }

    void defaultRate_data()
    {
        QTest::addColumn<double>("capacity");
        QTest::addColumn<double>("rate");
        QTest::newRow("unknown") << 0.0 << 0.0;
        QTest::newRow("small decoder") << 45.0 << 32.0;
        QTest::newRow("encoder") << 190.0 << 130.0;
        QTest::newRow("slow") << 1.3 << 0.91;
        QTest::newRow("echo: capped") << 600000.0 << 10000.0;
    }
    void defaultRate()
    {
        QFETCH(double, capacity);
        QFETCH(double, rate);
        QVERIFY2(qAbs(defaultRateFor(capacity) - rate) < 1e-9,
                 qPrintable(QString::number(defaultRateFor(capacity))));
    }
};

QTEST_MAIN(TestTrafficPanel)
#include "test_traffic_panel.moc"
