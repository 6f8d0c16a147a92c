#include "vllm_scheduler.h"

#include <algorithm>
#include <limits>

namespace bp {

Status VllmScheduler::checkModel(const Request &r) const
{
    const VllmKnobs &k = m_config.server.vllm;
    const int len = int(r.tokens.size());
    if (!k.chunkedPrefill && len > k.maxNumBatchedTokens)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; without chunked prefill vLLM needs "
                                            "max_num_batched_tokens (" +
                                            std::to_string(k.maxNumBatchedTokens) + ") to hold a prompt"};
    if (k.kvCacheTokens > 0 && blocks(len + r.maxNewTokens) > k.kvCacheTokens / k.blockSize)
        return {StatusCode::OutOfRange,
                "input plus max_new_tokens needs " + std::to_string(blocks(len + r.maxNewTokens)) +
                    " KV blocks; the cache has " + std::to_string(k.kvCacheTokens / k.blockSize)};
    return Status::ok();
}

std::int64_t VllmScheduler::blocks(std::int64_t tokens) const
{
    const std::int64_t b = m_config.server.vllm.blockSize;
    return (tokens + b - 1) / b;
}

std::int64_t VllmScheduler::usedBlocks() const
{
    std::int64_t n = 0;
    for (const SequencePtr &s : m_running)
        n += blocks(s->cached + s->planned);
    return n;
}

bool VllmScheduler::fits(const Sequence &s, std::int64_t tokens) const
{
    const VllmKnobs &k = m_config.server.vllm;
    if (k.kvCacheTokens <= 0)
        return true;
    const std::int64_t extra = blocks(s.cached + s.planned + tokens) - blocks(s.cached + s.planned);
    return usedBlocks() + extra <= k.kvCacheTokens / k.blockSize;
}

void VllmScheduler::decide(TimePoint now, StepWork &step, std::vector<Failure> & /*failed*/)
{
    const VllmKnobs &k = m_config.server.vllm;
    std::int64_t budget = k.maxNumBatchedTokens;
    auto chunkOf = [&](const Sequence &s) {
        std::int64_t n = s.remaining();
        if (k.longPrefillTokenThreshold > 0 && n > 1)
            n = std::min<std::int64_t>(n, k.longPrefillTokenThreshold);
        return std::min(n, budget);
    };
    bool preempted = false;
    for (std::size_t i = 0; i < m_running.size() && budget > 0;) {
        Sequence &s = *m_running[i];
        const std::int64_t n = chunkOf(s);
        bool selfPreempted = false;
        while (!fits(s, n)) {
            // vLLM: self.running.pop() — the last to join goes first.
            const std::size_t victim = m_running.size() - 1;
            preempted = true;
            selfPreempted = victim == i;
            preempt(victim);
            if (selfPreempted)
                break;
        }
        if (selfPreempted)
            break;
        feed(s, n, step);
        budget -= n;
        ++i;
    }
    if (preempted)
        return;
    while (!m_waiting.empty() && budget > 0 && m_running.size() < std::size_t(k.maxNumSeqs)) {
        const Sequence &front = *m_waiting.front();
        std::int64_t n = front.remaining();
        // A preempted request's prompt + output can outgrow the budget:
        // vLLM feeds it in budget-sized pieces rather than stall the queue.
        if (!k.chunkedPrefill && n > budget && n <= k.maxNumBatchedTokens)
            break; // FCFS: it waits for a step with room for all of it
        n = chunkOf(front);
        if (!fits(front, n))
            break; // no free blocks: it waits
        Sequence &s = joinFront(now, step);
        feed(s, n, step);
        budget -= n;
    }
}

} // namespace bp
