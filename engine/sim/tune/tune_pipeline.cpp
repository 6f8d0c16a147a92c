#include "engine/sim/tune/tune_pipeline.h"
#include "engine/sim/tune/request_overhead.h"

#include "engine/workload/prefix_tokens.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/tune/tuning_document.h"

#include "engine/store/trace_store.h"
#include "engine/store/tuning_store.h"

#include <algorithm>

namespace bp {

std::vector<PlannedArrival> TuneSource::arrivals(std::size_t begin, std::size_t end) const
{
    end = std::min(end, plan.requests.size());
    std::vector<PlannedArrival> out;
    if (begin >= end)
        return out;
    out.reserve(end - begin);
    // As ReplayOptions::skip: offsets from the first arrival sent when a window is left out before it.
    const Duration origin = begin > 0 ? plan.requests[begin].offset : Duration::zero();
    for (std::size_t i = begin; i < end; ++i) {
        const PlannedArrival &r = plan.requests[i];
        PlannedArrival a;
        a.offset = r.offset - origin;
        a.inputTokens = r.inputTokens;
        a.maxNewTokens = r.maxNewTokens;
        a.id = i - begin + 1;
        a.blocks = r.blocks;
        a.blockTokens = plan.blockTokens;
        a.conversation = r.conversation;
        a.turn = r.turn;
        a.think = r.think;
        // A turn whose previous one is outside the window starts open loop.
        a.previous = r.previous >= std::ptrdiff_t(begin) ? r.previous - std::ptrdiff_t(begin) : -1;
        a.next = r.next >= 0 && std::size_t(r.next) < end ? r.next - std::ptrdiff_t(begin) : -1;
        out.push_back(std::move(a));
    }
    return out;
}

PrefixShare TuneSource::prefixShare() const
{
    std::vector<TraceRow> rows;
    std::vector<PrefixBlocks> ids;
    rows.reserve(plan.requests.size());
    bool blocks = false;
    for (const PlannedArrival &r : plan.requests) {
        TraceRow row;
        row.inputTokens = r.inputTokens;
        row.outputTokens = r.maxNewTokens;
        row.conversation = r.conversation;
        row.turn = r.turn;
        rows.push_back(row);
        blocks = blocks || !r.blocks.empty();
    }
    if (blocks)
        for (const PlannedArrival &r : plan.requests)
            ids.push_back(r.blocks);
    return bp::prefixShare(rows, ids, plan.blockTokens > 0 ? plan.blockTokens : kPrefixBlockTokens);
}

namespace {

// One field of every planned request.
template <class Field> auto column(const ReplayPlan &plan, Field PlannedArrival::*field)
{
    std::vector<Field> out;
    out.reserve(plan.requests.size());
    for (const PlannedArrival &r : plan.requests)
        out.push_back(r.*field);
    return out;
}

} // namespace

std::vector<int> TuneSource::inputLengths() const
{
    return column(plan, &PlannedArrival::inputTokens);
}

std::vector<Duration> TuneSource::offsets() const
{
    return column(plan, &PlannedArrival::offset);
}

Result<std::string> describeSource(const TraceStore &store, const ReplaySource &source)
{
    if (source.kind == ReplaySource::Kind::Trace) {
        auto t = store.trace(source.id);
        if (!t)
            return t.status();
        return "trace " + std::to_string(t->id) + " '" + t->name + "'";
    }
    auto session = store.session(source.id);
    if (!session)
        return session.status();
    return "session " + std::to_string(session->id);
}

std::string TuneSource::extrapolationWarning(const Calibration &calibration) const
{
    if (beyondCalibration == 0)
        return {};
    return std::to_string(beyondCalibration) + " of the " + std::to_string(plan.requests.size()) +
           " arrivals are longer than calibration " + std::to_string(calibration.id) + " measured (" +
           std::to_string(calibration.measuredLength) +
           " tokens): their cost is extrapolated from the fit and can be several times off (a cache cliff); "
           "calibrate at those lengths (the full grid, or --session ID of a replay of this trace) to trust "
           "them";
}

Result<TuneSource> planTuneSource(const TraceStore &store, const ReplayOptions &options,
                                  const Calibration &calibration)
{
    TuneSource s;
    s.replay = options;
    s.replay.clock = ReplayClock::Simulated;
    auto name = describeSource(store, options.source);
    if (!name)
        return name.status();
    s.name = std::move(*name);
    auto plan = planReplay(store, s.replay, calibration.modelInfo());
    if (!plan)
        return plan.status();
    s.plan = std::move(*plan);
    const auto &rs = s.plan.requests;
    s.spanS = rs.size() > 1 ? toSeconds(rs.back().offset - rs.front().offset) : 0;
    s.offeredPerS = s.spanS > 0 ? double(rs.size()) / s.spanS : 0;
    if (calibration.measuredLength > 0)
        s.beyondCalibration = std::size_t(std::count_if(rs.begin(), rs.end(), [&](const PlannedArrival &r) {
            return r.inputTokens > calibration.measuredLength;
        }));
    return s;
}

OutputKind outputKindOf(const Calibration &c)
{
    return c.model == "builtin:echo" ? OutputKind::Echo
           : c.generative            ? OutputKind::Generated
                                     : OutputKind::None;
}

SimulatorOptions simulatorOptionsFor(const Calibration &c, CostNoise noise, std::uint64_t seed)
{
    SimulatorOptions so;
    so.limits = c.modelInfo().limits();
    so.cost = c.cost;
    so.output = outputKindOf(c);
    so.positions = c.positions;
    so.costNoise = noise;
    so.noiseSeed = seed;
    return so;
}

Result<Calibration> chooseCalibration(const TraceStore &store, const CalibrationChoice &choice)
{
    if (!choice.ref.empty())
        return resolveCalibration(store, choice.ref);
    return latestCalibration(store, choice.model, choice.preset, choice.device, choice.threads, choice.dtype);
}

TuneWorkload tuneWorkloadFor(const TuneSource &source, const Calibration &calibration,
                             const TuneSettings &settings)
{
    TuneWorkload workload;
    workload.arrivals = source.arrivals();
    workload.model = simulatorOptionsFor(calibration, settings.noise, settings.noiseSeed);
    workload.requestOverhead = requestOverheadOf(calibration);
    return workload;
}

Result<TuneResult> searchConfigs(const TuneSource &source, const Calibration &calibration,
                                 const TuneSettings &settings,
                                 const std::function<void(std::size_t, std::size_t)> &progress,
                                 const std::atomic<bool> *cancel)
{
    const TuneWorkload workload = tuneWorkloadFor(source, calibration, settings);
    const TuneOptions to{.slo = settings.slo,
                         .objective = settings.objective,
                         .budget = settings.budget,
                         .maxInstances = settings.maxInstances,
                         .base = source.plan.config,
                         .inputLengths = source.inputLengths(),
                         .maxLength = calibration.maxSequenceLength,
                         .generative = calibration.generative,
                         .prefixBlockTokens = source.plan.blockTokens,
                         .threads = settings.threads,
                         .progress = progress,
                         .cancel = cancel};
    return tune(simulationEvaluator(workload, settings.slo), to);
}

namespace {

TuningContext contextOf(const TuneSource &source, const TuneSettings &settings, const std::string &origin)
{
    return {.source = source.replay.source,
            .requests = source.plan.requests.size(),
            .offeredPerS = source.offeredPerS,
            .speed = source.replay.speed,
            .lengthScale = source.replay.lengthScale,
            .limit = source.replay.limit,
            .slo = settings.slo,
            .objective = settings.objective,
            .jobs = settings.threads,
            .origin = origin};
}

} // namespace

Result<StoredSearch> storeSearch(const TraceStore &store, const TuneSource &source,
                                 const Calibration &calibration, const TuneSettings &settings,
                                 const TuneResult &result, const std::string &origin)
{
    if (!result.recommended)
        return Status(StatusCode::InvalidArgument, "nothing to store: no config was evaluated");
    const TuningContext context = contextOf(source, settings, origin);
    StoredSearch out;
    out.document = tuningDocument(result, context, calibration);
    auto id = saveTuning(store, storedTuning(out.document, context, calibration));
    if (!id)
        return Status(id.status().code(), "cannot store the result: " + id.status().message());
    out.tuningId = *id;
    out.document["tuning_id"] = *id;
    return out;
}

Status storeVerification(const TraceStore &store, std::int64_t tuningId, const Verification &verification,
                         nlohmann::json &document)
{
    document["verification"] = verificationJson(verification);
    if (Status s =
            setTuningVerification(store, tuningId, verification.replay.sessionId, document["verification"]);
        !s)
        return Status(s.code(), "cannot store the verification: " + s.message());
    return Status::ok();
}

Result<Verification> verifyRun(const std::shared_ptr<TraceStore> &store,
                               const std::shared_ptr<Backend> &backend, TuneRun &run,
                               const TuneCandidate &candidate, const VerifyWindowSpec &window,
                               const TuneHooks &hooks)
{
    if (!backend)
        return Status(StatusCode::InvalidArgument,
                      "verification needs the model " + run.calibration.describe());
    const VerifyPlan plan = planVerification(run.source, run.calibration, run.settings, candidate, window);
    if (hooks.verifyStarting)
        hooks.verifyStarting(plan);
    auto verified = verifyRecommendation(store, backend, run.source, run.calibration, run.settings, plan,
                                         hooks.verifyProgress, hooks.cancel);
    if (!verified)
        return verified.status();
    if (run.stored.tuningId > 0)
        if (Status s = storeVerification(*store, run.stored.tuningId, *verified, run.stored.document); !s)
            return s;
    run.verification = *verified;
    return verified;
}

Result<TuneRun> runTunePipeline(const std::shared_ptr<TraceStore> &store, const Calibration &calibration,
                                const TuneRequest &request, const std::shared_ptr<Backend> &backend,
                                const TuneHooks &hooks)
{
    if (!store)
        return Status(StatusCode::InvalidArgument, "tuning needs a trace store");
    TuneRun run;
    run.calibration = calibration;
    run.settings = request.settings;
    auto source = planTuneSource(*store, request.source, calibration);
    if (!source)
        return source.status();
    run.source = std::move(*source);
    auto result = searchConfigs(run.source, calibration, run.settings, hooks.searchProgress, hooks.cancel);
    if (!result)
        return result.status();
    run.result = std::move(*result);
    if (!run.result.recommended)
        return run; // cancelled before any config was evaluated
    auto stored = storeSearch(*store, run.source, calibration, run.settings, run.result, request.origin);
    if (!stored)
        return stored.status();
    run.stored = std::move(*stored);
    const TuneCandidate &recommended = run.result.candidates[*run.result.recommended];
    if (const auto spread = fitSpread(calibration, recommended.config.policy);
        spread && !run.result.cancelled) {
        SimulatorOptions so = simulatorOptionsFor(calibration, run.settings.noise, run.settings.noiseSeed);
        so.config = recommended.config;
        run.interval = simulatedInterval(so, run.source.arrivals(), *spread);
    }
    if (request.verify && !run.result.cancelled) {
        auto verified = verifyRun(store, backend, run, run.result.candidates[*run.result.recommended],
                                  request.verifyWindow, hooks);
        if (!verified)
            return verified.status();
    }
    return run;
}

} // namespace bp
