#include "engine/sim/tune/tune_verify.h"

#include "engine/sim/tune/tune_pipeline.h"
#include "engine/sim/tune/tuning_document.h"

#include "engine/store/trace_store.h"

#include <unordered_set>

namespace bp {

TuneSample tuneSampleOf(const StoredRequest &r)
{
    return {.arrival = r.arrival,
            .total = r.total,
            .ttft = r.timeToFirstToken,
            .tpot = r.timePerOutputToken,
            .outputTokens = r.outputTokens,
            .ok = r.status == StatusCode::Ok,
            .unservable = r.status == StatusCode::OutOfRange,
            .id = r.requestId,
            .status = r.status};
}

namespace {

// The config simulated over arrivals [begin, end) of the source.
SimulatedSamples simulateWindow(const TuneSource &source, const Calibration &calibration,
                                const TuneSettings &settings, const BatchingConfig &config, std::size_t begin,
                                std::size_t end)
{
    SimulatorOptions so = simulatorOptionsFor(calibration, settings.noise, settings.noiseSeed);
    so.config = config;
    return simulateSamples(std::move(so), source.arrivals(begin, end));
}

// The samples whose id is in `keep`.
std::vector<TuneSample> only(const std::vector<TuneSample> &samples,
                             const std::unordered_set<std::uint64_t> &keep)
{
    std::vector<TuneSample> out;
    for (const TuneSample &s : samples)
        if (keep.count(s.id))
            out.push_back(s);
    return out;
}

} // namespace

VerifyPlan planVerification(const TuneSource &source, const Calibration &calibration,
                            const TuneSettings &settings, const TuneCandidate &candidate,
                            const VerifyWindowSpec &window)
{
    VerifyPlan plan;
    plan.spec = window;
    const std::vector<Duration> offsets = source.offsets();
    plan.window = selectVerifyWindow(offsets, window);
    plan.sourceRequests = offsets.size();
    plan.config = candidate.config;
    plan.label = candidate.label;
    const SimulatedSamples sim =
        simulateWindow(source, calibration, settings, plan.config, plan.window.begin, plan.window.end);
    plan.predicted = figuresOf(sim.samples, plan.window.size(), settings.slo);
    plan.predicted.meanBatch = sim.meanBatch;
    // The replay's clock starts at the window's first arrival (offset 0, or
    // its own offset for a window at the start); it ends with the last completion.
    const Duration start = plan.window.begin > 0 ? Duration::zero() : plan.window.from;
    const Duration lastArrival = plan.window.span() + start;
    const Duration lastEnd = sim.outcome.end > SimulatorOptions{}.start
                                 ? sim.outcome.end - SimulatorOptions{}.start
                                 : Duration::zero();
    plan.expectedSeconds = toSeconds(std::max(lastArrival, lastEnd));
    return plan;
}

Result<Verification> verifyRecommendation(const std::shared_ptr<TraceStore> &store,
                                          const std::shared_ptr<Backend> &backend, const TuneSource &source,
                                          const Calibration &calibration, const TuneSettings &settings,
                                          const VerifyPlan &plan, const Replayer::ProgressFn &progress,
                                          const std::atomic<bool> *cancel)
{
    if (!store || !backend)
        return Status(StatusCode::InvalidArgument, "verification needs a trace store and the model");
    Verification v;
    v.plan = plan;
    ReplayOptions real = source.replay;
    real.clock = ReplayClock::Real;
    real.config = plan.config;
    real.skip = plan.window.begin;
    real.limit = plan.window.size();
    real.progressInterval = std::chrono::seconds(1);
    real.notes = "tune: verifies " + plan.label + " (" + describe(settings.slo) + ") over " +
                 describe(plan.spec) + " (" + std::to_string(plan.window.size()) + " requests)";
    auto replayed = Replayer(store, backend).run(real, progress, cancel);
    if (!replayed)
        return Status(replayed.status().code(), "verification replay: " + replayed.status().message());
    v.replay = *replayed;
    v.partial = v.replay.cancelled;

    auto rows = store->requests(v.replay.sessionId);
    if (!rows)
        return rows.status();
    std::vector<TuneSample> measured;
    std::unordered_set<std::uint64_t> kept;
    for (const StoredRequest &r : *rows) {
        // Cut short by the cancel, not by the config: left out of both.
        if (v.partial && r.status == StatusCode::ShuttingDown)
            continue;
        measured.push_back(tuneSampleOf(r));
        kept.insert(r.requestId);
    }
    auto batches = store->batches(v.replay.sessionId);
    if (!batches)
        return batches.status();
    std::size_t members = 0;
    for (const StoredBatch &b : *batches)
        members += std::size_t(b.size);

    if (v.partial) {
        // The same arrivals predicted: those sent before the cancel.
        const SimulatedSamples sim =
            simulateWindow(source, calibration, settings, plan.config, plan.window.begin,
                           plan.window.begin + v.replay.submitted);
        v.compared = kept.size();
        v.predicted = figuresOf(only(sim.samples, kept), v.compared, settings.slo);
        v.predicted.meanBatch = sim.meanBatch;
    } else {
        v.compared = plan.window.size();
        v.predicted = plan.predicted;
    }
    v.measured = figuresOf(measured, v.compared, settings.slo);
    v.measured.meanBatch = batches->empty() ? 0 : double(members) / double(batches->size());
    return v;
}

nlohmann::json verificationJson(const Verification &v)
{
    return {{"session_id", v.replay.sessionId},
            {"wall_s", v.replay.wallSeconds},
            {"max_lateness_us", toMicros(v.replay.maxLateness)},
            {"cancelled", v.replay.cancelled},
            {"partial", v.partial},
            {"window",
             {{"spec", formatVerifyWindow(v.plan.spec)},
              {"first", v.plan.window.begin},
              {"requests", v.plan.window.size()},
              {"from_s", toSeconds(v.plan.window.from)},
              {"to_s", toSeconds(v.plan.window.to)}}},
            {"expected_s", v.plan.expectedSeconds},
            {"compared", v.compared},
            {"predicted", tuneFiguresJson(v.predicted)},
            {"measured", tuneFiguresJson(v.measured)}};
}

} // namespace bp
