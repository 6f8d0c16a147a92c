#include "engine/sim/tune/simulated_replay.h"

#include "engine/sim/simulation/simulator.h"
#include "engine/sim/tune/request_overhead.h"
#include "engine/sim/tune/tune_pipeline.h"

#include "engine/store/fleet_store.h"
#include "engine/store/metric_sampler.h"
#include "engine/store/trace_sink.h"
#include "engine/telemetry/host_facts.h"

namespace bp {

namespace {

// The session a simulation records: the replay's, with the calibration,
// the cost noise and (a fleet) the replicas and router.
SessionStart simulationStart(const ReplayOptions &o, const ReplayPlan &plan, const Calibration &cal,
                             CostNoise noise, std::uint64_t seed, bool fleet, int replicas,
                             const RouterOptions &router, int routerQueueLimit)
{
    SessionStart start = replaySessionStart(o, plan);
    start.kind = "simulation";
    start.model = cal.model;
    start.device = cal.device;
    start.host = hostFacts();
    start.replay["calibration"] = {{"id", cal.id},
                                   {"model", cal.model},
                                   {"preset", cal.preset},
                                   {"device", cal.device},
                                   {"threads", cal.threads},
                                   {"source", cal.source},
                                   {"batch_fit_error", toJson(cal.batchError)},
                                   {"iteration_fit_error", toJson(cal.iterationError)}};
    start.replay["cost_noise"] = noise == CostNoise::None   ? "none"
                                 : noise == CostNoise::Mean ? "mean residual"
                                                            : "drawn residual, seed " + std::to_string(seed);
    if (fleet)
        start.replay["fleet"] = {{"replicas", replicas},
                                 {"router", routerPolicyName(router.policy)},
                                 {"load_bound", router.loadBound},
                                 {"router_queue_limit", routerQueueLimit}};
    return start;
}

// Rows the sink's queue must hold for the whole session (a simulation
// outruns any writer; nothing waits on it): its requests, samples and
// batches — a row per step under continuous, at most one per generated
// token and prompt chunk.
std::size_t sessionRows(const ReplayPlan &plan)
{
    const std::size_t seconds =
        plan.requests.empty() ? 0 : std::size_t(toSeconds(plan.requests.back().offset));
    std::size_t rows = 3 * plan.requests.size() + seconds + 1024;
    if (plan.config.policy == PolicyKind::Continuous) {
        const std::size_t chunk = std::size_t(std::max(1, plan.config.continuous.prefillChunk));
        for (const PlannedArrival &r : plan.requests)
            rows += std::size_t(std::max(0, r.maxNewTokens)) + std::size_t(r.inputTokens) / chunk + 1;
    }
    return rows;
}

// A fleet's figures: each replica's rows, and the router's in the session's replay JSON.
Status saveFleet(TraceStore &store, std::int64_t sessionId, const SimOutcome &sim, nlohmann::json replay)
{
    std::vector<StoredReplica> rows;
    for (const ReplicaFigures &f : sim.replicas)
        rows.push_back({f.replica, std::int64_t(f.routed), std::int64_t(f.completed), std::int64_t(f.failed),
                        std::int64_t(f.batches), f.busyS, f.peakOutstanding, f.peakKvTokens,
                        std::int64_t(f.preemptions), std::int64_t(f.outputTokens)});
    if (Status s = saveReplicaFigures(store, sessionId, rows); !s)
        return s;
    replay["fleet"]["router_queued"] = sim.routerQueued;
    replay["fleet"]["router_wait_mean_s"] =
        sim.routerQueued ? toSeconds(sim.routerWaitTotal) / double(sim.routerQueued) : 0.0;
    replay["fleet"]["router_wait_max_s"] = toSeconds(sim.routerWaitMax);
    replay["fleet"]["affinity_routed"] = sim.router.affinity;
    replay["fleet"]["affinity_spilled"] = sim.router.spilled;
    (void)store.setSessionReplay(sessionId, replay);
    return Status::ok();
}

// The replay's outcome from the simulation's (the plan's length changes added).
ReplayOutcome outcomeOf(std::int64_t sessionId, const ReplayPlan &plan, const SimOutcome &sim)
{
    ReplayOutcome out;
    out.sessionId = sessionId;
    out.total = plan.requests.size();
    out.submitted = sim.submitted;
    out.accepted = sim.accepted;
    out.rejected = sim.rejected;
    out.completed = sim.completed;
    out.failed = sim.failed;
    out.clamped = plan.lengths.clamped + sim.clamped;
    out.raised = plan.lengths.raised;
    out.cancelled = sim.cancelled;
    out.config = plan.config;
    return out;
}

} // namespace

SimulatedReplay::SimulatedReplay(std::shared_ptr<TraceStore> store, Calibration calibration)
    : m_store(std::move(store)), m_calibration(std::move(calibration))
{
}

void SimulatedReplay::setCostNoise(CostNoise noise, std::uint64_t seed)
{
    m_noise = noise;
    m_seed = seed;
}

void SimulatedReplay::setFleet(int replicas, RouterOptions router, int routerQueueLimit)
{
    m_replicas = std::max(1, replicas);
    m_router = router;
    m_routerQueueLimit = std::max(0, routerQueueLimit);
}

Result<ReplayOutcome> SimulatedReplay::run(const ReplayOptions &options, const Replayer::ProgressFn &progress,
                                           const std::atomic<bool> *cancel)
{
    if (!m_store)
        return Status(StatusCode::InvalidArgument, "simulated replay needs a trace store");
    const TimePoint wallStart = SteadyClock::now();
    ReplayOptions o = options;
    o.clock = ReplayClock::Simulated;
    const Calibration &cal = m_calibration;
    auto source = planTuneSource(*m_store, o, cal); // stage 1 of the tune pipeline
    if (!source)
        return source.status();
    const ReplayPlan *plan = &source->plan;
    if (plan->config.policy == PolicyKind::Continuous && !cal.generative)
        return Status(StatusCode::InvalidArgument,
                      "policy continuous needs a model with step-level generation; " + cal.model +
                          " has none");

    const bool fleet = m_replicas > 1 || m_routerQueueLimit > 0;
    const SessionStart start =
        simulationStart(o, *plan, cal, m_noise, m_seed, fleet, m_replicas, m_router, m_routerQueueLimit);
    auto sessionId = m_store->startSession(start);
    if (!sessionId)
        return sessionId.status();

    SimulatorOptions so = simulatorOptionsFor(cal, m_noise, m_seed);
    so.config = plan->config;
    so.replicas = m_replicas;
    so.router = m_router;
    so.routerQueueLimit = m_routerQueueLimit;
    // Every row must reach the database.
    TraceSinkOptions sinkOptions = o.recorder.sink;
    sinkOptions.requestSource = "simulation";
    sinkOptions.queueCapacity = std::max(sinkOptions.queueCapacity, sessionRows(*plan));
    auto sink = TraceSink::create(m_store->path(), *sessionId, so.start, sinkOptions);
    if (!sink) {
        SessionEnd end;
        end.loggingError = sink.status().message();
        (void)m_store->endSession(*sessionId, end);
        return sink.status();
    }
    (*sink)->start();
    // A remote server's requests as its clients see them: the calibration's
    // per-request path added, as `tune` adds it (request_overhead.h).
    const Duration overhead = requestOverheadOf(cal);
    RequestOverheadObserver clientSide(sink->get(), overhead);
    if (overhead > Duration::zero())
        so.observer = &clientSide;
    else
        so.observer = sink->get();
    so.onSample = [&](const Snapshot &s) {
        (*sink)->recordSample(sampleOf(s, so.start, (*sink)->droppedRows()));
    };
    so.cancel = cancel;
    ReplayProgress p;
    p.total = plan->requests.size();
    so.onProgress = [&](const SimOutcome &soFar) {
        if (!progress)
            return;
        p.submitted = soFar.submitted;
        p.finished = soFar.rejected + soFar.completed + soFar.failed;
        p.sourceSeconds = plan->requests[soFar.submitted - 1].sourceS;
        progress(p);
    };

    m_interval.reset();
    // A trace's prefix blocks ride on each arrival (PlannedArrival::blocks):
    // prefix-affinity routing keys on them.
    const std::vector<PlannedArrival> arrivals = source->arrivals();
    const SimOutcome sim = Simulator(so).run(arrivals);
    if (const auto spread = fitSpread(cal, plan->config.policy); spread && !sim.cancelled)
        m_interval = simulatedInterval(so, arrivals, *spread);

    (*sink)->stop();
    if (fleet) {
        if (Status s = saveFleet(*m_store, *sessionId, sim, start.replay); !s)
            return s;
    }
    SessionEnd end;
    end.droppedRows = (*sink)->droppedRows();
    end.loggingError = (*sink)->warning();
    if (Status s = m_store->endSession(*sessionId, end); !s)
        return s;

    ReplayOutcome out = outcomeOf(*sessionId, *plan, sim);
    out.warning = (*sink)->warning();
    if (const std::string w = source->extrapolationWarning(cal); !w.empty())
        out.warning += (out.warning.empty() ? "" : "; ") + w;
    out.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    if (progress) {
        p.submitted = out.submitted;
        p.finished = out.rejected + out.completed + out.failed;
        p.sourceSeconds = out.submitted ? plan->requests[out.submitted - 1].sourceS : 0.0;
        progress(p);
    }
    if (out.cancelled) {
        const std::string note = "cancelled after " + std::to_string(out.submitted) + " of " +
                                 std::to_string(out.total) + " requests";
        (void)m_store->setSessionNotes(out.sessionId, o.notes.empty() ? note : o.notes + "; " + note);
    }
    return out;
}

} // namespace bp
