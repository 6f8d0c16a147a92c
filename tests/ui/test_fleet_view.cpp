// The console's fleet (issue 26 item 5) on real trace stores: the Fleet view
// shows a capacity plan stored by the store API (the windows, the replicas
// chart, each router's minimum, the peak window's replicas) and a simulated
// fleet session's per-replica load (replica_figures); the Advisor's "Plan
// replicas" runs the fleet planner for the recommended config and ends with
// the planner's own answer, stored for the Fleet view; its Cancel keeps the
// windows planned.
#include "gui_test_support.h"

#include "ui/advisor_dock.h"
#include "ui/advisor_replicas_panel.h"
#include "ui/duration_spin_box.h"
#include "ui/fleet_view.h"
#include "ui/session_list_model.h"
#include "ui/trace_list_model.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/fleet/fleet_plan.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/fleet_store.h"

#include <QBarSet>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QUndoStack>

#include <random>

using namespace bp;
using namespace bp::ui;
using namespace std::chrono_literals;

namespace {

// `seconds` of Poisson arrivals at each rate in turn (one second each by default).
std::vector<TraceRow> phases(std::initializer_list<double> rates, double seconds = 1, int outputTokens = 1)
{
    std::vector<TraceRow> rows;
    std::mt19937_64 rng(5);
    double begin = 0;
    for (double rate : rates) {
        std::exponential_distribution<double> gap(rate);
        for (double t = begin + gap(rng); t < begin + seconds; t += gap(rng))
            rows.push_back({t, 16, outputTokens});
        begin += seconds;
    }
    rows.front().arrivalS = 0;
    return rows;
}

// builtin:echo's calibration with a fixed cost per batch and per request.
Calibration echoCalibration(double perBatchS, double perRequestS)
{
    auto echo = makeEchoBackend(256, 2048);
    Calibration c = Calibration::forModel(echo->info(), "", 1);
    c.cost = CostModel{};
    c.cost.coef[0] = perBatchS;
    c.cost.coef[1] = perRequestS;
    c.batchError = {9, 0.02, 0.2, 0.5};
    c.source = "test";
    return c;
}

QString text(QStandardItemModel *m, int row, int column)
{
    return m->index(row, column).data().toString();
}

} // namespace

class TestFleetView : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { test::isolateSettings(); }

    // Two stored plans of a trace (10 s windows at 150 and 450 req/s on a
    // 10 ms server): the newest is shown with the planner's numbers.
    void showsAStoredPlan()
    {
        test::TempStore temp;
        const auto trace =
            temp.store->addTrace("t", "", TraceFormat::Plain, phases({150, 450}, 10)).value().id;
        const Calibration cal = echoCalibration(0.01, 0);
        FleetPlanRequest r;
        r.source = {ReplaySource::Kind::Trace, trace};
        r.slo.e2eP99 = 30ms;
        r.config.policy = PolicyKind::None;
        r.config.queueCapacity = 100000;
        r.search.routers = {RouterPolicy::LeastOutstanding, RouterPolicy::RoundRobin};
        r.noise = CostNoise::None;
        r.replicaCostPerHour = 2;
        auto store = [&](Duration window) {
            r.window = window;
            const FleetPlan plan = planFleet(*temp.store, cal, r).value();
            StoredPlan stored;
            stored.sourceTraceId = trace;
            stored.slo = describe(r.slo);
            stored.result = planDocument(plan, r, cal);
            return std::pair(saveCapacityPlan(*temp.store, stored).value(), plan);
        };
        const auto [olderId, older] = store(20s);
        const auto [id, plan] = store(10s);
        QCOMPARE(older.windows.size(), std::size_t(1));
        QCOMPARE(plan.windows.size(), std::size_t(2));
        const int first = plan.windows[0].choice.replicas, second = plan.windows[1].choice.replicas;
        QVERIFY2(first >= 1 && second > first, qPrintable(QStringLiteral("%1 %2").arg(first).arg(second)));

        TraceListModel traces;
        traces.setTraces(temp.store->traces().value());
        FleetView view(temp.store, &traces, nullptr);
        QSignalSpy shown(&view, &FleetView::planShown);
        QTRY_COMPARE(shown.count(), 1); // the trace is picked, its newest plan loaded
        QCOMPARE(shown.at(0).at(0).value<std::int64_t>(), id);
        QCOMPARE(view.planBox()->count(), 2);
        const QString expected =
            QStringLiteral("plan %1: p99 <= 30ms, 2 windows of 10 s, peak %2 replicas").arg(id).arg(second);
        QVERIFY2(view.planBox()->itemText(0).startsWith(expected), qPrintable(view.planBox()->itemText(0)));

        // The windows table: the planner's replicas, router and requests per window.
        QStandardItemModel *w = view.windowsModel();
        QCOMPARE(w->rowCount(), 2);
        QCOMPARE(w->columnCount(), FleetView::FirstRouterColumn + 2);
        for (int row = 0; row < 2; ++row) {
            const WindowChoice &c = plan.windows[std::size_t(row)].choice;
            QCOMPARE(text(w, row, FleetView::Replicas), QString::number(c.replicas));
            QCOMPARE(text(w, row, FleetView::Requests),
                     QString::number(plan.windows[std::size_t(row)].requests));
            QCOMPARE(text(w, row, FleetView::Router),
                     QString::fromStdString(std::string(routerPolicyName(c.router))));
            QCOMPARE(text(w, row, FleetView::P99), QString::number(c.verdict.p99S, 'f', 3));
            // the router's effect: least-outstanding's own minimum (searched in full)
            QCOMPARE(c.routers.front().first, RouterPolicy::LeastOutstanding);
            QCOMPARE(text(w, row, FleetView::FirstRouterColumn), QString::number(c.routers.front().second));
        }
        QCOMPARE(w->horizontalHeaderItem(FleetView::FirstRouterColumn + 1)->text(),
                 QStringLiteral("round-robin min"));

        // The chart: a step per window (x in seconds for a 20 s trace).
        QLineSeries *s = view.replicasSeries();
        QCOMPARE(s->count(), 4);
        QCOMPARE(s->at(0), QPointF(0, first));
        QCOMPARE(s->at(1), QPointF(10, first));
        QCOMPARE(s->at(2), QPointF(10, second));
        QCOMPARE(s->at(3), QPointF(20, second));
        QCOMPARE(view.routerSeries().size(), 2);
        QCOMPARE(view.routerSeries()[0]->count(), 4);
        QCOMPARE(view.routerSeries()[0]->at(3).y(), double(plan.windows[1].choice.routers.front().second));

        QVERIFY2(view.summaryText()->text().contains(QStringLiteral("Peak <b>%1 replicas</b>").arg(second)) &&
                     view.summaryText()->text().contains(
                         QStringLiteral("Cost %1 in all").arg(plan.cost, 0, 'f', 2)),
                 qPrintable(view.summaryText()->text()));

        // The peak window's replicas as the plan simulated them.
        const PlanVerdict &v = plan.windows[1].choice.verdict;
        QStandardItemModel *reps = view.replicasModel();
        QCOMPARE(reps->rowCount(), second);
        QCOMPARE(view.busySet()->count(), second);
        for (int i = 0; i < second; ++i) {
            QCOMPARE(text(reps, i, FleetView::Routed), QString::number(v.replicaRouted[std::size_t(i)]));
            QCOMPARE(text(reps, i, FleetView::Busy),
                     QStringLiteral("%1%").arg(100 * v.replicaBusy[std::size_t(i)], 0, 'f', 1));
            QCOMPARE(view.busySet()->at(i), 100 * v.replicaBusy[std::size_t(i)]);
        }
        // Another window's replicas on selection.
        view.windowsTable()->selectRow(0);
        QCOMPARE(reps->rowCount(), first);

        // The older plan: one window.
        view.planBox()->setCurrentIndex(1);
        QTRY_COMPARE(shown.count(), 2);
        QCOMPARE(view.plan()->id, olderId);
        QCOMPARE(w->rowCount(), 1);
        QCOMPARE(text(w, 0, FleetView::Replicas), QString::number(older.windows[0].choice.replicas));
    }

    // A simulated replay on 3 replicas (round-robin, 10 ms each, 4 ms
    // apart: nothing queues): 200 requests each, busy 2 s of the session's
    // 2.406 s, peak 1 outstanding; no plan yet.
    void showsAFleetSessionsReplicas()
    {
        test::TempStore temp;
        std::vector<TraceRow> rows;
        for (int i = 0; i < 600; ++i)
            rows.push_back({i * 0.004, 32, 0});
        const auto trace = temp.store->addTrace("t", "", TraceFormat::Plain, rows).value().id;
        SimulatedReplay sim(temp.store, echoCalibration(0.01, 0));
        sim.setCostNoise(CostNoise::None);
        sim.setFleet(3, {RouterPolicy::RoundRobin, 3});
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        BatchingConfig config;
        config.policy = PolicyKind::None;
        config.queueCapacity = 100000;
        o.config = config;
        const auto session = sim.run(o).value().sessionId;

        SessionListModel sessions;
        sessions.setSessions(temp.store->sessions().value());
        FleetView view(temp.store, nullptr, &sessions);
        QSignalSpy listed(&view, &FleetView::plansListed);
        QVERIFY(view.setSource(true, session));
        QTRY_VERIFY(listed.count() >= 1);
        QStandardItemModel *reps = view.replicasModel();
        QCOMPARE(reps->rowCount(), 3);
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(text(reps, i, FleetView::Replica), QString::number(i));
            QCOMPARE(text(reps, i, FleetView::Routed), QStringLiteral("200"));
            QCOMPARE(text(reps, i, FleetView::Completed), QStringLiteral("200"));
            QCOMPARE(text(reps, i, FleetView::Busy), QStringLiteral("83.1%"));
            QCOMPARE(text(reps, i, FleetView::PeakOutstanding), QStringLiteral("1"));
            QVERIFY(std::abs(view.busySet()->at(i) - 100 * 2.0 / 2.406) < 1e-6);
        }
        QVERIFY2(
            view.replicaTitle()->text().contains(QStringLiteral("3 replicas behind the round-robin router")),
            qPrintable(view.replicaTitle()->text()));
        QCOMPARE(view.planBox()->count(), 0);
        QVERIFY(view.summaryText()->text().contains(QStringLiteral("--session %1").arg(session)));
    }

    // The Advisor: a knob search on 1 s at 1000 req/s then 1 s at 3000 req/s
    // (each request costs 1 ms: one replica cannot serve the second), then
    // "Plan replicas" per 1 s window with every router: the planner's own
    // answer for the recommended config, shown and stored.
    void advisorPlansReplicas()
    {
        test::TempStore temp;
        auto engine = test::makeEchoEngine();
        app::EngineBridge bridge(*engine);
        QUndoStack undo;
        const auto trace = temp.store->addTrace("t", "", TraceFormat::Plain, phases({1000, 3000})).value().id;
        QVERIFY(saveCalibration(*temp.store, echoCalibration(2e-3, 1e-3)));
        TraceListModel traces;
        traces.setTraces(temp.store->traces().value());
        AdvisorDock dock(bridge, temp.store, &traces, nullptr, &undo);
        QTRY_VERIFY(dock.calibrationBox()->count() > 0);
        dock.sloKindBox()->setCurrentIndex(0);
        dock.p99Box()->setValueUs(100'000);
        dock.budgetBox()->setValue(20);
        AdvisorReplicasPanel *panel = dock.replicasPanel();
        QVERIFY(!panel->planButton()->isEnabled()); // nothing searched yet
        QSignalSpy searched(&dock, &AdvisorDock::searchFinished);
        dock.runButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(searched.count(), 1, 60000);
        QVERIFY2(dock.result() && dock.result()->tune.recommended, qPrintable(dock.statusText()->text()));
        QVERIFY(panel->planButton()->isEnabled());

        panel->maxReplicasBox()->setValue(8);
        panel->windowBox()->setEditText(QStringLiteral("1s"));
        QSignalSpy finished(panel, &AdvisorReplicasPanel::planFinished);
        QSignalSpy stored(panel, &AdvisorReplicasPanel::planStored);
        panel->planButton()->click();
        QVERIFY(panel->cancelButton()->isEnabled());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY2(panel->fleetPlan().has_value(), qPrintable(panel->resultText()->text()));
        const FleetPlan &got = panel->fleetPlan()->plan;

        // The planner's answer for the same question, asked directly.
        const TuneCandidate &rec = dock.result()->tune.candidates[*dock.result()->tune.recommended];
        FleetPlanRequest r;
        r.source = {ReplaySource::Kind::Trace, trace};
        r.window = 1s;
        r.slo.e2eP99 = 100ms;
        r.config = rec.config;
        r.search.maxReplicas = 8;
        r.search.routers = {RouterPolicy::LeastOutstanding, RouterPolicy::PrefixAffinity,
                            RouterPolicy::LeastKv, RouterPolicy::RoundRobin};
        const FleetPlan want = planFleet(*temp.store, dock.result()->run->calibration, r).value();
        QCOMPARE(got.windows.size(), std::size_t(2));
        QVERIFY(!got.cancelled);
        for (std::size_t i = 0; i < 2; ++i) {
            QCOMPARE(got.windows[i].choice.replicas, want.windows[i].choice.replicas);
            QCOMPARE(got.windows[i].choice.router, want.windows[i].choice.router);
            QCOMPARE(got.windows[i].requests, want.windows[i].requests);
            QCOMPARE(text(panel->windowsModel(), int(i), 2),
                     QString::number(want.windows[i].choice.replicas));
        }
        QVERIFY2(want.windows[1].choice.replicas >= 2,
                 qPrintable(QStringLiteral("%1 for %2")
                                .arg(want.windows[1].choice.replicas)
                                .arg(QString::fromStdString(rec.label))));
        QCOMPARE(got.peakReplicas, want.peakReplicas);
        QVERIFY2(panel->resultText()->text().contains(
                     QStringLiteral("peak <b>%1 replicas</b>").arg(want.peakReplicas)),
                 qPrintable(panel->resultText()->text()));
        QCOMPARE(panel->progressBar()->value(), panel->progressBar()->maximum());

        // Stored like `batchpilot plan`'s, for the Fleet view.
        QCOMPARE(stored.count(), 1);
        const auto headlines = capacityPlanHeadlines(*temp.store, std::nullopt, trace).value();
        QCOMPARE(headlines.size(), std::size_t(1));
        QCOMPARE(headlines[0].id, panel->fleetPlan()->planId);
        QCOMPARE(headlines[0].peakReplicas, want.peakReplicas);
        QCOMPARE(headlines[0].windows, 2);
    }

    // Cancel: 2 s in 1 ms windows is 2000 windows to plan; cancelled as it
    // starts, the plan keeps the windows done (fewer), marked cancelled.
    void advisorReplicasCancel()
    {
        test::TempStore temp;
        auto engine = test::makeEchoEngine();
        app::EngineBridge bridge(*engine);
        QUndoStack undo;
        temp.store->addTrace("t", "", TraceFormat::Plain, phases({1000, 3000})).value();
        QVERIFY(saveCalibration(*temp.store, echoCalibration(2e-3, 1e-3)));
        TraceListModel traces;
        traces.setTraces(temp.store->traces().value());
        AdvisorDock dock(bridge, temp.store, &traces, nullptr, &undo);
        QTRY_VERIFY(dock.calibrationBox()->count() > 0);
        dock.sloKindBox()->setCurrentIndex(0);
        dock.p99Box()->setValueUs(100'000);
        dock.budgetBox()->setValue(10);
        QSignalSpy searched(&dock, &AdvisorDock::searchFinished);
        dock.runButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(searched.count(), 1, 60000);
        AdvisorReplicasPanel *panel = dock.replicasPanel();
        panel->windowBox()->setEditText(QStringLiteral("1ms"));
        QSignalSpy finished(panel, &AdvisorReplicasPanel::planFinished);
        panel->planButton()->click();
        QVERIFY(panel->cancelButton()->isEnabled());
        panel->cancelButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY(panel->fleetPlan().has_value());
        const FleetPlan &p = panel->fleetPlan()->plan;
        QVERIFY(p.cancelled);
        std::size_t done = 0;
        for (const PlannedWindow &w : p.windows)
            done += w.choice.done;
        QVERIFY2(p.windows.size() >= 1900 && done < p.windows.size(), qPrintable(QString::number(done)));
        QVERIFY(panel->resultText()->text().startsWith(QStringLiteral("Cancelled")));
        QVERIFY(panel->planButton()->isEnabled());
    }

    // Before a search there is nothing to plan: the reason is shown, nothing runs.
    void advisorReplicasNeedASearch()
    {
        test::TempStore temp;
        AdvisorReplicasPanel panel(temp.store);
        panel.plan(0);
        QVERIFY(panel.resultText()->text().startsWith(QStringLiteral("Run a search first")));
        QVERIFY(!panel.running());
    }
};

QTEST_MAIN(TestFleetView)
#include "test_fleet_view.moc"
