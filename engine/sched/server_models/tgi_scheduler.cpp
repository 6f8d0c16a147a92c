#include "tgi_scheduler.h"

#include <cmath>

namespace bp {

Status TgiScheduler::checkModel(const Request &r) const
{
    const TgiKnobs &k = m_config.server.tgi;
    const int len = int(r.tokens.size());
    if (size() >= std::size_t(k.maxConcurrentRequests))
        return {StatusCode::QueueFull, "Model is overloaded: max_concurrent_requests (" +
                                           std::to_string(k.maxConcurrentRequests) + ") in flight"};
    if (len > k.maxBatchPrefillTokens)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; max_batch_prefill_tokens is " +
                                            std::to_string(k.maxBatchPrefillTokens)};
    if (len + r.maxNewTokens > k.maxBatchTotalTokens)
        return {StatusCode::OutOfRange,
                "input plus max_new_tokens is " + std::to_string(len + r.maxNewTokens) +
                    " tokens; max_batch_total_tokens is " + std::to_string(k.maxBatchTotalTokens)};
    return Status::ok();
}

std::size_t TgiScheduler::nextBatch(std::optional<std::size_t> minSize, std::optional<std::size_t> maxSize,
                                    std::int64_t tokenBudget) const
{
    const TgiKnobs &k = m_config.server.tgi;
    if (minSize && m_waiting.size() < *minSize)
        return 0;
    if (tokenBudget <= 0)
        return 0;
    std::int64_t prefill = 0, decode = 0;
    std::size_t n = 0;
    for (const SequencePtr &s : m_waiting) {
        if (maxSize && n >= *maxSize)
            break;
        const std::int64_t p = s->remaining();
        const std::int64_t d = s->maxNew() - std::int64_t(s->generated.size());
        if (prefill + p > k.maxBatchPrefillTokens || prefill + p + decode + d > tokenBudget)
            break;
        prefill += p;
        decode += d;
        ++n;
    }
    if (minSize && n < *minSize)
        return 0;
    return n;
}

void TgiScheduler::decide(TimePoint now, StepWork &step, std::vector<Failure> & /*failed*/)
{
    const TgiKnobs &k = m_config.server.tgi;
    const std::optional<std::size_t> maxBatch =
        k.maxBatchSize > 0 ? std::optional<std::size_t>(std::size_t(k.maxBatchSize)) : std::nullopt;
    m_lastWasPrefill = false;
    std::size_t take = 0;
    if (m_running.empty()) {
        take = nextBatch(std::nullopt, maxBatch, k.maxBatchTotalTokens);
        m_decodeNext = false; // the inner loop may concatenate before its first decode
    } else if (!m_decodeNext) {
        std::int64_t held = 0; // batch.max_tokens: every running request's prompt + max_new_tokens
        for (const SequencePtr &s : m_running)
            held += s->prompt() + s->maxNew();
        const std::size_t batchSize = m_running.size();
        std::optional<std::size_t> minSize;
        if (m_waitingTokens < k.maxWaitingTokens)
            minSize = std::size_t(std::floor(double(batchSize) * k.waitingServedRatio));
        std::optional<std::size_t> maxSize;
        if (maxBatch)
            maxSize = *maxBatch > batchSize ? *maxBatch - batchSize : 0;
        take = nextBatch(minSize, maxSize, std::int64_t(k.maxBatchTotalTokens) - held);
        if (take > 0)
            m_decodeNext = true;
    }
    if (take > 0) {
        // Prefill the new batch alone; the running batch waits.
        for (std::size_t i = 0; i < take; ++i) {
            Sequence &s = joinFront(now, step);
            feed(s, s.remaining(), step);
        }
        m_lastWasPrefill = true;
        return;
    }
    m_decodeNext = false;
    for (const SequencePtr &s : m_running)
        feed(*s, 1, step);
}

void TgiScheduler::stepDone(const StepWork &)
{
    if (m_lastWasPrefill)
        m_waitingTokens = 1;
    else
        ++m_waitingTokens;
}

} // namespace bp
