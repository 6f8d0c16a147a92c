#include "fidelity_inputs.h"

#include "engine/core/length_rule.h"

#include "engine/store/session_summary.h"
#include "engine/store/trace_store.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

namespace bp::bench {

std::vector<NamedConfig> fidelityConfigs(int longest, bool steps)
{
    using namespace std::chrono_literals;
    std::vector<NamedConfig> out;
    auto add = [&](std::string name, auto edit) {
        BatchingConfig c;
        c.queueCapacity = 100000;
        edit(c);
        out.push_back({std::move(name), c});
    };
    add("none", [](BatchingConfig &c) { c.policy = PolicyKind::None; });
    add("dynamic b8 d2ms", [](BatchingConfig &c) {
        c.maxBatchSize = 8;
        c.maxQueueDelay = 2ms;
    });
    add("dynamic b32 d10ms", [](BatchingConfig &c) {
        c.maxBatchSize = 32;
        c.maxQueueDelay = 10ms;
    });
    add("bucketed b16 d5ms", [](BatchingConfig &c) {
        c.policy = PolicyKind::Bucketed;
        c.maxBatchSize = 16;
        c.maxQueueDelay = 5ms;
        c.bucketEdges = {32, 64, 128, 256};
    });
    add("static b4", [&](BatchingConfig &c) {
        c.policy = PolicyKind::Static;
        c.staticBatchSize = 4;
        c.staticPaddedLength = longest;
    });
    add("hybrid", [](BatchingConfig &c) {
        c.policy = PolicyKind::Hybrid;
        c.hybrid.staticSizes = {4, 8};
        c.hybrid.maxStaticLength = 64;
        c.hybrid.minStaticRate = 20;
        c.hybrid.staticMaxWait = 5ms;
        c.maxBatchSize = 16;
        c.maxQueueDelay = 5ms;
    });
    add("dynamic b16 x2 inst", [](BatchingConfig &c) {
        c.maxBatchSize = 16;
        c.maxQueueDelay = 5ms;
        c.instances = 2;
    });
    add("adaptive delay", [](BatchingConfig &c) {
        c.maxBatchSize = 16;
        c.adaptiveDelay.enabled = true;
        c.adaptiveDelay.maxDelay = 10ms;
    });
    if (steps) { // iteration-level: a model with step-level generation
        add("continuous s16 t256", [](BatchingConfig &c) {
            c.policy = PolicyKind::Continuous;
            c.continuous.maxNumSeqs = 16;
            c.continuous.maxNumBatchedTokens = 256;
            c.continuous.prefillChunk = 64;
        });
        add("continuous s8 kv2k", [](BatchingConfig &c) {
            c.policy = PolicyKind::Continuous;
            c.continuous.maxNumSeqs = 8;
            c.continuous.maxNumBatchedTokens = 128;
            c.continuous.prefillChunk = 32;
            c.continuous.kvCacheTokens = 2048;
        });
    }
    return out;
}

double relError(double sim, double real)
{
    return real > 0 ? sim / real - 1 : 0;
}

// Time to first token and time per output token (each request's own, as
// recorded: timePerOutputToken(), engine/core/request.h), p50 (ms) over
// completed requests.
TokenFigures tokenPercentiles(const TraceStore &store, std::int64_t session)
{
    std::vector<std::int64_t> ttft, tpot;
    auto requests = store.requests(session);
    if (!requests)
        return {};
    for (const StoredRequest &r : *requests) {
        if (r.status != StatusCode::Ok || r.timeToFirstToken <= Duration::zero())
            continue;
        ttft.push_back(r.timeToFirstToken.count());
        if (r.outputTokens > 1 && r.timePerOutputToken > Duration::zero())
            tpot.push_back(r.timePerOutputToken.count());
    }
    std::sort(ttft.begin(), ttft.end());
    std::sort(tpot.begin(), tpot.end());
    TokenFigures f;
    if (!ttft.empty())
        f.ttftP50 = nearestRank(ttft, 0.5) / 1e6;
    if (!tpot.empty())
        f.tpotP50 = nearestRank(tpot, 0.5) / 1e6;
    return f;
}

// The load average over the last minute (0 when unknown).
double loadAverage()
{
    double l[1] = {0};
    return ::getloadavg(l, 1) == 1 ? l[0] : 0;
}

// The rows of a replayable trace: `rows` re-timed so that they span
// `seconds`, lengths scaled and clamped to the model.
std::vector<TraceRow> fitTrace(std::vector<TraceRow> rows, double seconds, double lengthScale,
                               const ModelInfo &m)
{
    const double span = rows.empty() ? 0 : rows.back().arrivalS - rows.front().arrivalS;
    const double t0 = rows.empty() ? 0 : rows.front().arrivalS;
    for (TraceRow &r : rows) {
        r.arrivalS = span > 0 ? (r.arrivalS - t0) * seconds / span : 0;
        // The one length rule (engine/core/length_rule.h).
        const ScaledLengths len = scaleLengths(r.inputTokens, r.outputTokens, lengthScale,
                                               {.maxLength = m.maxSequenceLength,
                                                .maxNewTokens = m.maxNewTokensLimit,
                                                .generative = m.generative});
        r.inputTokens = len.input;
        if (m.generative)
            r.outputTokens = len.output;
    }
    return rows;
}

// On/off bursts: `rate` on average, three times that for 0.3 s, then a
// quiet stretch; lengths log-uniform.
std::vector<TraceRow> burstyRows(std::size_t n, double rate, int maxLength, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> busy(3 * rate), quiet(rate / 3);
    std::uniform_real_distribution<double> logLen(std::log(4.0), std::log(double(maxLength)));
    std::uniform_int_distribution<int> out(4, 64);
    std::vector<TraceRow> rows;
    double t = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const bool on = std::fmod(t, 0.6) < 0.3;
        t += on ? busy(rng) : quiet(rng);
        rows.push_back({t, int(std::exp(logLen(rng))), out(rng)});
    }
    return rows;
}

std::vector<NamedConfig> prefixConfigs()
{
    std::vector<NamedConfig> out;
    for (int variant = 0; variant < 3; ++variant) {
        BatchingConfig c;
        c.queueCapacity = 100000;
        c.policy = PolicyKind::Continuous;
        c.continuous.maxNumSeqs = 16;
        c.continuous.maxNumBatchedTokens = 256;
        c.continuous.prefillChunk = 64;
        c.prefixCache.enabled = variant > 0;
        c.prefixCache.blockTokens = 16;
        if (variant == 2) {
            c.continuous.maxNumSeqs = 8;
            c.continuous.kvCacheTokens = 1024;
        }
        out.push_back({variant == 0   ? "continuous s16"
                       : variant == 1 ? "continuous s16 +prefix"
                                      : "continuous s8 kv1k +prefix",
                       c});
    }
    return out;
}

PrefixTrace sharedPromptTrace(std::size_t n, double rate, int systemTokens, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(rate);
    std::uniform_int_distribution<int> own(16, 48), out(8, 24);
    PrefixTrace t;
    const int shared = std::max(0, systemTokens) / t.blockTokens;
    double at = 0;
    for (std::size_t i = 0; i < n; ++i) {
        at += i ? gap(rng) : 0;
        const int mine = own(rng);
        t.rows.push_back({at, shared * t.blockTokens + mine, out(rng)});
        PrefixBlocks ids;
        for (int k = 0; k < shared; ++k)
            ids.push_back(k + 1);
        for (int k = 0; k * t.blockTokens < mine; ++k)
            ids.push_back(std::int64_t(1'000'000 + 16 * i + std::size_t(k)));
        t.ids.push_back(std::move(ids));
    }
    return t;
}

} // namespace bp::bench
