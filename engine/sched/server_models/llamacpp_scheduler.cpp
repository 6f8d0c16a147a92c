#include "llamacpp_scheduler.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace bp {

namespace {
constexpr double kSlotPromptSimilarity = 0.1; // common_params::slot_prompt_similarity
} // namespace

LlamaCppScheduler::LlamaCppScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                                     std::shared_ptr<UnitIds> ids)
    : SequenceBooks(std::move(config), limits, model, std::move(ids))
{
}

std::int64_t LlamaCppScheduler::slotContext(const LlamaCppKnobs &k)
{
    return k.kvUnified ? k.nCtx : k.nCtx / std::max(1, k.nParallel);
}

Status LlamaCppScheduler::checkModel(const Request &r) const
{
    const std::int64_t ctx = slotContext(m_config.server.llamacpp);
    if (std::int64_t(r.tokens.size()) >= ctx)
        return {StatusCode::OutOfRange, "request (" + std::to_string(r.tokens.size()) +
                                            " tokens) exceeds the available context size (" +
                                            std::to_string(ctx) + " tokens), try increasing it"};
    return Status::ok();
}

void LlamaCppScheduler::syncSlots()
{
    const std::size_t n = std::size_t(std::max(1, m_config.server.llamacpp.nParallel));
    if (m_slots.size() < n)
        m_slots.resize(n);
    for (Slot &slot : m_slots) {
        if (slot.sequence == 0)
            continue;
        const bool running = std::any_of(m_running.begin(), m_running.end(),
                                         [&](const SequencePtr &s) { return s->id == slot.sequence; });
        if (!running) {
            slot.sequence = 0;
            slot.lastUsed = m_turn;
        }
    }
}

std::size_t LlamaCppScheduler::pickSlot(const Sequence &s, std::int64_t &kept) const
{
    const auto &tokens = s.pending.request.tokens;
    const std::size_t slots =
        std::min<std::size_t>(m_slots.size(), std::size_t(m_config.server.llamacpp.nParallel));
    std::size_t best = slots;
    double bestSimilarity = 0;
    std::int64_t bestCommon = 0;
    for (std::size_t i = 0; i < slots; ++i) {
        const Slot &slot = m_slots[i];
        if (slot.sequence != 0 || slot.prompt.empty())
            continue;
        const auto mismatch =
            std::mismatch(slot.prompt.begin(), slot.prompt.end(), tokens.begin(), tokens.end());
        const std::int64_t common = mismatch.first - slot.prompt.begin();
        const double similarity = double(common) / double(std::max<std::size_t>(1, tokens.size()));
        if (similarity > bestSimilarity && similarity > kSlotPromptSimilarity) {
            best = i;
            bestSimilarity = similarity;
            bestCommon = common;
        }
    }
    if (best == slots) { // the least recently used free slot
        std::uint64_t oldest = std::numeric_limits<std::uint64_t>::max();
        for (std::size_t i = 0; i < slots; ++i)
            if (m_slots[i].sequence == 0 && m_slots[i].lastUsed < oldest) {
                oldest = m_slots[i].lastUsed;
                best = i;
            }
    }
    // A slot keeps its common prefix with whatever prompt comes; the last
    // prompt token is always computed again (its logits are needed).
    if (best < slots && !m_slots[best].prompt.empty()) {
        const auto mismatch = std::mismatch(m_slots[best].prompt.begin(), m_slots[best].prompt.end(),
                                            tokens.begin(), tokens.end());
        bestCommon = mismatch.first - m_slots[best].prompt.begin();
    }
    kept = std::clamp<std::int64_t>(bestCommon, 0, std::int64_t(tokens.size()) - 1);
    return best;
}

void LlamaCppScheduler::joinWaiting(TimePoint now, StepWork &step)
{
    const LlamaCppKnobs &k = m_config.server.llamacpp;
    const std::int64_t ctx = slotContext(k);
    while (!m_waiting.empty()) {
        std::int64_t kept = 0;
        const std::size_t index = pickSlot(*m_waiting.front(), kept);
        if (index >= m_slots.size() || index >= std::size_t(k.nParallel))
            return; // every slot busy: the rest stay deferred
        Sequence &s = joinFront(now, step);
        Slot &slot = m_slots[index];
        slot.sequence = s.id;
        slot.prompt = s.pending.request.tokens;
        // process_token: generation stops (truncated) when the context is full.
        const std::int64_t room = std::max<std::int64_t>(1, ctx - s.prompt() - 1);
        s.pending.request.maxNewTokens = int(std::min<std::int64_t>(s.maxNew(), room));
        if (kept > 0) {
            s.cached = kept;
            s.cachedPromptTokens = int(kept);
            m_kvTokens += kept;
            m_reused += kept;
        }
    }
}

void LlamaCppScheduler::decide(TimePoint now, StepWork &step, std::vector<Failure> & /*failed*/)
{
    const LlamaCppKnobs &k = m_config.server.llamacpp;
    ++m_turn;
    syncSlots();
    joinWaiting(now, step);
    std::unordered_map<std::uint64_t, Sequence *> byId;
    for (const SequencePtr &s : m_running)
        byId[s->id] = s.get();
    std::int64_t budget = std::max(k.nBatch, k.nParallel);
    // The shared KV cache's room (kv_unified); separate caches hold a slot's
    // whole context by construction.
    std::int64_t room = k.kvUnified ? std::max<std::int64_t>(0, k.nCtx - m_kvTokens)
                                    : std::numeric_limits<std::int64_t>::max();
    // Every generating slot's token, in slot order.
    for (const Slot &slot : m_slots)
        if (auto it = byId.find(slot.sequence);
            slot.sequence != 0 && it != byId.end() && it->second->decoding()) {
            feed(*it->second, 1, step);
            --budget;
            --room;
        }
    // Then prompts, slot by slot, while the batch has room.
    for (const Slot &slot : m_slots) {
        if (budget <= 0 || room <= 0)
            break;
        const auto it = byId.find(slot.sequence);
        if (slot.sequence == 0 || it == byId.end() || it->second->decoding())
            continue;
        Sequence &s = *it->second;
        const std::int64_t n = std::min({s.remaining(), budget, room});
        if (n <= 0)
            continue;
        feed(s, n, step);
        budget -= n;
        room -= n;
    }
}

void LlamaCppScheduler::stepDone(const StepWork &)
{
    syncSlots();
}

} // namespace bp
