// The assembled console: it opens with its docks, the status bar names the
// model, device, REST URL (click copies it), database and session, Ctrl+Z
// undoes the last config change through the window's shortcut, layout and
// chart window survive a restart through QSettings, and the demo script
// drives the real widgets.
#include "gui_test_support.h"

#include "ui/advisor_dock.h"
#include "ui/charts_view.h"
#include "ui/control_panel.h"
#include "ui/demo_script.h"
#include "ui/main_window.h"
#include "ui/remote_target_view.h"
#include "ui/status_info.h"
#include "ui/traffic_panel.h"

#include "engine/store/session_recorder.h"

#include <QClipboard>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolButton>
#include <QUndoStack>

using namespace bp;
using namespace bp::ui;

namespace {
struct Console {
    test::TempStore temp;
    std::unique_ptr<Engine> engine = test::makeEchoEngine();
    std::unique_ptr<SessionRecorder> recorder =
        SessionRecorder::start(temp.store, *engine, SessionStart{}).value();
    app::EngineBridge bridge{*engine};
    ConsoleContext context = [&] {
        ConsoleContext c;
        c.bridge = &bridge;
        c.store = temp.store;
        c.sessionId = recorder->sessionId();
        c.databasePath = QString::fromStdString(temp.store->path());
        c.restUrl = QStringLiteral("http://127.0.0.1:8321");
        c.droppedRows = [r = recorder.get()] { return r->sink()->droppedRows(); };
        c.replayBackend = [] { return Result<std::shared_ptr<Backend>>(makeEchoBackend()); };
        c.nvmlLibrary.clear();
        return c;
    }();
    ~Console()
    {
        engine->shutdown(ShutdownMode::Drain);
        (void)recorder->finish();
    }
};

QStringList statusTexts(QMainWindow &w)
{
    QStringList out;
    for (QLabel *l : w.statusBar()->findChildren<QLabel *>())
        if (!l->isHidden())
            out << l->text();
    for (QToolButton *b : w.statusBar()->findChildren<QToolButton *>())
        out << b->text();
    return out;
}
} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        test::isolateSettings();
        QSettings().clear();
    }

    void opensWithDocksAndStatus()
    {
        Console c;
        MainWindow w(c.context);
        w.show();
        QCOMPARE(w.findChildren<QDockWidget *>().size(), 6); // + the Remote target and the Advisor (hidden at first)
        QVERIFY(w.advisor() && !w.advisor()->isVisible());
        w.showAdvisor();
        QVERIFY(w.advisor()->isVisible());
        QVERIFY(w.findChild<RemoteTargetView *>()); // the "Remote target" dock
        const QStringList status = statusTexts(w);
        QVERIFY2(status.contains("Model: builtin:echo"), qPrintable(status.join(" | ")));
        QVERIFY(status.contains("Device: cpu"));
        QVERIFY(status.contains("Data type: float32")); // builtin:echo's; it keeps no KV cache
        QVERIFY(!status.join(" | ").contains("B/token"));
        QVERIFY(status.contains("REST: http://127.0.0.1:8321"));
        QVERIFY(status.contains("DB: t.sqlite"));
        QVERIFY(status.contains(QStringLiteral("Session: %1").arg(c.recorder->sessionId())));
        QVERIFY(w.statusInfo()->droppedLabel()->isHidden()); // nothing dropped
        QTRY_VERIFY(w.chartsView()->redraws() >= 1);
    }

    void restUrlIsCopiedOnClick()
    {
        Console c;
        MainWindow w(c.context);
        w.show();
        QGuiApplication::clipboard()->clear();
        w.statusInfo()->restButton()->click();
        QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("http://127.0.0.1:8321"));
        QVERIFY(w.statusBar()->currentMessage().contains("Copied"));
    }

    void ctrlZUndoesTheLastChange()
    {
        Console c;
        MainWindow w(c.context);
        w.show();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        const BatchingConfig before = c.engine->config();
        w.controlPanel()->maxBatchSizeBox()->setValue(40);
        w.controlPanel()->applyNow();
        QCOMPARE(c.engine->config().maxBatchSize, 40);
        w.controlPanel()->maxBatchSizeBox()->clearFocus(); // Ctrl+Z in a spin box would undo its text
        w.setFocus();
        QTest::keyClick(&w, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(c.engine->config(), before);
        QTest::keyClick(&w, Qt::Key_Y, Qt::ControlModifier);
        QCOMPARE(c.engine->config().maxBatchSize, 40);
    }

    void settingsSurviveARestart()
    {
        {
            Console c;
            MainWindow w(c.context);
            w.show();
            w.chartsView()->setWindow(60);
            w.trafficPanel()->rateBox()->setValue(1234);
            w.close();
        }
        Console c;
        MainWindow w(c.context);
        QCOMPARE(w.chartsView()->window(), 60.0);
        QCOMPARE(w.trafficPanel()->rateBox()->value(), 1234.0);
        QVERIFY(!w.trafficPanel()->running()); // traffic never restarts by itself
    }

    void demoScriptDrivesTheWidgets()
    {
        Console c;
        MainWindow w(c.context);
        w.show();
        const QString shot = c.temp.dir.filePath("shot.png");
        auto *demo =
            new DemoScript(w, QStringLiteral("traffic=300;set=max_batch_size:24;set=max_queue_delay:2ms;"
                                             "window=30;show=compare;show=live;screenshot=%1;traffic=off")
                                  .arg(shot));
        QSignalSpy finished(demo, &DemoScript::finished);
        demo->start();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
        QCOMPARE(c.engine->config().maxBatchSize, 24);
        QCOMPARE(c.engine->config().maxQueueDelay, Duration(std::chrono::milliseconds(2)));
        QCOMPARE(w.chartsView()->window(), 30.0);
        QVERIFY(QFile::exists(shot));
        QCOMPARE(w.undoStack()->count(), 2);
        QTRY_VERIFY(c.engine->snapshot().submitted > 0);
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
