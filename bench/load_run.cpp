#include "load_run.h"

#include "engine/config/config_json.h"
#include "engine/sim/tune/slo_spec.h"

#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace bp::bench {

namespace {

// Batch facts of the batches dispatched inside the window.
class WindowBatches final : public EngineObserver {
public:
    WindowBatches(TimePoint from, TimePoint to) : m_from(from), m_to(to) {}
    void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord>) override
    {
        if (b.dispatchedAt < m_from || b.dispatchedAt >= m_to)
            return;
        std::lock_guard lock(m_mutex);
        ++m_batches;
        m_requests += std::uint64_t(b.size);
        m_real += b.realTokens;
        m_padded += b.paddedTokens;
    }
    void fill(LoadRunResult &r) const
    {
        std::lock_guard lock(m_mutex);
        r.batches = m_batches;
        r.meanBatchSize = m_batches ? double(m_requests) / double(m_batches) : 0;
        r.paddingEfficiency = m_padded ? double(m_real) / double(m_padded) : 1;
    }

private:
    const TimePoint m_from, m_to;
    mutable std::mutex m_mutex;
    std::uint64_t m_batches = 0, m_requests = 0;
    std::int64_t m_real = 0, m_padded = 0;
};

// The samples, appended by the completion hook, which may run on any engine
// thread until the engine has shut down.
struct Tally {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<LoadSample> samples;
};

// The offered load in the window, from a copy of the (deterministic)
// schedule drawn exactly as LoadGenerator draws it: arrival, then its
// tokens, from the one generator (skipping the tokens would shift every
// later arrival and count a different schedule).
struct Offered {
    std::uint64_t inWindow = 0;       // scheduled in [windowStart, windowEnd)
    std::uint64_t dueByWindowEnd = 0; // scheduled before windowEnd
    std::size_t produced = 0;         // the whole schedule
};
Offered countOffered(const WorkloadSpec &workload, Duration windowStart, Duration windowEnd)
{
    Offered o;
    WorkloadSchedule copy(workload);
    while (auto a = copy.next()) {
        (void)copy.tokens(a->inputTokens);
        if (a->offset >= windowStart && a->offset < windowEnd)
            ++o.inWindow;
        if (a->offset < windowEnd)
            ++o.dueByWindowEnd;
    }
    o.produced = copy.produced();
    return o;
}

// The completion hook: one LoadSample per request into the tally.
LoadGenerator::ResponseHook sampleInto(std::shared_ptr<Tally> tally, int systemPrompt)
{
    return [tally, systemPrompt](const Arrival &a, TimePoint scheduled, const Response &r) {
        LoadSample sample;
        sample.latency = SteadyClock::now() - scheduled;
        sample.arrival = a.offset;
        sample.status = r.status.code();
        sample.inputTokens = std::uint64_t(a.inputTokens + (a.systemPrompt ? systemPrompt : 0));
        sample.cachedTokens = std::uint64_t(std::max(0, r.cachedTokens));
        sample.outputTokens = r.tokens.size();
        // The engine times the first token from the request's arrival in
        // the engine; the bench counts from the scheduled arrival (as the
        // latency), so a late submit shows up in TTFT too.
        const Duration submitLag = std::max(Duration::zero(), sample.latency - r.timing.total);
        if (r.timing.timeToFirstToken > Duration::zero())
            sample.ttft = r.timing.timeToFirstToken + submitLag;
        sample.tpot = r.timing.timePerOutputToken;
        std::lock_guard lock(tally->mutex);
        tally->samples.push_back(sample);
        tally->cv.notify_all();
    };
}

// Runs the generator until every accepted request has finished or the
// drain's deadline passes.
void waitForWindow(LoadGenerator &generator, Tally &tally, TimePoint windowEnd, TimePoint deadline,
                   std::uint64_t dueByWindowEnd)
{
    bool arriving = true;
    for (;;) {
        const TimePoint now = SteadyClock::now();
        // No arrivals after the window (the drain is for the window's
        // requests), but every one scheduled inside it is sent, however late
        // the producer runs: otherwise a late last arrival would be missing
        // from a figure whose offered load counts it.
        if (arriving && now >= windowEnd &&
            (generator.counters().sent >= dueByWindowEnd || now >= deadline)) {
            generator.stop();
            arriving = false;
        }
        const auto c = generator.counters();
        if (!generator.running() && c.completed + c.failed >= c.accepted)
            break;
        if (now >= deadline)
            break;
        std::unique_lock lock(tally.mutex);
        const TimePoint wake =
            arriving ? (now < windowEnd ? windowEnd : now + std::chrono::microseconds(200)) : deadline;
        tally.cv.wait_until(lock, std::min(wake, now + std::chrono::milliseconds(100)));
    }
}

void fillFromWindow(LoadRunResult &r, WindowFigures f)
{
    r.arrived = f.arrived;
    r.completed = f.completed;
    r.failed = f.failed;
    r.unfinished = f.unfinished;
    r.requestsPerS = f.requestsPerS;
    r.inputTokensPerS = f.inputTokensPerS;
    r.outputTokensPerS = f.outputTokensPerS;
    r.latency = std::move(f.latency);
    r.ttft = std::move(f.ttft);
    r.tpot = std::move(f.tpot);
    r.meanTpotMs = f.meanTpotMs;
    r.good = f.good;
    r.goodputPerS = f.goodputPerS;
    r.attainment = f.attainment();
    r.prefixHitRate = f.prefixHitRate;
}

} // namespace

Result<Slo> parseSlo(std::string_view spec)
{
    auto bounds = parseSloBounds(spec, SloSyntax::PerRequest);
    if (!bounds)
        return bounds.status();
    Slo slo;
    slo.ttft = bounds->ttft;
    slo.tpot = bounds->tpot;
    slo.e2e = bounds->e2e;
    return slo;
}

std::string describe(const Slo &slo)
{
    std::string out;
    auto add = [&](const char *name, Duration d) {
        if (d > Duration::zero())
            out += std::string(out.empty() ? "" : ", ") + name + " <= " + formatDuration(d);
    };
    add("ttft", slo.ttft);
    add("tpot", slo.tpot);
    add("e2e", slo.e2e);
    return out;
}

bool meetsSlo(const LoadSample &s, const Slo &slo)
{
    if (s.status != StatusCode::Ok)
        return false;
    if (slo.ttft > Duration::zero() && (s.ttft <= Duration::zero() || s.ttft > slo.ttft))
        return false; // a bound on the first token: no first token, no pass
    if (slo.tpot > Duration::zero() && s.tpot > slo.tpot)
        return false; // fewer than two tokens: no TPOT, nothing to miss
    if (slo.e2e > Duration::zero() && s.latency > slo.e2e)
        return false;
    return true;
}

WindowFigures summarizeWindow(const std::vector<LoadSample> &samples, Duration windowStart,
                              Duration windowEnd, const Slo &slo)
{
    WindowFigures f;
    std::uint64_t inputTokens = 0, outputTokens = 0, tpotCount = 0, cachedTokens = 0;
    double tpotSumMs = 0;
    for (const LoadSample &s : samples) {
        if (s.arrival < windowStart || s.arrival >= windowEnd)
            continue;
        ++f.arrived;
        if (s.status != StatusCode::Ok) {
            ++f.failed;
            if (s.status == StatusCode::ShuttingDown)
                ++f.unfinished;
            continue;
        }
        ++f.completed;
        if (meetsSlo(s, slo))
            ++f.good;
        inputTokens += s.inputTokens;
        cachedTokens += s.cachedTokens;
        outputTokens += s.outputTokens;
        f.latency.record(s.latency.count());
        if (s.ttft > Duration::zero())
            f.ttft.record(s.ttft.count());
        if (s.tpot > Duration::zero()) {
            tpotSumMs += toSeconds(s.tpot) * 1e3;
            ++tpotCount;
            f.tpot.record(s.tpot.count());
        }
    }
    const double windowS = toSeconds(windowEnd - windowStart);
    if (windowS > 0) {
        f.requestsPerS = double(f.completed) / windowS;
        f.inputTokensPerS = double(inputTokens) / windowS;
        f.outputTokensPerS = double(outputTokens) / windowS;
        f.goodputPerS = double(f.good) / windowS;
    }
    f.meanTpotMs = tpotCount ? tpotSumMs / double(tpotCount) : 0;
    f.prefixHitRate = inputTokens ? double(cachedTokens) / double(inputTokens) : 0;
    return f;
}

Result<LoadRunResult> runLoad(const std::shared_ptr<Backend> &backend, const LoadRunOptions &o)
{
    if (Status s = o.workload.validate(); !s)
        return s;
    EngineOptions eo;
    eo.batching = o.config;
    eo.backend = backend;
    // No memory probe for a paged model (one with steps): its batches are
    // bounded by the KV pool's blocks, which the scheduler books, and the
    // probe's synthetic prefills (n x the longest bucket) cost seconds on
    // every run of a load sweep while telling nothing the books do not.
    eo.probeMemory = backend->steps() == nullptr;
    auto created = Engine::create(eo);
    if (!created)
        return created.status();
    Engine &engine = **created;

    auto tally = std::make_shared<Tally>();
    const TimePoint start = SteadyClock::now() + std::chrono::milliseconds(20);
    const Duration windowStartOffset = fromSeconds(o.warmupS);
    const Duration windowEndOffset = fromSeconds(o.warmupS + o.durationS);
    const TimePoint windowEnd = start + windowEndOffset;
    auto batches = std::make_shared<WindowBatches>(start + windowStartOffset, windowEnd);
    engine.addObserver(batches);
    const Offered offered = countOffered(o.workload, windowStartOffset, windowEndOffset);
    tally->samples.reserve(offered.produced);

    LoadGenerator generator(engine, o.workload, sampleInto(tally, o.workload.systemPromptTokens));
    generator.start(start);
    waitForWindow(generator, *tally, windowEnd, windowEnd + fromSeconds(o.drainS), offered.dueByWindowEnd);
    generator.stop();
    const std::uint64_t rejected = generator.counters().rejected;
    engine.shutdown(ShutdownMode::Fail); // fails what is still queued: counted as unfinished

    LoadRunResult r;
    r.config = o.config;
    r.windowS = o.durationS;
    r.offeredRate = double(offered.inWindow) / o.durationS;
    r.rejected = rejected;
    r.slo = o.slo;
    batches->fill(r);
    std::lock_guard lock(tally->mutex);
    fillFromWindow(r, summarizeWindow(tally->samples, windowStartOffset, windowEndOffset, o.slo));
    return r;
}

nlohmann::json toJson(const LoadRunResult &r)
{
    auto ms = [](const LatencyHistogram &h, double q) { return double(h.quantile(q)) / 1e6; };
    nlohmann::json j{{"policy", std::string(policyName(r.config.policy))},
                     {"config", toJson(r.config)},
                     {"offered_rate", r.offeredRate},
                     {"window_s", r.windowS},
                     {"arrived", r.arrived},
                     {"completed", r.completed},
                     {"failed", r.failed},
                     {"unfinished", r.unfinished},
                     {"rejected", r.rejected},
                     {"requests_per_s", r.requestsPerS},
                     {"input_tokens_per_s", r.inputTokensPerS},
                     {"output_tokens_per_s", r.outputTokensPerS},
                     {"prefix_cache_hit_rate", r.prefixHitRate},
                     {"latency_ms",
                      {{"p50", ms(r.latency, 0.5)},
                       {"p90", ms(r.latency, 0.9)},
                       {"p99", ms(r.latency, 0.99)},
                       {"max", double(r.latency.max()) / 1e6}}},
                     {"padding_efficiency", r.paddingEfficiency},
                     {"mean_batch_size", r.meanBatchSize},
                     {"batches", r.batches},
                     {"clean", r.clean()}};
    if (r.ttft.count() > 0) {
        j["ttft_ms"] = {{"p50", ms(r.ttft, 0.5)}, {"p90", ms(r.ttft, 0.9)}, {"p99", ms(r.ttft, 0.99)}};
        j["mean_tpot_ms"] = r.meanTpotMs;
    }
    if (r.tpot.count() > 0)
        j["tpot_ms"] = {{"p50", ms(r.tpot, 0.5)}, {"p90", ms(r.tpot, 0.9)}, {"p99", ms(r.tpot, 0.99)}};
    if (r.slo.any()) {
        auto bound = [](Duration d) {
            return d > Duration::zero() ? nlohmann::json(toSeconds(d) * 1e3) : nlohmann::json();
        };
        j["slo_ms"] = {{"ttft", bound(r.slo.ttft)}, {"tpot", bound(r.slo.tpot)}, {"e2e", bound(r.slo.e2e)}};
        j["good"] = r.good;
        j["goodput"] = r.goodputPerS;
        j["slo_attainment"] = r.attainment;
    }
    return j;
}

} // namespace bp::bench
