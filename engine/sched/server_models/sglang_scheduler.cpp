#include "sglang_scheduler.h"

#include <algorithm>
#include <limits>

namespace bp {

namespace {
constexpr int kClipMaxNewTokens = 4096; // SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
constexpr double kInitRatio = 0.7;      // SGLANG_INIT_NEW_TOKEN_RATIO
constexpr double kMinRatioFactor = 0.14;
constexpr double kDecaySteps = 600;
} // namespace

SglangScheduler::SglangScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                                 std::shared_ptr<UnitIds> ids)
    : SequenceBooks(std::move(config), limits, model, std::move(ids))
{
    m_ratio = initRatio();
}

double SglangScheduler::initRatio() const
{
    return std::min(1.0, kInitRatio * m_config.server.sglang.scheduleConservativeness);
}

Status SglangScheduler::checkModel(const Request &r) const
{
    const SglangKnobs &k = m_config.server.sglang;
    const std::int64_t needs = std::int64_t(r.tokens.size()) + r.maxNewTokens;
    if (k.maxTotalTokens > 0 && needs > k.maxTotalTokens)
        return {StatusCode::OutOfRange, "input plus max_new_tokens needs " + std::to_string(needs) +
                                            " KV tokens; max_total_tokens is " +
                                            std::to_string(k.maxTotalTokens)};
    return Status::ok();
}

bool SglangScheduler::prefill(TimePoint now, StepWork &step)
{
    const SglangKnobs &k = m_config.server.sglang;
    const std::int64_t unlimited = std::numeric_limits<std::int64_t>::max() / 4;
    double remTotal = double(k.maxTotalTokens > 0 ? k.maxTotalTokens - m_kvTokens : unlimited);
    for (const SequencePtr &s : m_running)
        if (s->decoding())
            remTotal -= double(s->maxNew() - std::int64_t(s->generated.size())) * m_ratio;
    std::int64_t remInput = k.maxPrefillTokens;
    std::int64_t remChunk = k.chunkedPrefillSize > 0 ? k.chunkedPrefillSize : unlimited;
    bool any = false;
    // The request being chunked (running, its prompt not yet all in) goes first.
    for (const SequencePtr &s : m_running) {
        if (s->decoding())
            continue;
        const std::int64_t n = std::min(s->remaining(), remChunk);
        feed(*s, n, step);
        remInput -= n;
        remChunk -= n;
        remTotal -= double(n);
        any = true;
        if (n < s->remaining())
            return true; // still chunking: nothing else fits this batch
    }
    // The running count includes the chunked request (SGLang adds it to the batch).
    while (!m_waiting.empty() && m_running.size() < std::size_t(k.maxRunningRequests) && remChunk > 0) {
        const Sequence &front = *m_waiting.front();
        const std::int64_t input = front.remaining();
        const std::int64_t out =
            std::min<std::int64_t>(front.maxNew() - std::int64_t(front.generated.size()), kClipMaxNewTokens);
        if (double(input + out) > remTotal)
            break; // no room in the KV pool
        if (input > remInput && any)
            break; // max_prefill_tokens: the first request always goes
        Sequence &s = joinFront(now, step);
        const std::int64_t n = std::min(input, remChunk);
        feed(s, n, step);
        any = true;
        remInput -= n;
        remChunk -= n;
        remTotal -= double(input + out);
        if (n < input)
            break; // the chunked request: one at a time
    }
    return any;
}

void SglangScheduler::decide(TimePoint now, StepWork &step, std::vector<Failure> & /*failed*/)
{
    m_lastWasDecode = false;
    if (prefill(now, step))
        return;
    // Decode: every prefilled running request needs a slot for its next token.
    const SglangKnobs &k = m_config.server.sglang;
    auto decoders = [&] {
        std::int64_t n = 0;
        for (const SequencePtr &s : m_running)
            n += s->decoding() ? 1 : 0;
        return n;
    };
    if (k.maxTotalTokens > 0) {
        bool retracted = false;
        while (m_running.size() > 1 && m_kvTokens + decoders() > k.maxTotalTokens) {
            // retract_decode: fewest output tokens first, then the longest prompt.
            auto victim =
                std::min_element(m_running.begin(), m_running.end(), [](const auto &a, const auto &b) {
                    if (a->generated.size() != b->generated.size())
                        return a->generated.size() < b->generated.size();
                    return a->prompt() > b->prompt();
                });
            preempt(std::size_t(victim - m_running.begin()));
            retracted = true;
        }
        if (retracted)
            m_ratio = initRatio();
    }
    for (const SequencePtr &s : m_running)
        if (s->decoding())
            feed(*s, 1, step);
    m_lastWasDecode = !step.items.empty();
}

void SglangScheduler::stepDone(const StepWork &)
{
    if (!m_lastWasDecode)
        return;
    const double init = initRatio(), floor = init * kMinRatioFactor;
    m_ratio = std::max(floor, m_ratio - (init - floor) / kDecaySteps);
}

} // namespace bp
