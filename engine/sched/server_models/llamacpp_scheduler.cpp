#include "llamacpp_scheduler.h"

#include <algorithm>
#include <limits>

namespace bp {

LlamaCppScheduler::LlamaCppScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                                     std::shared_ptr<UnitIds> ids)
    : SequenceBooks(std::move(config), limits, model, std::move(ids), Parts{.prefixCache = true})
{
}

namespace {

std::int64_t padTo256(std::int64_t n)
{
    return (n + 255) / 256 * 256;
}

} // namespace

std::int64_t LlamaCppScheduler::cacheTokens(const LlamaCppKnobs &k)
{
    return padTo256(k.nCtx);
}

std::int64_t LlamaCppScheduler::slotContext(const LlamaCppKnobs &k)
{
    const std::int64_t cache = cacheTokens(k);
    return k.kvUnified ? cache : padTo256(cache / std::max(1, k.nParallel));
}

Status LlamaCppScheduler::checkModel(const Request &r) const
{
    const std::int64_t ctx = slotContext(m_config.server.llamacpp);
    if (std::int64_t(r.tokens.size()) >= ctx)
        // The server's answer (HTTP 400), and a refusal of this config's, not
        // of the model's: tune counts it against the config (an out_of_range
        // one would be left out as beyond the model under any config).
        return {StatusCode::InvalidArgument, "request (" + std::to_string(r.tokens.size()) +
                                            " tokens) exceeds the available context size (" +
                                            std::to_string(ctx) + " tokens), try increasing it"};
    return Status::ok();
}

void LlamaCppScheduler::joinWaiting(TimePoint now, StepWork &step)
{
    const LlamaCppKnobs &k = m_config.server.llamacpp;
    const std::int64_t ctx = slotContext(k);
    while (!m_waiting.empty() && m_running.size() < std::size_t(std::max(1, k.nParallel))) {
        Sequence &front = *m_waiting.front();
        // process_token: the generation stops, truncated, when the slot's
        // context is full (context shift off).
        const std::int64_t room = std::max<std::int64_t>(1, ctx - front.prompt() - 1);
        front.pending.request.maxNewTokens = int(std::min<std::int64_t>(front.maxNew(), room));
        // cache_prompt: the cached prefix is not computed again.
        const PrefixCache::Match hit = matchPrefix(front);
        front.cached = matchTokens(hit);
        startFromPrefix(front, hit, step, now);
        joinFront(now, step);
    }
}

void LlamaCppScheduler::decide(TimePoint now, StepWork &step, std::vector<Failure> & /*failed*/)
{
    const LlamaCppKnobs &k = m_config.server.llamacpp;
    joinWaiting(now, step);
    std::int64_t budget = std::max(k.nBatch, k.nParallel);
    // The shared KV cache's room (kv_unified); separate caches hold a slot's
    // whole context by construction.
    std::int64_t room = k.kvUnified ? std::max<std::int64_t>(0, cacheTokens(k) - kvTokens())
                                    : std::numeric_limits<std::int64_t>::max();
    // Every generating slot's token first (pre_decode's `generating`).
    for (const SequencePtr &s : m_running)
        if (s->decoding()) {
            feed(*s, 1, step);
            --budget;
            --room;
        }
    // Then prompts, slot by slot, while the batch has room.
    for (const SequencePtr &s : m_running) {
        if (budget <= 0 || room <= 0)
            break;
        if (s->decoding() || s->planned > 0)
            continue;
        const std::int64_t n = std::min({s->remaining(), budget, room});
        if (n <= 0)
            continue;
        feed(*s, n, step);
        budget -= n;
        room -= n;
    }
}

} // namespace bp
