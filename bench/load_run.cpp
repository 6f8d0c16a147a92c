#include "load_run.h"

#include "engine/config_json.h"

#include <condition_variable>
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

// What the completions add up to; shared with the hook, which may run on any
// engine thread until the engine has shut down.
struct Tally {
    std::mutex mutex;
    std::condition_variable cv;
    TimePoint windowStart{}, windowEnd{};
    Duration warmup{}, windowEndOffset{};
    std::uint64_t completed = 0, failed = 0, unfinished = 0;
    std::uint64_t completedInWindow = 0, inputTokensInWindow = 0, outputTokensInWindow = 0;
    LatencyHistogram latency, ttft;
    double tpotSumMs = 0;
    std::uint64_t tpotCount = 0;
};

} // namespace

Result<LoadRunResult> runLoad(const std::shared_ptr<Backend> &backend, const LoadRunOptions &o)
{
    if (Status s = o.workload.validate(); !s)
        return s;
    EngineOptions eo;
    eo.batching = o.config;
    eo.backend = backend;
    auto created = Engine::create(eo);
    if (!created)
        return created.status();
    Engine &engine = **created;

    auto tally = std::make_shared<Tally>();
    const TimePoint start = SteadyClock::now() + std::chrono::milliseconds(20);
    tally->warmup = fromSeconds(o.warmupS);
    tally->windowEndOffset = fromSeconds(o.warmupS + o.durationS);
    tally->windowStart = start + tally->warmup;
    tally->windowEnd = start + tally->windowEndOffset;
    auto batches = std::make_shared<WindowBatches>(tally->windowStart, tally->windowEnd);
    engine.addObserver(batches);

    // The offered load in the window, from a copy of the (deterministic) schedule.
    std::uint64_t offered = 0;
    {
        WorkloadSchedule copy(o.workload);
        while (auto a = copy.next())
            if (a->offset >= tally->warmup && a->offset < tally->windowEndOffset)
                ++offered;
    }

    auto hook = [tally](const Arrival &a, TimePoint scheduled, const Response &r) {
        const TimePoint now = SteadyClock::now();
        Tally &t = *tally;
        std::lock_guard lock(t.mutex);
        if (r.status.isOk() && now >= t.windowStart && now < t.windowEnd) {
            ++t.completedInWindow;
            t.inputTokensInWindow += std::uint64_t(a.inputTokens);
            t.outputTokensInWindow += r.tokens.size();
        }
        if (a.offset >= t.warmup && a.offset < t.windowEndOffset) {
            if (r.status.isOk()) {
                ++t.completed;
                t.latency.record((now - scheduled).count());
                if (r.timing.timeToFirstToken > Duration::zero())
                    t.ttft.record(r.timing.timeToFirstToken.count());
                if (r.timing.timePerOutputToken > Duration::zero()) {
                    t.tpotSumMs += toSeconds(r.timing.timePerOutputToken) * 1e3;
                    ++t.tpotCount;
                }
            } else {
                ++t.failed;
                if (r.status.code() == StatusCode::ShuttingDown)
                    ++t.unfinished;
            }
        }
        t.cv.notify_all();
    };

    LoadGenerator generator(engine, o.workload, hook);
    generator.start(start);
    const TimePoint deadline = tally->windowEnd + fromSeconds(o.drainS);
    for (;;) {
        const auto c = generator.counters();
        if (!generator.running() && c.completed + c.failed >= c.accepted)
            break;
        if (SteadyClock::now() >= deadline)
            break;
        std::unique_lock lock(tally->mutex);
        tally->cv.wait_for(lock, std::chrono::milliseconds(100));
    }
    generator.stop();
    const std::uint64_t rejected = generator.counters().rejected;
    engine.shutdown(ShutdownMode::Fail); // fails what is still queued: counted as unfinished

    LoadRunResult r;
    r.config = o.config;
    r.windowS = o.durationS;
    r.offeredRate = double(offered) / o.durationS;
    r.rejected = rejected;
    batches->fill(r);
    std::lock_guard lock(tally->mutex);
    r.completed = tally->completed;
    r.failed = tally->failed;
    r.unfinished = tally->unfinished;
    r.arrived = r.completed + r.failed;
    r.requestsPerS = double(tally->completedInWindow) / o.durationS;
    r.inputTokensPerS = double(tally->inputTokensInWindow) / o.durationS;
    r.outputTokensPerS = double(tally->outputTokensInWindow) / o.durationS;
    r.latency = tally->latency;
    r.ttft = tally->ttft;
    r.meanTpotMs = tally->tpotCount ? tally->tpotSumMs / double(tally->tpotCount) : 0;
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
        j["ttft_ms"] = {{"p50", ms(r.ttft, 0.5)}, {"p99", ms(r.ttft, 0.99)}};
        j["mean_tpot_ms"] = r.meanTpotMs;
    }
    return j;
}

} // namespace bp::bench
