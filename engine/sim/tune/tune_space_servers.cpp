// The tuner's search space for a server model (tune_space.h): each server's
// own knobs. A Point's fields per server:
//   vllm    size max_num_seqs, tokens max_num_batched_tokens, flag enable_chunked_prefill
//   tgi     tokens max_batch_prefill_tokens, ratio waiting_served_ratio, size max_waiting_tokens
//           (max_batch_total_tokens is the server's KV memory: kept as it is)
//   sglang  size max_running_requests, tokens chunked_prefill_size, ratio schedule_conservativeness
//           (max_prefill_tokens and the KV pool kept)
//   triton  size max_batch_size, delay max_queue_delay_microseconds, flag preferred_batch_size {b/2, b}
#include "engine/sim/tune/tune_space.h"

#include <algorithm>
#include <cmath>

namespace bp::tuning {

std::vector<Point> serverGrid(const TuneOptions &o, int longest)
{
    using std::chrono::microseconds;
    const ServerKind kind = o.base.server.kind;
    std::vector<Point> points;
    auto point = [&](PolicyKind policy) {
        Point p;
        p.policy = policy;
        p.server = kind;
        p.instances = 1;
        return p;
    };
    switch (kind) {
    case ServerKind::BatchPilot: break;
    case ServerKind::Vllm:
        for (int seqs : {8, 16, 32, 64, 128, 256})
            for (int tokens : {256, 512, 1024, 2048, 4096, 8192})
                for (bool chunked : {true, false}) {
                    if (!chunked && tokens < longest)
                        continue; // every prompt must fit a step
                    Point p = point(PolicyKind::Continuous);
                    p.size = seqs;
                    p.tokens = tokens;
                    p.flag = chunked;
                    points.push_back(p);
                }
        break;
    case ServerKind::Tgi:
        for (int prefill : {512, 1024, 2048, 4096, 8192})
            for (double ratio : {0.0, 0.3, 0.6, 1.2})
                for (int waits : {5, 20, 60}) {
                    Point p = point(PolicyKind::Continuous);
                    p.tokens = std::max(prefill, longest);
                    p.ratio = ratio;
                    p.size = waits;
                    points.push_back(p);
                }
        break;
    case ServerKind::Sglang:
        for (int running : {16, 32, 64, 128, 256})
            for (int chunk : {512, 2048, 8192})
                for (double conservativeness : {0.5, 1.0, 1.5}) {
                    Point p = point(PolicyKind::Continuous);
                    p.size = running;
                    p.tokens = chunk;
                    p.ratio = conservativeness;
                    points.push_back(p);
                }
        break;
    case ServerKind::Triton:
        for (int b : {1, 2, 4, 8, 16, 32, 64})
            for (int us : {0, 100, 500, 1000, 5000, 10000})
                for (bool preferred : {false, true}) {
                    if (preferred && b < 2)
                        continue;
                    Point p = point(PolicyKind::Dynamic);
                    p.size = b;
                    p.delay = microseconds(us);
                    p.flag = preferred;
                    points.push_back(p);
                }
        break;
    }
    // Deduplicated (TGI's prefill budget raised to the longest prompt).
    std::vector<Point> out;
    for (const Point &p : points)
        if (std::none_of(out.begin(), out.end(), [&](const Point &q) {
                return q.size == p.size && q.tokens == p.tokens && q.ratio == p.ratio && q.flag == p.flag &&
                       q.delay == p.delay;
            }))
            out.push_back(p);
    return out;
}

std::optional<BatchingConfig> serverConfig(const TuneOptions &o, const Point &p)
{
    BatchingConfig c = o.base;
    c.instances = 1;
    c.adaptiveDelay.enabled = false;
    c.slo.enabled = false;
    ServerModelConfig &m = c.server;
    switch (p.server) {
    case ServerKind::BatchPilot: return std::nullopt;
    case ServerKind::Vllm:
        c.policy = PolicyKind::Continuous;
        m.vllm.maxNumSeqs = p.size;
        m.vllm.maxNumBatchedTokens = p.tokens;
        m.vllm.enableChunkedPrefill = p.flag;
        break;
    case ServerKind::Tgi:
        c.policy = PolicyKind::Continuous;
        m.tgi.maxBatchPrefillTokens = p.tokens;
        m.tgi.waitingServedRatio = p.ratio;
        m.tgi.maxWaitingTokens = p.size;
        if (m.tgi.maxBatchPrefillTokens > m.tgi.maxBatchTotalTokens)
            return std::nullopt; // TGI refuses to start so
        break;
    case ServerKind::Sglang:
        c.policy = PolicyKind::Continuous;
        m.sglang.maxRunningRequests = p.size;
        m.sglang.chunkedPrefillSize = p.tokens;
        m.sglang.scheduleConservativeness = p.ratio;
        break;
    case ServerKind::Triton:
        c.policy = PolicyKind::Dynamic;
        c.maxBatchSize = p.size;
        c.maxQueueDelay = p.delay;
        m.triton.preferredBatchSize.clear();
        if (p.flag && p.size >= 2)
            m.triton.preferredBatchSize = {p.size / 2, p.size};
        break;
    }
    if (!validate(c))
        return std::nullopt;
    return c;
}

std::vector<Point> serverNeighbours(const Point &p, const Steps &s)
{
    std::vector<Point> out;
    for (int sign : {-1, 1}) {
        Point q = p;
        q.size = std::clamp(p.size + sign * s.size, 1, 65536);
        if (q.size != p.size)
            out.push_back(q);
    }
    if (p.server == ServerKind::Triton) {
        for (int sign : {-1, 1}) {
            Point q = p;
            q.delay = p.delay <= Duration::zero()
                          ? (sign > 0 ? Duration(std::chrono::microseconds(100)) : p.delay)
                          : std::chrono::microseconds(std::llround(toMicros(p.delay) * (1 + sign * s.delay)));
            if (q.delay != p.delay)
                out.push_back(q);
        }
        return out;
    }
    for (int sign : {-1, 1}) {
        Point q = p;
        q.tokens = std::clamp(int(std::lround(p.tokens * (1 + sign * s.delay))), 16, 1000000);
        if (q.tokens != p.tokens)
            out.push_back(q);
    }
    if (p.server == ServerKind::Tgi || p.server == ServerKind::Sglang)
        for (int sign : {-1, 1}) {
            Point q = p;
            q.ratio = p.ratio <= 0 ? (sign > 0 ? 0.1 : 0.0) : p.ratio * (1 + sign * s.delay);
            if (p.server == ServerKind::Sglang)
                q.ratio = std::clamp(q.ratio, 0.05, 10.0);
            if (q.ratio != p.ratio)
                out.push_back(q);
        }
    return out;
}

} // namespace bp::tuning
