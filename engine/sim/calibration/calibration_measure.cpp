#include "engine/sim/calibration/calibration.h"

#include "engine/sim/calibration/backend_timing.h"
#include "engine/sim/calibration/statistics.h"

#include "engine/exec/engine.h"
#include "engine/workload/seeded_tokens.h"
#include "engine/workload/workload.h"

#include <future>
#include <numeric>

#include <thread>

namespace bp {

namespace {

Status cancelledStatus()
{
    return {StatusCode::InvalidArgument, "calibration cancelled"};
}

} // namespace

namespace {

// Iterations of StepModel::step (policy continuous) at each context length
// in `lengths` over each number of running sequences: the prompt's prefill
// (one sequence), decode steps over all of them, and decode steps with a
// prompt chunk joining. Each observation is the median of its timed runs.
// False when a length does not fit the model (skipped).
//
// A mixture-of-experts model (ModelInfo::experts) is fed varied token ids
// (seeded), as text routes its tokens to varied experts (one id repeated
// would go to the same few), and each iteration's distinct experts per MoE
// layer are measured (Backend::expertsTouched): the s6 term's X.
Status measureSteps(Backend &backend, StepModel &model, const std::vector<int> &lengths,
                    const CalibrationGrid &grid, const std::atomic<bool> *cancel, const Clock &clock,
                    std::vector<CostObservation> &out)
{
    const ModelInfo &info = backend.info();
    const bool moe = info.experts > 0 && info.moeLayers > 0 && backend.expertsTouched() >= 0;
    std::uint64_t nextId = 1ull << 40; // far from any live sequence of a running engine
    // An MoE model gets varied ids (its experts vary with them); a dense one id 1 throughout.
    SeededTokens seeded(std::uint64_t(grid.seed), info.vocabSize);
    auto tokens = [&](std::size_t n) { return moe ? seeded.take(n) : std::vector<TokenId>(n, 1); };
    double lastExperts = -1; // of the last timed step, per MoE layer
    auto timed = [&](const std::vector<StepItem> &items, bool &fits) -> double {
        std::vector<StepOutcome> outcomes;
        const std::int64_t touchedBefore = moe ? backend.expertsTouched() : 0;
        const TimePoint start = clock.now();
        Status s = model.step(items, outcomes);
        const double took = toSeconds(clock.now() - start);
        if (moe)
            lastExperts = double(backend.expertsTouched() - touchedBefore) / double(info.moeLayers);
        for (const StepOutcome &o : outcomes)
            if (s.isOk() && !o.status.isOk())
                s = o.status;
        if (!s)
            fits = false;
        return took;
    };
    auto observe = [&](const StepShape &shape, std::vector<double> times,
                       const std::vector<double> &experts) {
        if (times.empty())
            return;
        CostObservation o{CostObservation::Kind::Iteration,
                          CostModel::iterationTerms(shape, info.experts, info.expertsPerToken),
                          median(std::move(times))};
        if (moe && !experts.empty()) { // the measured count, not uniform routing's
            o.activeExperts = std::accumulate(experts.begin(), experts.end(), 0.0) / double(experts.size());
            o.terms[std::size_t(CostModel::kIterationStart) + 6] = o.activeExperts;
        }
        out.push_back(o);
    };
    { // warm-up: the first step of a process pays for allocations
        bool fits = true;
        const std::uint64_t id = nextId++;
        timed({{id, tokens(8), true}}, fits);
        for (int i = 0; i < grid.warmup; ++i)
            timed({{id, tokens(1), true}}, fits);
        model.release(id);
    }
    for (int L : lengths) {
        for (int b : grid.stepSequences) {
            if (cancel && cancel->load())
                return cancelledStatus();
            if (b < 1)
                continue;
            bool fits = true;
            std::vector<std::uint64_t> ids;
            std::vector<double> prefill, prefillExperts;
            for (int i = 0; i < b && fits; ++i) {
                ids.push_back(nextId++);
                std::vector<StepItem> items(1);
                items[0].sequence = ids.back();
                items[0].tokens = tokens(std::size_t(L));
                prefill.push_back(timed(items, fits));
                prefillExperts.push_back(lastExperts);
            }
            std::int64_t cached = L;
            std::vector<double> decode, mixed, decodeExperts, mixedExperts;
            StepShape decodeShape, mixedShape;
            const int chunk = std::max(1, std::min(grid.stepChunk, L));
            for (int run = 0; fits && run < grid.warmup + grid.repeats; ++run) {
                std::vector<StepItem> items(ids.size());
                for (std::size_t i = 0; i < ids.size(); ++i)
                    items[i] = {ids[i], tokens(1), true};
                StepShape shape;
                for (std::size_t i = 0; i < ids.size(); ++i)
                    shape.add(cached, 1);
                const double took = timed(items, fits);
                ++cached;
                if (run >= grid.warmup) {
                    decode.push_back(took);
                    decodeExperts.push_back(lastExperts);
                    decodeShape = shape;
                }
                // the same decodes (one token further) with a prompt chunk joining
                StepItem joining;
                joining.sequence = nextId++;
                joining.tokens = tokens(std::size_t(chunk));
                items.push_back(joining);
                shape = {};
                for (std::size_t i = 0; i < ids.size(); ++i)
                    shape.add(cached, 1);
                shape.add(0, chunk);
                const double tookMixed = timed(items, fits);
                model.release(joining.sequence);
                ++cached;
                if (run >= grid.warmup) {
                    mixed.push_back(tookMixed);
                    mixedExperts.push_back(lastExperts);
                    mixedShape = shape;
                }
            }
            for (std::uint64_t id : ids)
                model.release(id);
            if (!fits)
                continue; // past the model's positions
            StepShape prefillShape;
            prefillShape.add(0, L);
            observe(prefillShape, prefill, prefillExperts);
            observe(decodeShape, decode, decodeExperts);
            observe(mixedShape, mixed, mixedExperts);
        }
    }
    return Status::ok();
}

} // namespace

Result<std::vector<CostObservation>>
measureBackend(Backend &backend, const CalibrationGrid &grid,
               const std::function<void(const CalibrationProgress &)> &progress,
               const std::atomic<bool> *cancel, const Clock &clock)
{
    const ModelInfo &info = backend.info();
    std::vector<int> lengths;
    for (int L : grid.lengths)
        if (L >= 1 && L <= info.maxSequenceLength)
            lengths.push_back(L);
    if (lengths.empty() || grid.batchSizes.empty())
        return Status(StatusCode::InvalidArgument, "calibration grid has no length the model accepts");
    std::vector<int> wants = info.generative ? grid.newTokens : std::vector<int>{0};
    if (info.generative)
        std::erase_if(wants, [&](int w) {
            return w < 1 || (info.maxNewTokensLimit > 0 && w > info.maxNewTokensLimit);
        });
    if (wants.empty())
        return Status(StatusCode::InvalidArgument,
                      "calibration grid has no new-token count the model accepts");

    TimingGrid cells;
    cells.batchSizes = grid.batchSizes;
    cells.lengths = lengths;
    cells.newTokens = wants;
    cells.warmup = grid.warmup;
    cells.repeats = grid.repeats;
    cells.seed = grid.seed;
    CalibrationProgress p;
    auto timed = timeBackend(
        backend, cells,
        [&](const TimingProgress &t) {
            p.done = t.done;
            p.total = t.total;
            if (!t.cell || !progress)
                return;
            p.batch = t.cell->batch;
            p.length = t.cell->length;
            p.newTokens = t.cell->newTokens;
            p.seconds = t.cell->medianWall();
            progress(p);
        },
        cancel, clock);
    if (!timed)
        return cancel && cancel->load()
                   ? cancelledStatus()
                   : Status(timed.status().code(), "calibration " + timed.status().message());
    std::vector<CostObservation> out;
    for (const TimedCell &c : timed->cells) {
        if (c.wall.empty())
            continue;
        const std::vector<int> memberWants(std::size_t(c.batch), c.newTokens);
        out.push_back({CostObservation::Kind::Batch,
                       CostModel::batchTerms(info.generative, c.batch, c.length, memberWants), c.medianWall(),
                       c.wall.size() >= 2 ? c.spread() : -1});
        if (!c.firstToken.empty())
            out.push_back({CostObservation::Kind::Prefill, CostModel::passTerms(c.batch, c.length),
                           median(c.firstToken)});
        if (!c.perToken.empty()) // the mean step runs at the mean context
            out.push_back({CostObservation::Kind::Step,
                           CostModel::stepTerms(c.batch, c.length + c.newTokens / 2), median(c.perToken)});
    }
    if (StepModel *steps = backend.steps(); steps && info.generative)
        if (Status s = measureSteps(backend, *steps, lengths, grid, cancel, clock, out); !s)
            return s;
    return out;
}

Result<std::vector<double>> measureConcurrency(Backend &backend, int maxUnits, int repeats)
{
    const ModelInfo &info = backend.info();
    const int length = std::max(1, std::min(128, info.maxSequenceLength - (info.generative ? 8 : 0)));
    const int want = info.generative ? std::min(8, std::max(1, info.maxNewTokensLimit)) : 0;
    std::vector<Request> requests(4);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        requests[i].tokens.assign(std::size_t(length), TokenId(1 + i));
        requests[i].maxNewTokens = want;
    }
    BatchInput input;
    input.paddedLength = length;
    for (const Request &r : requests)
        input.requests.push_back(&r);
    // `units` threads each run the batch `repeats` times (after one
    // warm-up); the median of every timed run.
    auto timedAt = [&](int units) -> Result<double> {
        std::vector<std::vector<double>> times(static_cast<std::size_t>(units));
        std::vector<Status> failures(static_cast<std::size_t>(units));
        std::vector<std::thread> threads;
        for (int u = 0; u < units; ++u)
            threads.emplace_back([&, u] {
                for (int run = 0; run <= repeats; ++run) {
                    std::vector<SequenceResult> results(requests.size());
                    const TimePoint start = SteadyClock::now();
                    Status s = backend.run(input, results);
                    const double took = toSeconds(SteadyClock::now() - start);
                    if (!s) {
                        failures[std::size_t(u)] = s;
                        return;
                    }
                    if (run > 0)
                        times[std::size_t(u)].push_back(took);
                }
            });
        for (std::thread &t : threads)
            t.join();
        for (const Status &s : failures)
            if (!s)
                return Status(s.code(), "concurrency probe: " + s.message());
        std::vector<double> all;
        for (const auto &t : times)
            all.insert(all.end(), t.begin(), t.end());
        return median(all);
    };
    auto alone = timedAt(1);
    if (!alone)
        return alone.status();
    std::vector<double> out;
    for (int k = 2; k <= maxUnits; ++k) {
        auto t = timedAt(k);
        if (!t)
            return t.status();
        out.push_back(*alone > 0 ? std::max(1.0, *t / *alone) : 1.0);
    }
    return out;
}

Result<std::vector<double>> measureIdleStart(const std::shared_ptr<Backend> &backend,
                                             const std::vector<int> &lengths, int probes, Duration idle)
{
    const ModelInfo &info = backend->info();
    EngineOptions eo;
    eo.batching.policy = PolicyKind::None;
    eo.backend = backend;
    eo.probeMemory = false;
    auto engine = Engine::create(eo);
    if (!engine)
        return engine.status();
    WorkloadSpec tokenSource;
    tokenSource.vocabSize = std::max(1, std::min(info.vocabSize, 256));
    WorkloadSchedule tokens(tokenSource);
    const int want = info.generative ? std::min(2, std::max(1, info.maxNewTokensLimit)) : 0;
    // One request through the engine, end to end.
    auto timed = [&](int length) -> Result<double> {
        Request r;
        r.tokens = tokens.tokens(length);
        r.maxNewTokens = want;
        std::promise<Response> done;
        std::future<Response> response = done.get_future();
        if (Status s =
                (*engine)->submit(std::move(r), [&done](Response &&out) { done.set_value(std::move(out)); });
            !s)
            return Status(s.code(), "idle-start probe: " + s.message());
        const Response out = response.get();
        if (!out.status)
            return Status(out.status.code(), "idle-start probe: " + out.status.message());
        return toSeconds(out.timing.total);
    };
    std::vector<double> extra;
    for (int i = 0; i < probes && !lengths.empty(); ++i) {
        const int length = std::clamp(lengths[std::size_t(i) % lengths.size()], 1, info.maxSequenceLength);
        std::this_thread::sleep_for(idle);
        auto cold = timed(length);
        if (!cold)
            return cold.status();
        auto warm = timed(length); // straight after: what the profile times
        if (!warm)
            return warm.status();
        extra.push_back(std::max(0.0, *cold - *warm));
    }
    return extra;
}

Result<std::vector<CostObservation>>
measureProfile(const std::shared_ptr<Backend> &backend, const CalibrationGrid &grid, Calibration &key,
               const std::function<void(const CalibrationProgress &)> &progress,
               const std::atomic<bool> *cancel)
{
    auto measured = measureBackend(*backend, grid, progress, cancel);
    if (!measured)
        return measured.status();
    auto slowdown = measureConcurrency(*backend);
    if (!slowdown)
        return slowdown.status();
    key.cost.concurrency = *slowdown;
    // The short lengths: the start-up cost hardly depends on the length, and
    // the long ones would make the probe slow.
    std::vector<int> lengths;
    for (int L : grid.lengths)
        if (L <= 128 && L <= backend->info().maxSequenceLength)
            lengths.push_back(L);
    if (lengths.empty())
        lengths.push_back(std::min(16, backend->info().maxSequenceLength));
    auto idle = measureIdleStart(backend, lengths);
    if (!idle)
        return idle.status();
    key.cost.dispatchLateness = sampleQuantiles(std::move(*idle));
    return measured;
}

} // namespace bp
