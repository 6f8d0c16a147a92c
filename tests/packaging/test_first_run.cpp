// The console's first run: with an empty trace database the Traces dock
// comes forward with an offer to import the bundled sample trace; one click
// imports it (the list shows it, selected), a second opens the replay
// dialog with first-run settings, and the replay runs. No offer when a
// trace exists, when no sample is installed, or after "Not now". The
// data-path resolver finds the sample in the build tree.
#include "../ui/gui_test_support.h"

#include "app/data_paths.h"
#include "ui/main_window.h"
#include "ui/replay_dialog.h"
#include "ui/replay_runner.h"
#include "ui/session_list_model.h"
#include "ui/trace_importer.h"
#include "ui/trace_list_model.h"
#include "ui/traces_view.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QMenuBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>

using namespace bp;
using namespace bp::ui;

namespace {
struct Console {
    test::TempStore temp;
    std::unique_ptr<Engine> engine = test::makeEchoEngine();
    app::EngineBridge bridge{*engine};
    ConsoleContext context = [&] {
        ConsoleContext c;
        c.bridge = &bridge;
        c.store = temp.store;
        c.databasePath = QString::fromStdString(temp.store->path());
        c.replayBackend = [] { return Result<std::shared_ptr<Backend>>(makeEchoBackend(256, 2048)); };
        c.nvmlLibrary.clear();
        c.sampleTrace = app::sampleTracePath(); // as entry/main.cpp does
        return c;
    }();
    ~Console() { engine->shutdown(ShutdownMode::Drain); }
};

// Waits for the first list of traces to arrive.
bool waitListed(TracesView *view)
{
    QSignalSpy refreshed(view, &TracesView::refreshed);
    return refreshed.wait(20000);
}

QPushButton *buttonNamed(QWidget *parent, const QString &text)
{
    for (QPushButton *b : parent->findChildren<QPushButton *>())
        if (b->text() == text)
            return b;
    return nullptr;
}

QAction *menuAction(QMainWindow &w, const QString &text)
{
    for (QAction *a : w.menuBar()->findChildren<QAction *>())
        if (a->text() == text)
            return a;
    return nullptr;
}
} // namespace

class TestFirstRun : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        test::isolateSettings();
        QSettings().clear();
    }

    void theResolverFindsTheSampleInTheBuildTree()
    {
        const QString sample = app::sampleTracePath();
        QCOMPARE(sample,
                 QStringLiteral(BATCHPILOT_BUILD_DIR "/share/batchpilot/traces/azure_llm_conv_2023.csv"));
        QVERIFY(QFileInfo(sample).size() > 100000);
        QVERIFY(app::findDataFile(QStringLiteral("configs/default.json")).endsWith("/configs/default.json"));
        QVERIFY(app::findDataFile(QStringLiteral("traces/no-such.csv")).isEmpty());
        QVERIFY(app::dataSearchDescription(QStringLiteral("traces/no-such.csv"))
                    .contains(QStringLiteral(BATCHPILOT_BUILD_DIR "/share/batchpilot/traces/no-such.csv")));
    }

    void emptyDatabaseOffersTheSampleThenAReplay()
    {
        Console c;
        QVERIFY(!c.context.sampleTrace.isEmpty());
        MainWindow w(c.context);
        w.show();
        TracesView *view = w.tracesView();
        // The dock is tabbed behind the batch timeline: the offer brings it
        // forward (a dock behind a tab is "visible", but nothing of it shows).
        QTRY_VERIFY(!view->sampleOffer()->visibleRegion().isEmpty());
        QVERIFY(view->sampleImportButton()->isVisible());
        QVERIFY(!view->sampleReplayButton()->isVisible());
        QVERIFY(view->sampleOfferText()->text().contains("CC-BY 4.0"));

        QSignalSpy imported(view->importer(), &TraceImporter::imported);
        QTest::mouseClick(view->sampleImportButton(), Qt::LeftButton);
        QVERIFY(!view->sampleImportButton()->isEnabled()); // no second import while the first runs
        QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 1, 60000);
        QTRY_COMPARE(view->traceModel()->rowCount(), 1);
        const TraceInfo trace = view->traceModel()->traces().front();
        QCOMPARE(trace.rows, 19366ull);
        QCOMPARE(trace.name, std::string("azure_llm_conv_2023"));
        QCOMPARE(QString::fromStdString(trace.sourcePath), c.context.sampleTrace);
        QCOMPARE(view->sampleTraceId(), trace.id);
        // Now the offer is the replay, and the sample is selected.
        QTRY_VERIFY(view->sampleReplayButton()->isVisible());
        QVERIFY(!view->sampleImportButton()->isVisible());
        const QModelIndexList selected = view->traceTable()->selectionModel()->selectedRows();
        QCOMPARE(selected.size(), 1);
        QCOMPARE(selected.front().data(TraceListModel::IdRole).toLongLong(), trace.id);

        // The replay dialog opens with short first-run settings (the first
        // 200 requests, token counts / 8); here 300 on the virtual clock.
        int seededLimit = -1;
        double seededScale = 0;
        QTimer poll;
        poll.setInterval(10);
        connect(&poll, &QTimer::timeout, this, [&] {
            auto *dialog = qobject_cast<ReplayDialog *>(QApplication::activeModalWidget());
            if (!dialog)
                return;
            poll.stop();
            auto *limit = dialog->findChild<QSpinBox *>(QStringLiteral("limit"));
            seededLimit = limit->value();
            seededScale = dialog->options().lengthScale;
            limit->setValue(300);
            dialog->clockBox()->setCurrentIndex(dialog->clockBox()->findData(int(ReplayClock::Virtual)));
            dialog->accept();
        });
        poll.start();
        QSignalSpy finished(view->replayRunner(), &ReplayRunner::finished);
        QTest::mouseClick(view->sampleReplayButton(), Qt::LeftButton); // returns when the dialog closes
        QCOMPARE(seededLimit, 200);
        QCOMPARE(seededScale, 0.125);
        QVERIFY(!view->sampleOffer()->isVisible()); // done with its job
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const ReplayOutcome outcome = finished.front().front().value<ReplayOutcome>();
        QVERIFY(!outcome.cancelled);
        QCOMPARE(outcome.submitted, std::size_t(300));
        QCOMPARE(outcome.completed, std::size_t(300));
        QTRY_VERIFY(view->sessionModel()->rowOf(outcome.sessionId) >= 0);
    }

    void noOfferWhenATraceExists()
    {
        Console c;
        QVERIFY(c.temp.store->importTrace(c.temp.writeCsv(20, 0.01).toStdString()));
        MainWindow w(c.context);
        w.show();
        QVERIFY(waitListed(w.tracesView()));
        QCOMPARE(w.tracesView()->traceModel()->rowCount(), 1);
        QVERIFY(w.tracesView()->sampleOffer()->isHidden());
    }

    void noOfferWithoutAnInstalledSample()
    {
        Console c;
        c.context.sampleTrace.clear();
        MainWindow w(c.context);
        w.show();
        QVERIFY(waitListed(w.tracesView()));
        QCOMPARE(w.tracesView()->traceModel()->rowCount(), 0);
        QVERIFY(w.tracesView()->sampleOffer()->isHidden());
        QAction *menu = menuAction(w, QStringLiteral("Import the &sample trace"));
        QVERIFY(menu);
        QVERIFY(!menu->isEnabled());
    }

    void notNowHidesTheOffer()
    {
        Console c;
        MainWindow w(c.context);
        w.show();
        TracesView *view = w.tracesView();
        QTRY_VERIFY(view->sampleOffer()->isVisible());
        QPushButton *notNow = buttonNamed(view->sampleOffer(), QStringLiteral("Not now"));
        QVERIFY(notNow);
        QTest::mouseClick(notNow, Qt::LeftButton);
        QVERIFY(view->sampleOffer()->isHidden());
        view->refresh(); // stays hidden
        QVERIFY(waitListed(view));
        QVERIFY(view->sampleOffer()->isHidden());
        QVERIFY(
            menuAction(w, QStringLiteral("Import the &sample trace"))->isEnabled()); // still one menu away
    }
};

QTEST_MAIN(TestFirstRun)
#include "test_first_run.moc"
