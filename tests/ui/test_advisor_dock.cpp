// The Advisor dock against a real engine (builtin:echo) and a real trace
// store: a search on a small imported trace with a stored calibration fills
// the table and the Pareto chart; Cancel stops a search that would run for
// a long time; "Apply live" sets the candidate's searched knobs on the
// engine as one change with origin "advisor" (undoable), leaves the other
// knobs alone and hands the charts the prediction; without a calibration
// the dock says to calibrate first and does not run.
#include "gui_test_support.h"

#include "ui/advisor_candidates_model.h"
#include "ui/advisor_chart.h"
#include "ui/advisor_dock.h"
#include "ui/advisor_verify_panel.h"
#include "ui/charts_view.h"
#include "ui/duration_spin_box.h"
#include "ui/time_chart_view.h"
#include "ui/trace_list_model.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/store/tuning_store.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QTableView>
#include <QUndoStack>

using namespace bp;
using namespace bp::ui;

class TestAdvisorDock : public QObject {
    Q_OBJECT

    struct Fixture {
        test::TempStore temp;
        std::unique_ptr<Engine> engine = test::makeEchoEngine();
        app::EngineBridge bridge{*engine};
        QUndoStack undo;
        TraceListModel traces;
        std::unique_ptr<AdvisorDock> dock;

        // `rows` requests `gapS` apart; with a calibration of echo whose
        // cost is known: 0.4 ms + 0.2 ms per request + 2 µs per token.
        explicit Fixture(int rows, double gapS, bool calibrated = true)
        {
            auto imported = temp.store->importTrace(temp.writeCsv(rows, gapS).toStdString());
            if (!imported)
                qFatal("import: %s", imported.status().message().c_str());
            traces.setTraces(temp.store->traces().value());
            if (calibrated) {
                Calibration c = Calibration::forModel(engine->model(), "", 1);
                c.cost.coef[0] = 0.4e-3;
                c.cost.coef[1] = 0.2e-3;
                c.cost.coef[2] = 2e-6;
                c.batchError = {9, 0.02, 0.2, 0.5};
                c.source = "test";
                if (!saveCalibration(*temp.store, c))
                    qFatal("cannot store the calibration");
            }
            dock = std::make_unique<AdvisorDock>(bridge, temp.store, &traces, nullptr, &undo);
        }

        void waitForCalibrations()
        {
            QSignalSpy listed(dock.get(), &AdvisorDock::calibrationsListed);
            QTRY_VERIFY(listed.count() > 0 || dock->calibrationBox()->count() > 0);
        }

        // Runs the search to its end (QTRY: no sleeps).
        void search(int budget)
        {
            waitForCalibrations();
            dock->budgetBox()->setValue(budget);
            QSignalSpy done(dock.get(), &AdvisorDock::searchFinished);
            QVERIFY(dock->runButton()->isEnabled());
            dock->runButton()->click();
            QVERIFY(dock->cancelButton()->isEnabled());
            QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
        }
    };

private slots:
    void initTestCase() { test::isolateSettings(); }

    void searchFillsTheTableAndTheChart()
    {
        Fixture f(300, 0.004);
        QAbstractItemModelTester tester(f.dock->candidates(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(f.dock->sourceBox()->count(), 1);
        f.dock->p99Box()->setValueUs(20'000);
        f.search(40);
        QVERIFY2(f.dock->result().has_value(), qPrintable(f.dock->statusText()->text()));
        const TuneResult &r = f.dock->result()->tune;
        QVERIFY(!r.cancelled);
        QVERIFY(r.recommended.has_value());
        QVERIFY(r.candidates.size() >= 10);
        QCOMPARE(f.dock->result()->requests, std::size_t(300));
        QVERIFY(f.dock->result()->tuningId > 0); // stored as `batchpilot tune` stores one
        // the prediction with the fit's spread, and how to narrow it
        QVERIFY2(f.dock->summaryText()->text().contains(QStringLiteral(
                     "with the fit's spread (every cost x0.80 to x1.20: its rms error): p50 ")) &&
                     f.dock->summaryText()->text().contains(QStringLiteral("--session SESSION")),
                 qPrintable(f.dock->summaryText()->text()));

        // The table: the best candidates, the recommendation first, each a
        // config with its predicted figures.
        AdvisorCandidatesModel *m = f.dock->candidates();
        QCOMPARE(m->rowCount(),
                 std::min<int>(int(r.candidates.size()), AdvisorCandidatesModel::kDefaultRows));
        QCOMPARE(m->candidateAt(0), int(*r.recommended));
        const TuneCandidate &rec = r.candidates[*r.recommended];
        QVERIFY(m->index(0, AdvisorCandidatesModel::Config)
                    .data()
                    .toString()
                    .startsWith(QString::fromStdString(rec.label)));
        QCOMPARE(m->index(0, AdvisorCandidatesModel::Throughput).data().toString(),
                 QString::number(rec.figures.throughputPerS, 'f', 1));
        QCOMPARE(m->index(0, AdvisorCandidatesModel::SloMet).data().toString(),
                 rec.figures.sloMet ? QStringLiteral("yes") : QStringLiteral("no"));
        QVERIFY(rec.figures.sloMet); // echo at this cost meets 20 ms easily
        // Ranked: no row is better than the one above it (after the first).
        for (int row = 2; row < m->rowCount(); ++row)
            QVERIFY(!better(m->candidate(row)->figures, m->candidate(row)->config,
                            m->candidate(row - 1)->figures, m->candidate(row - 1)->config,
                            TuneObjective::Goodput));

        // The chart: every candidate with a finite p99, the front, the star
        // on the recommendation, the bound at 20 ms.
        AdvisorChart *chart = f.dock->chart();
        QVERIFY(chart->candidateSeries()->count() > 0);
        QVERIFY(chart->frontSeries()->count() >= 1);
        QCOMPARE(chart->recommendedSeries()->count(), 1);
        QCOMPARE(chart->recommendedSeries()->at(0).x(), rec.figures.p99S * 1e3);
        QCOMPARE(chart->boundSeries()->at(0).x(), 20.0);
        QVERIFY(f.dock->summaryText()->text().contains(QString::fromStdString(rec.label).toHtmlEscaped()));
        QVERIFY(f.dock->applyButton()->isEnabled());
        QVERIFY(!f.dock->cancelButton()->isEnabled());
        QCOMPARE(f.dock->progressBar()->value(), 100);
    }

    void cancelStopsTheSearch()
    {
        // A search that would simulate thousands of configs over 4000
        // arrivals; cancelled as soon as it reports progress.
        Fixture f(4000, 0.001);
        f.waitForCalibrations();
        f.dock->budgetBox()->setValue(5000);
        QSignalSpy done(f.dock.get(), &AdvisorDock::searchFinished);
        connect(f.dock->search(), &AdvisorSearch::progressChanged, f.dock.get(), [&f](int done) {
            if (done > 0)
                f.dock->cancelButton()->click();
        });
        f.dock->runButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
        QVERIFY(f.dock->result().has_value());
        const TuneResult &r = f.dock->result()->tune;
        QVERIFY(r.cancelled);
        QVERIFY2(r.candidates.size() < 500, qPrintable(QString::number(r.candidates.size())));
        QVERIFY(f.dock->statusText()->text().startsWith(QStringLiteral("Cancelled")));
        QVERIFY(!f.dock->search()->running());
        QVERIFY(f.dock->runButton()->isEnabled());
    }

    // "Verify for real": the window's arrivals replayed on the served model
    // (echo) under the recommendation, its expected duration said first,
    // predicted vs measured shown and stored with the search.
    void verifyReplaysTheWindow()
    {
        Fixture f(300, 0.004);
        f.dock->p99Box()->setValueUs(20'000);
        f.search(30);
        QVERIFY(f.dock->result().has_value());
        AdvisorVerifyPanel *panel = f.dock->verifyPanel();
        QVERIFY(panel->verifyButton()->isEnabled());
        // the default window holds the whole 1.2 s trace: said up front
        QVERIFY2(
            panel->expectedText()->text().contains(QStringLiteral("300 of 300 requests; expected about")),
            qPrintable(panel->expectedText()->text()));
        panel->windowBox()->setEditText(QStringLiteral("first:400ms"));
        QVERIFY2(panel->expectedText()->text().contains(QStringLiteral("100 of 300 requests")),
                 qPrintable(panel->expectedText()->text()));
        QSignalSpy started(f.dock->search(), &AdvisorSearch::verificationStarted);
        QSignalSpy finished(f.dock.get(), &AdvisorDock::verificationFinished);
        panel->verifyButton()->click();
        QVERIFY(f.dock->cancelButton()->isEnabled());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(started.count(), 1);
        QVERIFY2(panel->verification().has_value(), qPrintable(f.dock->statusText()->text()));
        const Verification &v = panel->verification()->verification;
        QVERIFY(!v.partial);
        QCOMPARE(v.compared, std::size_t(100));
        QCOMPARE(v.measured.completed, std::size_t(100));
        QVERIFY(panel->resultText()->text().contains(QStringLiteral("measured")));
        QVERIFY(f.dock->statusText()->text().startsWith(QStringLiteral("Verified over 100 requests")));
        const auto stored = tuningsForSession(*f.temp.store, v.replay.sessionId).value();
        QCOMPARE(stored.size(), std::size_t(1));
        QCOMPARE(stored[0].id, f.dock->result()->tuningId);
        QCOMPARE(stored[0].result["verification"]["window"]["spec"].get<std::string>(),
                 std::string("first:400ms"));
    }

    // Cancel during the verification keeps what was verified: shown and
    // stored, marked partial.
    void cancelKeepsThePartialVerification()
    {
        Fixture f(3000, 0.002); // 6 s of arrivals
        f.search(15);
        QVERIFY(f.dock->result().has_value());
        AdvisorVerifyPanel *panel = f.dock->verifyPanel();
        panel->windowBox()->setEditText(QStringLiteral("all"));
        QSignalSpy finished(f.dock.get(), &AdvisorDock::verificationFinished);
        connect(f.dock->search(), &AdvisorSearch::verificationProgress, f.dock.get(), [&f](int done) {
            if (done > 0)
                f.dock->cancelButton()->click();
        });
        panel->verifyButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY2(panel->verification().has_value(), qPrintable(f.dock->statusText()->text()));
        const Verification &v = panel->verification()->verification;
        QVERIFY(v.partial);
        QVERIFY(v.replay.submitted < 3000);
        QVERIFY(panel->resultText()->text().contains(QStringLiteral("Partial")));
        QVERIFY2(f.dock->statusText()->text().contains(QStringLiteral("marked partial")),
                 qPrintable(f.dock->statusText()->text()));
        const auto stored = tuningsForSession(*f.temp.store, v.replay.sessionId).value();
        QCOMPARE(stored.size(), std::size_t(1));
        QCOMPARE(stored[0].result["verification"]["partial"].get<bool>(), true);
        QVERIFY(f.dock->runButton()->isEnabled());
    }

    // A calibration measured on a busy machine: the dock says so, and how to
    // get a clean one.
    void aDisturbedCalibrationIsFlagged()
    {
        Fixture f(50, 0.01, false);
        Calibration c = Calibration::forModel(f.engine->model(), "", 1);
        c.cost.coef[0] = 0.4e-3;
        c.runSpread = 0.6;
        c.source = "profile (quick)";
        QVERIFY(saveCalibration(*f.temp.store, c));
        f.dock->refreshCalibrations();
        QTRY_VERIFY(f.dock->calibrationBox()->count() == 1);
        QVERIFY(f.dock->calibrationBox()->itemText(0).contains(QStringLiteral("disturbed")));
        QTRY_VERIFY(f.dock->calibrationNote()->isVisibleTo(f.dock.get()));
        const QString note = f.dock->calibrationNote()->text();
        QVERIFY2(note.contains(QStringLiteral("disturbed by other work")) &&
                     note.contains(QStringLiteral("batchpilot calibrate --model builtin:echo")),
                 qPrintable(note));
    }

    void applyLiveIsAnAdvisorChange()
    {
        Fixture f(300, 0.004);
        // A knob the search does not move, set by the operator: it stays.
        ConfigPatch capacity = ConfigPatch::diff(f.engine->config(), [&] {
            BatchingConfig c = f.engine->config();
            c.queueCapacity = 777;
            return c;
        }());
        QVERIFY(f.bridge.applyPatch(capacity, QStringLiteral("gui")));
        f.search(40);
        QVERIFY(f.dock->result().has_value());

        // The candidate in row 1 (not the recommendation) is selected.
        QVERIFY(f.dock->candidates()->rowCount() >= 2);
        f.dock->table()->selectRow(1);
        const TuneCandidate chosen = *f.dock->candidates()->candidate(1);
        QSignalSpy applied(&f.bridge, &app::EngineBridge::configApplied);
        QSignalSpy predicted(f.dock.get(), &AdvisorDock::predictionApplied);
        f.dock->applyButton()->click();
        QCOMPARE(applied.count(), 1);
        QCOMPARE(predicted.count(), 1);

        const Snapshot s = f.engine->snapshot();
        QCOMPARE(s.configHistory.back().origin, std::string(kAdvisorOrigin));
        QCOMPARE(s.configHistory.back().origin, std::string("advisor"));
        const BatchingConfig &now = f.engine->config();
        QCOMPARE(now.policy, chosen.config.policy);
        QCOMPARE(now.instances, chosen.config.instances);
        QCOMPARE(now.maxBatchSize, chosen.config.maxBatchSize);
        QCOMPARE(now.maxQueueDelay, chosen.config.maxQueueDelay);
        QCOMPARE(now.queueCapacity, 777);
        QCOMPARE(f.undo.count(), 1);

        const auto p = predicted.front().front().value<AdvisorPrediction>();
        QCOMPARE(p.configVersion, s.configVersion);
        QCOMPARE(p.label, QString::fromStdString(chosen.label));
        QCOMPARE(p.p99Ms, chosen.figures.p99S * 1e3);

        // The live charts: a marker for the change (origin advisor) and the
        // predicted p99 as a reference line from it.
        ChartsView charts;
        charts.addSnapshot(std::make_shared<const Snapshot>(s));
        charts.setPrediction(p.configVersion, p.label, p.p99Ms, p.ttftP99Ms, p.tpotP99Ms);
        QSignalSpy redrawn(&charts, &ChartsView::redrawn);
        charts.show();
        QTRY_VERIFY(redrawn.count() > 0);
        QCOMPARE(charts.history().markers().back().origin, QStringLiteral("advisor"));
        QLineSeries *reference = nullptr;
        for (QAbstractSeries *series : charts.latencyChart()->chart()->series())
            if (series->name().startsWith(QStringLiteral("predicted p99")))
                reference = static_cast<QLineSeries *>(series);
        QVERIFY(reference);
        QVERIFY(reference->isVisible());
        QCOMPARE(reference->count(), 2);
        QCOMPARE(reference->at(0).y(), p.p99Ms);

        // Undo restores the searched knobs that changed, origin gui (undo).
        f.undo.undo();
        QCOMPARE(f.engine->snapshot().configHistory.back().origin, std::string("gui (undo)"));
        QCOMPARE(f.engine->config().queueCapacity, 777);
    }

    // A mnemonic label without a buddy shows its '&' literally ("Spee&d").
    void everyMnemonicLabelHasABuddy()
    {
        Fixture f(10, 0.01, false);
        int mnemonics = 0;
        for (const QLabel *label : f.dock->findChildren<QLabel *>()) {
            const QString text = label->text();
            if (!text.contains(QLatin1Char('&')) || label->textFormat() == Qt::RichText)
                continue;
            ++mnemonics;
            QVERIFY2(label->buddy(), qPrintable(text));
        }
        QVERIFY(mnemonics >= 5);
    }

    // A bound on a whole decade (p99 <= 10 ms) with every candidate above
    // it: the x axis still starts below the bound and ends above the last
    // point, so neither sits on the chart's edge.
    void boundOnADecadeIsInsideTheAxis()
    {
        AdvisorChart chart;
        TuneResult result;
        for (double p99 : {0.010, 0.025, 0.100}) {
            TuneCandidate c;
            c.figures.p99S = p99;
            c.figures.throughputPerS = 100 / (p99 * 1e3);
            result.candidates.push_back(c);
        }
        result.pareto = paretoFront(result.candidates);
        TuneSlo slo;
        slo.e2eP99 = std::chrono::milliseconds(10);
        chart.setResult(result, slo);
        const auto axes = chart.chart()->axes(Qt::Horizontal);
        QCOMPARE(axes.size(), 1);
        const auto *x = qobject_cast<const QLogValueAxis *>(axes.front());
        QVERIFY(x);
        QVERIFY2(x->min() < 10 && x->max() > 100,
                 qPrintable(QStringLiteral("%1 .. %2").arg(x->min()).arg(x->max())));
        QCOMPARE(chart.boundSeries()->at(0).x(), 10.0);
    }

    // The source's reusable-prefix share shows before any search.
    void showsTheSourcesReusablePrefixShare()
    {
        Fixture f(50, 0.01, false);
        QSignalSpy shown(f.dock.get(), &AdvisorDock::prefixShareShown);
        QTRY_VERIFY(shown.count() > 0);
        QVERIFY2(f.dock->prefixShareText()->text().contains(QStringLiteral("none")),
                 qPrintable(f.dock->prefixShareText()->text()));
        // Blocks of 512: row 2 reuses 2 of its 3 blocks (1024 of 1100 tokens), row 1 none.
        std::vector<TraceRow> rows = {{0, 1500, 1}, {0.1, 1100, 1}};
        auto known = f.temp.store->addTrace("known reuse", "", TraceFormat::Mooncake, rows, 0,
                                            {{1, 2, 3}, {1, 2, 4}}, 512);
        QVERIFY(known);
        f.traces.setTraces(f.temp.store->traces().value());
        const int index = f.dock->sourceBox()->findData(qlonglong(known->id));
        QVERIFY(index >= 0);
        shown.clear();
        f.dock->sourceBox()->setCurrentIndex(index);
        QTRY_VERIFY(shown.count() > 0);
        const QString text = f.dock->prefixShareText()->text();
        QVERIFY2(text.contains(QStringLiteral("39.4%")) && text.contains(QStringLiteral("1024 of 2600")),
                 qPrintable(text));
    }

    void withoutACalibrationItSaysCalibrateFirst()
    {
        Fixture f(50, 0.01, false);
        f.waitForCalibrations();
        QTRY_VERIFY(f.dock->calibrationNote()->isVisibleTo(f.dock.get()));
        QVERIFY(f.dock->calibrationNote()->text().contains(QStringLiteral("calibrate first")));
        QVERIFY(f.dock->calibrationNote()->text().contains(
            QStringLiteral("batchpilot calibrate --model builtin:echo")));
        QVERIFY(!f.dock->runButton()->isEnabled());
        auto r = f.dock->request();
        QVERIFY(!r);
        QVERIFY(QString::fromStdString(r.status().message()).contains(QStringLiteral("calibrate first")));
        f.dock->run(); // refused with the reason, nothing starts
        QVERIFY(!f.dock->search()->running());
        QVERIFY(f.dock->statusText()->text().contains(QStringLiteral("calibrate first")));
    }
};

QTEST_MAIN(TestAdvisorDock)
#include "test_advisor_dock.moc"
