#include "calibration.h"

#include "engine/store/session_summary.h"
#include "engine/store/trace_store.h"
#include "engine/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

namespace bp {

namespace {

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Status cancelledStatus()
{
    return {StatusCode::InvalidArgument, "calibration cancelled"};
}

} // namespace

Calibration Calibration::forModel(const ModelInfo &info, const std::string &preset, int threads)
{
    Calibration c;
    c.model = info.name;
    c.preset = info.name.rfind("builtin:", 0) == 0 && info.name != "builtin:echo" ? preset : "";
    c.device = info.device;
    c.threads = threads;
    c.vocabSize = info.vocabSize;
    c.maxSequenceLength = info.maxSequenceLength;
    c.generative = info.generative;
    c.maxNewTokensLimit = info.maxNewTokensLimit;
    // The decoder's positions hold input + generated tokens; echo has none.
    c.positions = info.generative && info.name != "builtin:echo" && info.maxNewTokensLimit > 0
                      ? info.maxNewTokensLimit + 1
                      : 0;
    c.cost.generative = info.generative;
    return c;
}

ModelInfo Calibration::modelInfo() const
{
    ModelInfo m;
    m.name = model;
    m.device = device;
    m.vocabSize = vocabSize;
    m.maxSequenceLength = maxSequenceLength;
    m.generative = generative;
    m.maxNewTokensLimit = maxNewTokensLimit;
    m.description = "simulated from calibration " + std::to_string(id);
    return m;
}

std::string Calibration::describe() const
{
    std::ostringstream s;
    s << model << " (";
    if (!preset.empty())
        s << preset << ", ";
    s << device << ", " << threads << (threads == 1 ? " thread)" : " threads)");
    return s.str();
}

CalibrationGrid CalibrationGrid::quick()
{
    CalibrationGrid g;
    g.batchSizes = {1, 4, 16};
    g.lengths = {16, 128, 512};
    g.newTokens = {2, 8};
    g.stepSequences = {1, 8, 32};
    g.repeats = 2;
    return g;
}

namespace {

// Iterations of StepModel::step (policy continuous) at each context length
// in `lengths` over each number of running sequences: the prompt's prefill
// (one sequence), decode steps over all of them, and decode steps with a
// prompt chunk joining. Each observation is the median of its timed runs.
// False when a length does not fit the model (skipped).
Status measureSteps(StepModel &model, const std::vector<int> &lengths, const CalibrationGrid &grid,
                    const std::atomic<bool> *cancel, std::vector<CostObservation> &out)
{
    std::uint64_t nextId = 1ull << 40; // far from any live sequence of a running engine
    auto timed = [&](const std::vector<StepItem> &items, bool &fits) -> double {
        std::vector<StepOutcome> outcomes;
        const TimePoint start = SteadyClock::now();
        Status s = model.step(items, outcomes);
        const double took = toSeconds(SteadyClock::now() - start);
        for (const StepOutcome &o : outcomes)
            if (s.isOk() && !o.status.isOk())
                s = o.status;
        if (!s)
            fits = false;
        return took;
    };
    auto observe = [&](const StepShape &shape, std::vector<double> times) {
        if (times.empty())
            return;
        out.push_back(
            {CostObservation::Kind::Iteration, CostModel::iterationTerms(shape), median(std::move(times))});
    };
    { // warm-up: the first step of a process pays for allocations
        bool fits = true;
        const std::uint64_t id = nextId++;
        timed({{id, std::vector<TokenId>(8, 1), true}}, fits);
        for (int i = 0; i < grid.warmup; ++i)
            timed({{id, {1}, true}}, fits);
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
            std::vector<double> prefill;
            for (int i = 0; i < b && fits; ++i) {
                ids.push_back(nextId++);
                std::vector<StepItem> items(1);
                items[0].sequence = ids.back();
                items[0].tokens.assign(std::size_t(L), 1);
                prefill.push_back(timed(items, fits));
            }
            std::int64_t cached = L;
            std::vector<double> decode, mixed;
            StepShape decodeShape, mixedShape;
            const int chunk = std::max(1, std::min(grid.stepChunk, L));
            for (int run = 0; fits && run < grid.warmup + grid.repeats; ++run) {
                std::vector<StepItem> items(ids.size());
                for (std::size_t i = 0; i < ids.size(); ++i)
                    items[i] = {ids[i], {1}, true};
                StepShape shape;
                for (std::size_t i = 0; i < ids.size(); ++i)
                    shape.add(cached, 1);
                const double took = timed(items, fits);
                ++cached;
                if (run >= grid.warmup) {
                    decode.push_back(took);
                    decodeShape = shape;
                }
                // the same decodes (one token further) with a prompt chunk joining
                StepItem joining{nextId++, std::vector<TokenId>(std::size_t(chunk), 1), true};
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
                    mixedShape = shape;
                }
            }
            for (std::uint64_t id : ids)
                model.release(id);
            if (!fits)
                continue; // past the model's positions
            StepShape prefillShape;
            prefillShape.add(0, L);
            observe(prefillShape, prefill);
            observe(decodeShape, decode);
            observe(mixedShape, mixed);
        }
    }
    return Status::ok();
}

} // namespace

Result<std::vector<CostObservation>>
measureBackend(Backend &backend, const CalibrationGrid &grid,
               const std::function<void(const CalibrationProgress &)> &progress,
               const std::atomic<bool> *cancel)
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

    std::mt19937_64 rng(grid.seed);
    std::uniform_int_distribution<TokenId> token(0, std::max(0, std::min(info.vocabSize, 256) - 1));
    std::vector<CostObservation> out;
    CalibrationProgress p;
    p.total = lengths.size() * grid.batchSizes.size() * wants.size();
    for (int L : lengths) {
        for (int want : wants) {
            for (int b : grid.batchSizes) {
                if (cancel && cancel->load())
                    return cancelledStatus();
                std::vector<Request> requests(static_cast<std::size_t>(b));
                for (Request &r : requests) {
                    r.tokens.resize(std::size_t(L));
                    for (TokenId &t : r.tokens)
                        t = token(rng);
                    r.maxNewTokens = want;
                }
                BatchInput input;
                input.paddedLength = L;
                for (const Request &r : requests)
                    input.requests.push_back(&r);
                std::vector<double> whole, prefill, step;
                bool doesNotFit = false;
                for (int run = 0; run < grid.warmup + grid.repeats; ++run) {
                    std::vector<SequenceResult> results(requests.size());
                    const TimePoint start = SteadyClock::now();
                    Status s = backend.run(input, results);
                    const double took = toSeconds(SteadyClock::now() - start);
                    for (const SequenceResult &r : results)
                        if (s.isOk() && !r.status.isOk())
                            s = r.status;
                    if (s.code() == StatusCode::OutOfRange) { // input + new tokens past the model's positions
                        doesNotFit = true;
                        break;
                    }
                    if (!s)
                        return Status(s.code(), "calibration batch " + std::to_string(b) + " x length " +
                                                    std::to_string(L) + ": " + s.message());
                    if (run < grid.warmup)
                        continue;
                    whole.push_back(took);
                    if (info.generative && !results.empty()) {
                        const SequenceResult &r = results.front();
                        prefill.push_back(toSeconds(r.firstTokenAfter));
                        if (r.tokens.size() > 1 && r.lastTokenAfter > r.firstTokenAfter)
                            step.push_back(toSeconds(r.lastTokenAfter - r.firstTokenAfter) /
                                           double(r.tokens.size() - 1));
                    }
                }
                ++p.done;
                if (doesNotFit)
                    continue;
                std::vector<int> memberWants(std::size_t(b), want);
                out.push_back({CostObservation::Kind::Batch,
                               CostModel::batchTerms(info.generative, b, L, memberWants), median(whole)});
                if (!prefill.empty())
                    out.push_back(
                        {CostObservation::Kind::Prefill, CostModel::passTerms(b, L), median(prefill)});
                if (!step.empty()) // the mean step runs at the mean context
                    out.push_back(
                        {CostObservation::Kind::Step, CostModel::stepTerms(b, L + want / 2), median(step)});
                p.batch = b;
                p.length = L;
                p.newTokens = want;
                p.seconds = median(whole);
                if (progress)
                    progress(p);
            }
        }
    }
    if (StepModel *steps = backend.steps(); steps && info.generative)
        if (Status s = measureSteps(*steps, lengths, grid, cancel, out); !s)
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

Result<SessionObservations> sessionObservations(const TraceStore &store, std::int64_t sessionId,
                                                bool generative)
{
    auto batches = store.batches(sessionId);
    if (!batches)
        return batches.status();
    auto requests = store.requests(sessionId);
    if (!requests)
        return requests.status();
    // Members of each batch row: their output tokens (the decoder's wants)
    // and the hand-off (total − queue wait − compute: dispatch to start).
    struct Members {
        std::vector<int> wants;
        Duration handoff{};
    };
    std::vector<Members> members(batches->size());
    // Batch ids are unique in a session (issue 23 item 5); sessions recorded
    // before that repeat them after a switch of policy kind. A request is
    // joined to the request-level row of its id that was dispatched when it
    // left the queue (arrival + queue wait = dispatch, exactly), and by id
    // alone only where the id names one row. A step's members are not used.
    std::map<std::uint64_t, std::vector<std::size_t>> rowsById;
    for (std::size_t i = 0; i < batches->size(); ++i)
        rowsById[(*batches)[i].batchId].push_back(i);
    for (const StoredRequest &r : *requests) {
        const auto rows = rowsById.find(r.batchId);
        if (r.batchId == 0 || rows == rowsById.end())
            continue;
        std::optional<std::size_t> row;
        for (std::size_t i : rows->second)
            if ((*batches)[i].policy != PolicyKind::Continuous &&
                (*batches)[i].dispatched == r.arrival + r.queueWait)
                row = i;
        if (!row && rows->second.size() == 1)
            row = rows->second.front();
        if (!row)
            continue;
        Members &m = members[*row];
        m.wants.push_back(r.outputTokens);
        m.handoff = r.total - r.queueWait - r.compute;
    }
    // Step rows (policy continuous) record their items and the tokens fed
    // (prompt chunks and decodes apart, schema 6), not the context each
    // attends to: the decodes are charged the session's mean decode context
    // (over the completed requests' generated tokens), and the prompt chunks
    // of a step are taken as equal and attending only to themselves. A row
    // without the split (older sessions) is taken as one prompt chunk (its
    // tokens beyond the decodes) beside n − 1 decodes when it fed more than
    // one token to an item.
    double contextSum = 0, decodeTokens = 0;
    for (const StoredRequest &r : *requests)
        if (r.status == StatusCode::Ok && r.outputTokens > 0) {
            contextSum += r.outputTokens * (r.inputTokens + (r.outputTokens + 1) / 2.0);
            decodeTokens += r.outputTokens;
        }
    const double meanContext = decodeTokens > 0 ? contextSum / decodeTokens : 0;
    auto stepShapeOf = [&](const StoredBatch &b) {
        StepShape shape;
        if (b.decodeTokens + b.prefillTokens > 0) {
            shape.decodes = b.decodeTokens;
            shape.prefills = std::max(0, b.size - b.decodeTokens);
            shape.prefillTokens = b.prefillTokens;
            if (shape.prefills > 0)
                shape.prefillAttention = shape.prefillTokens * shape.prefillTokens / shape.prefills;
        } else {
            shape.decodes = b.paddedLength > 1 ? b.size - 1 : b.size;
            if (b.paddedLength > 1) {
                shape.prefills = 1;
                shape.prefillTokens = std::max<std::int64_t>(1, b.realTokens - shape.decodes);
                shape.prefillAttention = shape.prefillTokens * shape.prefillTokens;
            }
        }
        shape.decodeContext = std::int64_t(std::llround(shape.decodes * meanContext));
        return shape;
    };
    // Which batches overlapped another one (several executors): sorted by
    // start, a batch overlaps when an earlier one ends after its start or
    // the next one starts before its end.
    std::vector<std::pair<Duration, Duration>> spans; // start, end
    std::vector<std::size_t> order;
    for (std::size_t index = 0; index < batches->size(); ++index) {
        const StoredBatch &b = (*batches)[index];
        const Duration start = b.dispatched + members[index].handoff;
        spans.push_back({start, start + b.compute});
        order.push_back(order.size());
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return spans[a] < spans[b]; });
    std::vector<bool> overlapped(spans.size(), false);
    Duration reach = Duration::min();
    for (std::size_t k = 0; k < order.size(); ++k) {
        const auto &[start, end] = spans[order[k]];
        if (reach > start || (k + 1 < order.size() && spans[order[k + 1]].first < end))
            overlapped[order[k]] = true;
        reach = std::max(reach, end);
    }

    SessionObservations out;
    std::vector<double> handoffs, gaps, stepGaps;
    std::map<int, std::size_t> lastOnExecutor; // executor -> its last batch row
    for (std::size_t index = 0; index < batches->size(); ++index) {
        const StoredBatch &b = (*batches)[index];
        if (b.status != StatusCode::Ok || b.compute <= Duration::zero())
            continue;
        const Members &m = members[index];
        const bool step = b.policy == PolicyKind::Continuous;
        if (overlapped[index])
            ++out.overlapped;
        else if (step)
            out.batches.push_back({CostObservation::Kind::Iteration,
                                   CostModel::iterationTerms(stepShapeOf(b)), toSeconds(b.compute)});
        else
            out.batches.push_back({CostObservation::Kind::Batch,
                                   CostModel::batchTerms(generative, b.size, b.paddedLength, m.wants),
                                   toSeconds(b.compute)});
        if (!step)
            handoffs.push_back(toSeconds(m.handoff));
        const auto it = lastOnExecutor.find(b.executor);
        // Lateness: a batch due while its executor was idle (nothing ran on
        // it, or its previous batch had ended) waited only for a wake-up.
        if (!step && b.dispatched >= b.intended &&
            (it == lastOnExecutor.end() || (*batches)[it->second].dispatched + members[it->second].handoff +
                                                   (*batches)[it->second].compute <
                                               b.intended))
            out.lateness.push_back(toSeconds(b.dispatched - b.intended));
        if (it != lastOnExecutor.end()) {
            const StoredBatch &prev = (*batches)[it->second];
            const Duration prevEnd = prev.dispatched + members[it->second].handoff + prev.compute;
            if (step && prev.policy == PolicyKind::Continuous) {
                // A step with decodes follows one whose sequences were still
                // running when it ended: the gap is the serving path's.
                if (b.decodeTokens > 0 && b.dispatched >= prevEnd)
                    stepGaps.push_back(toSeconds(b.dispatched - prevEnd));
            } else if (!step && b.intended <= prevEnd && b.dispatched >= prevEnd) {
                // A batch that was ready before its executor's previous
                // batch ended waited only for the executor: the gap between
                // that end and its dispatch is the serving path's per-batch
                // cost.
                gaps.push_back(toSeconds(b.dispatched - prevEnd));
            }
        }
        lastOnExecutor[b.executor] = index;
    }
    if (!handoffs.empty()) {
        out.overheadS = std::max(0.0, median(handoffs)) + median(gaps);
        out.overheadSamples = handoffs.size();
    }
    out.stepOverheadS = median(stepGaps);
    out.stepOverheadSamples = stepGaps.size();
    return out;
}

Result<Calibration> calibrate(const Calibration &key, std::span<const CostObservation> observations)
{
    auto fit = fitCostModel(observations, key.generative);
    if (!fit)
        return fit.status();
    Calibration c = key;
    const double overhead = c.cost.overheadS;
    const double stepOverhead = c.cost.stepOverheadS;
    std::vector<double> lateness = c.cost.dispatchLateness;
    const std::vector<double> concurrency = c.cost.concurrency;
    c.cost = fit->model;
    c.cost.overheadS = overhead;
    c.cost.stepOverheadS = stepOverhead;
    c.cost.dispatchLateness = std::move(lateness);
    c.cost.concurrency = concurrency;
    c.error = fit->error;
    c.batchError = fit->batchError;
    c.iterationError = fit->iterationError;
    c.observations = fit->error.observations;
    return c;
}

nlohmann::json toJson(const Calibration &c)
{
    return {{"format", "batchpilot-calibration"},
            {"version", 1},
            {"id", c.id},
            {"created_at_us", c.createdAtUs},
            {"model", c.model},
            {"preset", c.preset},
            {"device", c.device},
            {"threads", c.threads},
            {"vocab_size", c.vocabSize},
            {"max_sequence_length", c.maxSequenceLength},
            {"generative", c.generative},
            {"max_new_tokens_limit", c.maxNewTokensLimit},
            {"positions", c.positions},
            {"source", c.source},
            {"observations", c.observations},
            {"cost_model", toJson(c.cost)},
            {"fit_error", toJson(c.error)},
            {"batch_fit_error", toJson(c.batchError)},
            {"iteration_fit_error", toJson(c.iterationError)}};
}

Result<Calibration> calibrationFromJson(const nlohmann::json &j)
{
    try {
        if (!j.is_object() || j.value("format", std::string()) != "batchpilot-calibration")
            return Status(StatusCode::InvalidArgument, "not a BatchPilot calibration (no \"format\": "
                                                       "\"batchpilot-calibration\")");
        Calibration c;
        c.id = j.value("id", std::int64_t(0));
        c.createdAtUs = j.value("created_at_us", std::int64_t(0));
        c.model = j.at("model").get<std::string>();
        c.preset = j.value("preset", std::string());
        c.device = j.value("device", std::string("cpu"));
        c.threads = j.value("threads", 0);
        c.vocabSize = j.value("vocab_size", 256);
        c.maxSequenceLength = j.value("max_sequence_length", 1024);
        c.generative = j.value("generative", false);
        c.maxNewTokensLimit = j.value("max_new_tokens_limit", 0);
        c.positions = j.value("positions", 0);
        c.source = j.value("source", std::string());
        c.observations = j.value("observations", std::size_t(0));
        auto cost = costModelFromJson(j.at("cost_model"));
        if (!cost)
            return cost.status();
        c.cost = *cost;
        c.cost.generative = c.generative;
        c.error = fitErrorFromJson(j.value("fit_error", nlohmann::json()));
        c.batchError = fitErrorFromJson(j.value("batch_fit_error", nlohmann::json()));
        c.iterationError = fitErrorFromJson(j.value("iteration_fit_error", nlohmann::json()));
        if (c.model.empty() || c.vocabSize < 1 || c.maxSequenceLength < 1 || c.maxNewTokensLimit < 0 ||
            c.positions < 0)
            return Status(StatusCode::InvalidArgument,
                          "calibration: model, vocab_size, max_sequence_length are "
                          "required and positive");
        return c;
    } catch (const nlohmann::json::exception &e) {
        return Status(StatusCode::InvalidArgument, std::string("not a calibration: ") + e.what());
    }
}

Result<Calibration> loadCalibrationFile(const std::string &path)
{
    std::ifstream in(path);
    if (!in)
        return Status(StatusCode::NotFound, "cannot read calibration file '" + path + "'");
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded())
        return Status(StatusCode::InvalidArgument, path + ": not JSON");
    auto c = calibrationFromJson(j);
    if (!c)
        return Status(c.status().code(), path + ": " + c.status().message());
    return c;
}

} // namespace bp
