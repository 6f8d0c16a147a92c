// The tuner's search space for a server model (tune_space.h): each server's
// own knobs, from the knob table: a row with a tuneAxis is searched over its
// tuneGrid, carried by that field of the Point (engine/config/knob_table.cpp):
//   vllm    size max_num_seqs, tokens max_num_batched_tokens, flag enable_chunked_prefill
//   tgi     tokens max_batch_prefill_tokens, ratio waiting_served_ratio, size max_waiting_tokens
//           (max_batch_total_tokens is the server's KV memory: kept as it is)
//   sglang  size max_running_requests, tokens chunked_prefill_size, ratio schedule_conservativeness
//           (max_prefill_tokens and the KV pool kept)
//   triton  size max_batch_size, delay max_queue_delay_microseconds, flag preferred_batch_size {b/2, b}
//           (BatchPilot's own knobs and a derived list: its grid is here)
//   llamacpp size n_parallel, tokens n_batch (n_ctx, the server's KV memory, kept; n_ubatch capped
//           at n_batch)
#include "engine/sim/tune/tune_space.h"

#include "engine/config/knobs.h"

#include <algorithm>
#include <cmath>

namespace bp::tuning {

namespace {

void setAxis(Point &p, TuneAxis axis, double v)
{
    switch (axis) {
    case TuneAxis::None: break;
    case TuneAxis::Size: p.size = int(std::lround(v)); break;
    case TuneAxis::Tokens: p.tokens = int(std::lround(v)); break;
    case TuneAxis::Ratio: p.ratio = v; break;
    case TuneAxis::Flag: p.flag = v != 0; break;
    }
}

double axisValue(const Point &p, TuneAxis axis)
{
    switch (axis) {
    case TuneAxis::None: break;
    case TuneAxis::Size: return p.size;
    case TuneAxis::Tokens: return p.tokens;
    case TuneAxis::Ratio: return p.ratio;
    case TuneAxis::Flag: return p.flag ? 1 : 0;
    }
    return 0;
}

bool searches(ServerKind kind, TuneAxis axis)
{
    const auto rows = serverKnobs(kind);
    return std::any_of(rows.begin(), rows.end(), [axis](const Knob &k) { return k.tuneAxis == axis; });
}

} // namespace

std::vector<Point> serverGrid(const TuneOptions &o, int longest)
{
    using std::chrono::microseconds;
    const ServerKind kind = o.base.server.kind;
    Point base;
    base.policy = kind == ServerKind::Triton ? PolicyKind::Dynamic : PolicyKind::Continuous;
    base.server = kind;
    base.instances = 1;
    std::vector<Point> points;
    if (kind == ServerKind::Triton) {
        for (int b : {1, 2, 4, 8, 16, 32, 64})
            for (int us : {0, 100, 500, 1000, 5000, 10000})
                for (bool preferred : {false, true}) {
                    if (preferred && b < 2)
                        continue;
                    Point p = base;
                    p.size = b;
                    p.delay = microseconds(us);
                    p.flag = preferred;
                    points.push_back(p);
                }
    } else if (kind != ServerKind::BatchPilot) {
        // The product of the rows' grids, the first row outermost.
        points.push_back(base);
        for (const Knob &k : serverKnobs(kind)) {
            if (k.tuneAxis == TuneAxis::None)
                continue;
            std::vector<Point> next;
            for (const Point &p : points)
                for (double v : k.tuneGrid) {
                    Point q = p;
                    setAxis(q, k.tuneAxis, v);
                    next.push_back(q);
                }
            points = std::move(next);
        }
        std::erase_if(points, [&](const Point &p) {
            // vLLM without chunked prefill: every prompt must fit a step.
            return kind == ServerKind::Vllm && !p.flag && p.tokens < longest;
        });
        if (kind == ServerKind::Tgi) // a prefill batch takes the longest prompt
            for (Point &p : points)
                p.tokens = std::max(p.tokens, longest);
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
    case ServerKind::Triton:
        c.policy = PolicyKind::Dynamic;
        c.maxBatchSize = p.size;
        c.maxQueueDelay = p.delay;
        m.triton.preferredBatchSize.clear();
        if (p.flag && p.size >= 2)
            m.triton.preferredBatchSize = {p.size / 2, p.size};
        break;
    case ServerKind::Vllm:
    case ServerKind::Tgi:
    case ServerKind::Sglang:
    case ServerKind::LlamaCpp:
        c.policy = PolicyKind::Continuous;
        for (const Knob &k : serverKnobs(p.server))
            if (k.tuneAxis != TuneAxis::None)
                k.set(c, axisValue(p, k.tuneAxis));
        if (p.server == ServerKind::Tgi && m.tgi.maxBatchPrefillTokens > m.tgi.maxBatchTotalTokens)
            return std::nullopt; // TGI refuses to start so
        if (p.server == ServerKind::LlamaCpp)
            m.llamacpp.nUbatch = std::min(m.llamacpp.nUbatch, m.llamacpp.nBatch); // llama.cpp caps it so
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
        if (!searches(p.server, TuneAxis::Tokens))
            break;
        Point q = p;
        q.tokens = std::clamp(int(std::lround(p.tokens * (1 + sign * s.delay))), 16, 1000000);
        if (q.tokens != p.tokens)
            out.push_back(q);
    }
    if (searches(p.server, TuneAxis::Ratio))
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
