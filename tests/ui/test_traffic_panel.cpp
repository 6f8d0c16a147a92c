// TrafficPanel drives a real engine: starting it produces requests (the
// engine's counters rise), the lengths, arrival process and max_new_tokens
// chosen reach the requests, lengths can come from an imported trace, edits
// while running restart the load, and stop stops it.
#include "gui_test_support.h"

#include "ui/trace_list_model.h"
#include "ui/traffic_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
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
        QCOMPARE(s.outputTokens, 4 * s.completed); // echo returns max_new_tokens of its input
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
};

QTEST_MAIN(TestTrafficPanel)
#include "test_traffic_panel.moc"
