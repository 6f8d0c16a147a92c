// The console's fleet on real trace stores: the Fleet view
// shows a capacity plan stored by the store API (the windows, the replicas
// chart, each router's minimum, the peak window's replicas) and a simulated
// fleet session's per-replica load (replica_figures); the Advisor's "Plan
// replicas" runs the fleet planner for the recommended config and ends with
// the planner's own answer, stored for the Fleet view; its Cancel keeps the
// windows planned. An autoscaler replay stored like `batchpilot autoscale
// --trace` (a real simulateAutoscale run with cold starts) drawn as replicas
// over time beside the plan's step, its cold-start misses marked.
#include "gui_test_support.h"

#include "ui/advisor_dock.h"
#include "ui/advisor_replicas_panel.h"
#include "ui/duration_spin_box.h"
#include "ui/fleet_view.h"
#include "ui/session_list_model.h"
#include "ui/trace_list_model.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/fleet/autoscale_sim.h"
#include "engine/sim/fleet/fleet_plan.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/store/fleet_store.h"

#include <QBarSet>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QUndoStack>

#include <cmath>
#include <functional>
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

// A step line's value at `x`: the last point at or before it (NaN before the first).
double valueAt(const QXYSeries *s, double x)
{
    double v = std::nan("");
    for (int i = 0; i < s->count() && s->at(i).x() <= x; ++i)
        v = s->at(i).y();
    return v;
}

// A step line of `timeline` drawn with a point only where `of` changes:
// the first, two at each change, the last value held to `endX`.
void checkStep(const QXYSeries *s, const std::vector<ReplicaPoint> &timeline,
               const std::function<int(const ReplicaPoint &)> &of, double unit, double endX)
{
    QVERIFY(!timeline.empty());
    int changes = 0;
    for (std::size_t i = 1; i < timeline.size(); ++i)
        changes += of(timeline[i]) != of(timeline[i - 1]);
    QCOMPARE(s->count(), 2 + 2 * changes);
    QCOMPARE(s->at(0), QPointF(timeline.front().atS / unit, of(timeline.front())));
    QCOMPARE(s->at(s->count() - 1), QPointF(endX, of(timeline.back())));
    for (const ReplicaPoint &p : timeline)
        QCOMPARE(valueAt(s, p.atS / unit), double(of(p)));
}

// 15 min: 5 at 2 req/s, then 10 at 30 req/s (steady arrivals) on servers
// of one 100 ms request at a time: the step needs 3+ replicas.
std::vector<TraceRow> stepTrace()
{
    std::vector<TraceRow> rows;
    for (double t = 0; t < 900; t += 1.0) {
        const int perSecond = t < 300 ? 2 : 30;
        for (int i = 0; i < perSecond; ++i)
            rows.push_back({t + (i + 0.5) / perSecond, 16, 1});
    }
    rows.front().arrivalS = 0;
    return rows;
}

SimulatorOptions deterministic(double costS)
{
    SimulatorOptions o;
    o.config.policy = PolicyKind::None;
    o.config.queueCapacity = 1'000'000;
    o.cost.coef[0] = costS;
    return o;
}

// A run stored as `autoscale --trace` stores it: the document with the run,
// the plan (per 5 min window) and a fixed fleet.
std::int64_t storeRun(TraceStore &store, std::int64_t trace, const AutoscaleRun &run,
                      const AutoscaleSimRequest &r, const nlohmann::json &plan,
                      const nlohmann::json &fixed = {{"replicas", 4}, {"replica_hours", 1.0}, {"cost", 2.0}})
{
    StoredAutoscaleRun stored;
    stored.sourceTraceId = trace;
    stored.slo = describe(r.slo);
    stored.policy = run.policy;
    stored.result = {{"trace", trace},
                     {"rate_scale", 1},
                     {"slo", stored.slo},
                     {"period_s", r.periodS},
                     {"window_s", r.windowS},
                     {"cold_start_s", r.coldStartS},
                     {"run", autoscaleRunJson(run)},
                     {"plan", plan},
                     {"fixed", fixed}};
    return saveAutoscaleRun(store, stored).value();
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
        QCOMPARE(view.autoscaleBox()->count(), 0); // a session has no autoscaler runs
    }

    // Autoscaler replays of a trace: a reactive policy on
    // a step from 2 to 30 req/s with a 120 s cold start (misses while the
    // new replicas start) and without one. The runs are listed, newest
    // first; the picked one's serving, billed and wanted replicas follow its
    // timeline exactly (a point where a line changes), the plan's replicas
    // per window are on the same axes and each window with cold-start
    // misses has a marker at its middle and mean replicas.
    void showsAnAutoscaleRun()
    {
        test::TempStore temp;
        const auto trace = temp.store->addTrace("t", "", TraceFormat::Plain, stepTrace()).value().id;
        const SimulatorOptions model = deterministic(0.1);
        const auto arrivals = loadAutoscaleArrivals(*temp.store, trace, 1, model).value();
        AutoscaleSimRequest r;
        r.config = model.config;
        r.slo.e2eP99 = 2s;
        r.windowS = 60;
        r.periodS = 15;
        r.replicaCostPerHour = 2;
        ReactiveKnobs k;
        k.metric = ScaleMetric::QueueDepth;
        k.target = 5;
        k.bounds = {1, 8};
        r.coldStartS = 0;
        const AutoscaleRun warm = simulateAutoscale(model, arrivals.arrivals, r, k);
        r.coldStartS = 120;
        const AutoscaleRun cold = simulateAutoscale(model, arrivals.arrivals, r, k);
        QVERIFY(warm.status.isOk() && cold.status.isOk());
        QVERIFY(cold.coldMisses > 0);
        const nlohmann::json plan = {{"id", nullptr},         {"window_s", 300}, {"replicas", {1, 4, 4}},
                                     {"replica_hours", 0.75}, {"cost", 1.5},     {"peak_replicas", 4}};
        storeRun(*temp.store, trace, warm, r, plan);
        const std::int64_t id = storeRun(*temp.store, trace, cold, r, plan);

        TraceListModel traces;
        traces.setTraces(temp.store->traces().value());
        FleetView view(temp.store, &traces, nullptr);
        QSignalSpy listed(&view, &FleetView::autoscaleRunsListed);
        QSignalSpy shown(&view, &FleetView::autoscaleRunShown);
        QSignalSpy failed(&view, &FleetView::failed);
        QTRY_COMPARE(shown.count(), 1); // the trace is picked, its newest run loaded
        QCOMPARE(listed.count(), 1);
        QCOMPARE(shown.at(0).at(0).value<std::int64_t>(), id);
        QCOMPARE(view.autoscaleRunId(), std::optional(id));
        QCOMPARE(view.autoscaleBox()->count(), 2);
        const QString headline = QStringLiteral("#%1 %2 — %3% windows met, ")
                                     .arg(id)
                                     .arg(QString::fromStdString(cold.policy))
                                     .arg(100 * cold.windowsMetShare(), 0, 'f', 1);
        QVERIFY2(view.autoscaleBox()->itemText(0).startsWith(headline),
                 qPrintable(view.autoscaleBox()->itemText(0)));

        // x in minutes (a 15 min span), to the end of the run's serving time.
        QCOMPARE(view.autoscaleUnitS(), 60.0);
        QVERIFY(cold.spanS >= 900);
        const double end = cold.spanS / 60;
        checkStep(
            view.autoscaleServingSeries(), cold.timeline, [](const ReplicaPoint &p) { return p.ready; }, 60,
            end);
        QVERIFY(!QTest::currentTestFailed());
        checkStep(
            view.autoscaleBilledSeries(), cold.timeline,
            [](const ReplicaPoint &p) { return p.ready + p.starting + p.draining; }, 60, end);
        QVERIFY(!QTest::currentTestFailed());
        checkStep(
            view.autoscaleWantedSeries(), cold.timeline, [](const ReplicaPoint &p) { return p.wanted; }, 60,
            end);
        QVERIFY(!QTest::currentTestFailed());

        // The plan's step: two points a 5 min window.
        QLineSeries *p = view.autoscalePlanSeries();
        QCOMPARE(p->count(), 6);
        QCOMPARE(p->at(0), QPointF(0, 1));
        QCOMPARE(p->at(1), QPointF(5, 1));
        QCOMPARE(p->at(2), QPointF(5, 4));
        QCOMPARE(p->at(5), QPointF(15, 4));

        // A marker per window with cold-start misses, the count beside it.
        QList<QPointF> markers;
        QList<int> counts;
        for (const AutoscaleWindow &w : cold.windows)
            if (w.coldMisses > 0) {
                markers << QPointF((w.beginS + w.lengthS / 2) / 60, w.meanReplicas);
                counts << int(w.coldMisses);
            }
        QVERIFY(!markers.isEmpty());
        QCOMPARE(view.coldMissSeries()->points(), markers);
        QCOMPARE(view.coldMissCounts(), counts);
        const QString summary = view.autoscaleSummary()->text();
        QVERIFY2(summary.contains(QStringLiteral("Cold-start misses: <b>%1 of %2 misses</b>")
                                      .arg(cold.coldMisses)
                                      .arg(cold.misses)) &&
                     summary.contains(QStringLiteral("<b>%1% of 15 windows met</b>")
                                          .arg(100 * cold.windowsMetShare(), 0, 'f', 1)) &&
                     summary.contains(QStringLiteral("the plan: 0.8 replica-hours (cost 1.50)")) &&
                     summary.contains(QStringLiteral("a fixed fleet of 4: 1.0 replica-hours (cost 2.00)")),
                 qPrintable(summary));

        // The older run (no cold start): no misses during one, no markers.
        QCOMPARE(warm.coldMisses, std::size_t(0));
        view.autoscaleBox()->setCurrentIndex(1);
        QTRY_COMPARE(shown.count() + failed.count(), 2);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
        QCOMPARE(view.coldMissSeries()->count(), 0);
        checkStep(
            view.autoscaleServingSeries(), warm.timeline, [](const ReplicaPoint &p) { return p.ready; }, 60,
            warm.spanS / 60);
        QVERIFY(!QTest::currentTestFailed());
        QCOMPARE(failed.count(), 0);

        // A document without run.timeline: stored newest, listed on refresh,
        // refused with a message and nothing drawn.
        StoredAutoscaleRun bad;
        bad.sourceTraceId = trace;
        bad.slo = "p99 <= 2 s";
        bad.policy = "reactive";
        bad.result = {{"run", {{"policy", "reactive"}, {"windows", nlohmann::json::array()}}}};
        const std::int64_t badId = saveAutoscaleRun(*temp.store, bad).value();
        view.refresh();
        QTRY_COMPARE(failed.count(), 1);
        QCOMPARE(view.autoscaleBox()->count(), 3);
        QCOMPARE(view.autoscaleBox()->currentData().toLongLong(), qlonglong(badId));
        QVERIFY2(failed.at(0).at(0).toString().contains(QStringLiteral("run.timeline")),
                 qPrintable(failed.at(0).at(0).toString()));
        QVERIFY(view.autoscaleSummary()->text().contains(QStringLiteral("run.timeline")));
        QCOMPARE(view.autoscaleServingSeries()->count(), 0);
        QCOMPARE(view.coldMissSeries()->count(), 0);
        QVERIFY(!view.autoscaleRunId());

        // Rows of the wrong type: refused too.
        bad.result = {{"run", {{"windows", nlohmann::json::array()}, {"timeline", {{"x", 1, 0, 0, 1}}}}}};
        saveAutoscaleRun(*temp.store, bad).value();
        view.refresh();
        QTRY_COMPARE(failed.count(), 2);
        QVERIFY2(failed.at(1).at(0).toString().contains(QStringLiteral("malformed")),
                 qPrintable(failed.at(1).at(0).toString()));

        // Back to a good run.
        view.autoscaleBox()->setCurrentIndex(view.autoscaleBox()->findData(qlonglong(id)));
        QTRY_COMPARE(shown.count(), 3);
        QCOMPARE(view.coldMissCounts(), counts);
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

    // A week at a 15 s period where the fleet changes at every decision
    // (40320 rows: each line would be ~80k points, seconds to paint) is
    // drawn as its envelope: at most 4 points per 1/400 of the span, the
    // first and last points and the lowest and highest values kept; the
    // wanted line solid (a dashed one that long paints for seconds).
    void reducesAWeekForDrawing()
    {
        test::TempStore temp;
        const auto trace = temp.store->addTrace("t", "", TraceFormat::Plain, stepTrace()).value().id;
        nlohmann::json timeline = nlohmann::json::array();
        std::mt19937_64 rng(3);
        int lowest = 1 << 20, highest = 0;
        for (int i = 0; i < 40320; ++i) {
            const int ready = 5 + int(rng() % 20);
            lowest = std::min(lowest, ready);
            highest = std::max(highest, ready);
            timeline.push_back({15.0 * (i + 1), ready, int(rng() % 3), 0, ready});
        }
        StoredAutoscaleRun stored;
        stored.sourceTraceId = trace;
        stored.slo = "p99 <= 2 s";
        stored.policy = "reactive";
        stored.result = {
            {"run", {{"timeline", timeline}, {"windows", nlohmann::json::array()}, {"span_s", 604800.0}}}};
        QVERIFY(saveAutoscaleRun(*temp.store, stored));
        TraceListModel traces;
        traces.setTraces(temp.store->traces().value());
        FleetView view(temp.store, &traces, nullptr);
        QSignalSpy shown(&view, &FleetView::autoscaleRunShown);
        QTRY_COMPARE(shown.count(), 1);
        QCOMPARE(view.autoscaleUnitS(), 3600.0);
        for (QLineSeries *s : {view.autoscaleServingSeries(), view.autoscaleWantedSeries()}) {
            QVERIFY2(s->count() > 400 && s->count() <= 4 * 400 + 2, qPrintable(QString::number(s->count())));
            QCOMPARE(s->at(0), QPointF(15.0 / 3600, timeline[0][1].get<double>()));
            QCOMPARE(s->at(s->count() - 1), QPointF(168, timeline.back()[1].get<double>()));
            double low = 1e9, high = 0;
            for (const QPointF &p : s->points()) {
                low = std::min(low, p.y());
                high = std::max(high, p.y());
            }
            QCOMPARE(low, double(lowest));
            QCOMPARE(high, double(highest));
        }
        QCOMPARE(view.autoscaleWantedSeries()->pen().style(), Qt::SolidLine);
        QVERIFY(view.autoscaleBilledSeries()->count() <= 4 * 400 + 2);
    }

    // Not a check: with BP_FLEET_AUTOSCALE_SCREENSHOT=FILE.png, the picture
    // in docs/images/fleet-autoscale.png (tests/ui/take_screenshots.sh): a
    // day with a daily shape (low at 04:00, peak at 16:00) planned per hour
    // by the fleet planner, a reactive policy replayed over it with a 3 min
    // cold start, both stored, the view grabbed.
    void autoscaleScreenshot()
    {
        const QString file = qEnvironmentVariable("BP_FLEET_AUTOSCALE_SCREENSHOT");
        if (file.isEmpty())
            QSKIP("set BP_FLEET_AUTOSCALE_SCREENSHOT=FILE.png to take the screenshot");
        test::TempStore temp;
        std::vector<TraceRow> rows;
        std::mt19937_64 rng(11);
        std::uniform_int_distribution<int> out(4, 24);
        const double peak = qEnvironmentVariableIntValue("BP_FLEET_PEAK_RATE") > 0
                                ? qEnvironmentVariableIntValue("BP_FLEET_PEAK_RATE")
                                : 6;
        for (double t = 0;;) {
            const double hour = t / 3600;
            const double rate = peak * (0.15 + 0.85 * (0.5 - 0.5 * std::cos(2 * M_PI * (hour - 4) / 24)));
            t += std::exponential_distribution<double>(rate)(rng);
            if (t >= 86400)
                break;
            rows.push_back({t, 64, out(rng)});
        }
        const auto trace =
            temp.store->addTrace("a day, daily shape", "", TraceFormat::Plain, rows).value().id;
        Calibration cal = echoCalibration(0.05, 0.5); // one request a batch: 0.55 s each
        const SimulatorOptions model = simulatorOptionsFor(cal, CostNoise::None);
        FleetPlanRequest pr;
        pr.source = {ReplaySource::Kind::Trace, trace};
        pr.slo.e2eP99 = 3s;
        pr.window = 1h;
        pr.config.policy = PolicyKind::None;
        pr.config.queueCapacity = 1'000'000;
        pr.search.maxReplicas = 16;
        pr.search.routers = {RouterPolicy::LeastOutstanding};
        pr.noise = CostNoise::None;
        pr.replicaCostPerHour = 2.5;
        const FleetPlan plan = planFleet(*temp.store, cal, pr).value();
        StoredPlan storedPlan;
        storedPlan.sourceTraceId = trace;
        storedPlan.slo = describe(pr.slo);
        storedPlan.result = planDocument(plan, pr, cal);
        const std::int64_t planId = saveCapacityPlan(*temp.store, storedPlan).value();

        const auto arrivals = loadAutoscaleArrivals(*temp.store, trace, 1, model).value();
        AutoscaleSimRequest r;
        r.config = pr.config;
        r.slo = pr.slo;
        r.replicaCostPerHour = pr.replicaCostPerHour;
        r.coldStartS = 180;
        ReactiveKnobs k;
        k.metric = ScaleMetric::RequestRate; // 1.3 of the 1.8 req/s a replica serves
        k.target = 1.3;
        k.bounds = {1, 16};
        const AutoscaleRun run = simulateAutoscale(model, arrivals.arrivals, r, k);
        QVERIFY(run.status.isOk());
        nlohmann::json replicas = nlohmann::json::array();
        for (const PlannedWindow &w : plan.windows)
            replicas.push_back(w.choice.replicas);
        const nlohmann::json planJson = {{"id", planId},         {"window_s", 3600},
                                         {"replicas", replicas}, {"replica_hours", plan.replicaHours},
                                         {"cost", plan.cost},    {"peak_replicas", plan.peakReplicas}};
        const double fixedHours = plan.peakReplicas * 24.0;
        QVERIFY(storeRun(*temp.store, trace, run, r, planJson,
                         {{"replicas", plan.peakReplicas},
                          {"replica_hours", fixedHours},
                          {"cost", fixedHours * r.replicaCostPerHour}}) > 0);

        TraceListModel traces;
        traces.setTraces(temp.store->traces().value());
        FleetView view(temp.store, &traces, nullptr);
        QSignalSpy planShown(&view, &FleetView::planShown);
        QSignalSpy runShown(&view, &FleetView::autoscaleRunShown);
        view.resize(1500, 1000);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTRY_COMPARE(planShown.count(), 1);
        QTRY_COMPARE(runShown.count(), 1);
        QCoreApplication::processEvents();
        QVERIFY(view.grab().save(file));
        qInfo("%s: %zu arrivals, plan peak %d (%.1f replica-h), run %s: %.1f%% windows met, %.1f replica-h, "
              "%zu of %zu misses during cold starts",
              qPrintable(file), rows.size(), plan.peakReplicas, plan.replicaHours, run.policy.c_str(),
              100 * run.windowsMetShare(), run.replicaHours, run.coldMisses, run.misses);
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
