#include "engine/sim/tune/tune_space.h"

#include "engine/config/config_rules.h"

#include <algorithm>

namespace bp {

namespace tuning {

namespace {

// The simulator runs `continuous` too (the real ContinuousScheduler over a
// cost-model StepModel); it joins the search for generative models.
constexpr bool kSimulatesContinuous = true;
constexpr int kMaxPrefixBlock = 4096; // prefix_cache.block_tokens' range in the knob table

} // namespace

Space::Space(const TuneOptions &options) : o(options)
{
    for (int l : o.inputLengths)
        longest = std::max(longest, l);
    if (o.maxLength > 0)
        longest = std::min(longest, o.maxLength);
    const std::vector<int> half = proposeBucketEdges(o.inputLengths, 2);
    median = half.empty() ? longest : std::min(half.front(), longest);
}

std::optional<BatchingConfig> Space::makeConfig(const Point &p) const
{
    if (p.server != ServerKind::BatchPilot)
        return serverConfig(o, p);
    BatchingConfig c = o.base;
    c.policy = p.policy;
    c.instances = p.instances;
    c.adaptiveDelay = o.base.adaptiveDelay;
    c.adaptiveDelay.enabled = false;
    c.slo.enabled = false; // the search sets the knobs the controller would move
    switch (p.policy) {
    case PolicyKind::None: break;
    case PolicyKind::Static:
        c.staticBatchSize = p.size;
        c.staticPaddedLength = longest;
        c.staticFlushOnDrain = true;
        break;
    case PolicyKind::Dynamic:
    case PolicyKind::Bucketed:
    case PolicyKind::Hybrid:
        c.maxBatchSize = p.size;
        c.maxQueueDelay = p.delay;
        if (p.adaptive) {
            c.adaptiveDelay.enabled = true;
            c.adaptiveDelay.maxDelay = p.delay;
            c.adaptiveDelay.minDelay = std::min(p.delay, Duration(std::chrono::microseconds(500)));
        }
        if (p.policy == PolicyKind::Bucketed) {
            c.bucketEdges = proposeBucketEdges(o.inputLengths, p.buckets);
            if (c.bucketEdges.size() < 2)
                return std::nullopt; // one bucket is dynamic
        }
        if (p.policy == PolicyKind::Hybrid) {
            std::vector<int> sizes;
            for (int s : {p.size / 4, p.size / 2, p.size})
                if (s >= 1 && (sizes.empty() || s > sizes.back()))
                    sizes.push_back(s);
            c.hybrid.staticSizes = sizes;
            c.hybrid.maxStaticLength = median;
            c.hybrid.staticMaxWait = p.delay;
        }
        break;
    case PolicyKind::Continuous:
        c.continuous.maxNumSeqs = p.size;
        c.continuous.maxNumBatchedTokens = p.tokens;
        // The cache off keeps the base's block size, so that every "off"
        // point is one config (the search deduplicates configs).
        c.prefixCache.enabled = p.prefixBlock > 0;
        if (p.prefixBlock > 0)
            c.prefixCache.blockTokens = p.prefixBlock;
        break;
    }
    if (!validate(c))
        return std::nullopt;
    return c;
}

std::vector<Point> Space::grid() const
{
    using std::chrono::microseconds;
    const std::vector<Duration> delays = {microseconds(500),  microseconds(1000),  microseconds(2000),
                                          microseconds(5000), microseconds(10000), microseconds(20000)};
    if (o.base.server.kind != ServerKind::BatchPilot)
        return serverGrid(o, longest);
    // Continuous: the prefix cache off, on at the default block size, and on
    // at the trace's own block size; the pattern search moves the block size.
    std::vector<int> coarseBlocks = {0, PrefixCacheConfig{}.blockTokens};
    if (o.prefixBlockTokens > 0 && o.prefixBlockTokens <= kMaxPrefixBlock &&
        o.prefixBlockTokens != coarseBlocks.back())
        coarseBlocks.push_back(o.prefixBlockTokens);
    std::vector<Point> points;
    for (int inst = 1; inst <= o.maxInstances; ++inst) {
        points.push_back({PolicyKind::None, false, 1, {}, inst, 0, 0});
        for (int b : {2, 4, 8, 16, 32, 64})
            for (Duration d : delays)
                points.push_back({PolicyKind::Dynamic, false, b, d, inst, 0, 0});
        for (int b : {4, 8, 16, 32, 64})
            for (Duration d : {delays[2], delays[3], delays[4], delays[5]})
                points.push_back({PolicyKind::Dynamic, true, b, d, inst, 0, 0});
        for (int k : {2, 4})
            for (int b : {4, 16, 64})
                for (Duration d : {delays[1], delays[3], delays[5]})
                    points.push_back({PolicyKind::Bucketed, false, b, d, inst, k, 0});
        for (int b : {8, 16, 32, 64})
            for (Duration d : {delays[2], delays[4]})
                points.push_back({PolicyKind::Hybrid, false, b, d, inst, 0, 0});
        for (int b : {2, 4, 8, 16, 32})
            points.push_back({PolicyKind::Static, false, b, {}, inst, 0, 0});
        if (kSimulatesContinuous && o.generative)
            for (int s : {8, 16, 32, 64})
                for (int t : {256, 1024})
                    for (int block : coarseBlocks) {
                        Point p{PolicyKind::Continuous, false, s, {}, inst, 0, t};
                        p.prefixBlock = block;
                        points.push_back(p);
                    }
    }
    return points;
}

std::vector<int> Space::prefixBlocks() const
{
    std::vector<int> blocks = {16, 32, 64};
    if (o.prefixBlockTokens > 0 && o.prefixBlockTokens <= kMaxPrefixBlock)
        blocks.push_back(o.prefixBlockTokens);
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    return blocks;
}

std::vector<Point> neighbours(const Point &p, const Steps &s, int maxInstances,
                              const std::vector<int> &prefixBlocks)
{
    if (p.server != ServerKind::BatchPilot)
        return serverNeighbours(p, s);
    std::vector<Point> out;
    auto add = [&](Point q) { out.push_back(q); };
    if (p.policy != PolicyKind::None) {
        for (int sign : {-1, 1}) {
            Point q = p;
            q.size = std::clamp(p.size + sign * s.size, 1, 1024);
            if (q.size != p.size)
                add(q);
        }
    }
    const bool hasDelay =
        p.policy == PolicyKind::Dynamic || p.policy == PolicyKind::Bucketed || p.policy == PolicyKind::Hybrid;
    if (hasDelay) {
        for (int sign : {-1, 1}) {
            Point q = p;
            if (p.delay <= Duration::zero())
                q.delay = sign > 0 ? Duration(std::chrono::microseconds(100)) : p.delay;
            else
                q.delay = std::chrono::microseconds(std::llround(toMicros(p.delay) * (1 + sign * s.delay)));
            q.delay = std::clamp(q.delay, Duration::zero(), Duration(std::chrono::seconds(10)));
            if (q.delay != p.delay)
                add(q);
        }
    }
    if (p.policy == PolicyKind::Continuous) {
        for (int sign : {-1, 1}) {
            Point q = p;
            q.tokens = std::clamp(int(std::lround(p.tokens * (1 + sign * s.delay))), 1, 65536);
            if (q.tokens != p.tokens)
                add(q);
        }
        // The prefix cache: toggled (on at the default block size), and its
        // block size one step smaller or larger among the searched ones.
        Point q = p;
        q.prefixBlock = p.prefixBlock > 0 ? 0 : PrefixCacheConfig{}.blockTokens;
        add(q);
        const auto at = std::find(prefixBlocks.begin(), prefixBlocks.end(), p.prefixBlock);
        if (p.prefixBlock > 0 && at != prefixBlocks.end()) {
            if (at != prefixBlocks.begin()) {
                q.prefixBlock = *std::prev(at);
                add(q);
            }
            if (std::next(at) != prefixBlocks.end()) {
                q.prefixBlock = *std::next(at);
                add(q);
            }
        }
    }
    for (int sign : {-1, 1}) {
        Point q = p;
        q.instances = p.instances + sign;
        if (q.instances >= 1 && q.instances <= maxInstances)
            add(q);
    }
    if (p.policy == PolicyKind::Bucketed)
        for (int sign : {-1, 1}) {
            Point q = p;
            q.buckets = p.buckets + sign;
            if (q.buckets >= 2 && q.buckets <= 32)
                add(q);
        }
    return out;
}

} // namespace tuning

std::vector<int> proposeBucketEdges(std::span<const int> lengths, int buckets)
{
    std::vector<int> sorted(lengths.begin(), lengths.end());
    if (sorted.empty())
        return {};
    std::sort(sorted.begin(), sorted.end());
    buckets = std::clamp(buckets, 1, 32);
    std::vector<int> edges;
    const std::size_t n = sorted.size();
    for (int i = 1; i <= buckets; ++i) {
        // Nearest rank: the smallest length with at least i/buckets of them at or below it.
        const std::size_t rank =
            std::max<std::size_t>(1, (n * std::size_t(i) + std::size_t(buckets) - 1) / std::size_t(buckets));
        const int edge = std::clamp(sorted[rank - 1], 1, 65536);
        if (edges.empty() || edge > edges.back())
            edges.push_back(edge);
    }
    return edges;
}

} // namespace bp
