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

// llama.cpp's rounding of context sizes and KV views (GGML_PAD to 256).
std::int64_t padCells(std::int64_t n)
{
    constexpr std::int64_t pad = LlamaCppScheduler::kKvPad;
    return (n + pad - 1) / pad * pad;
}

} // namespace

std::int64_t LlamaCppScheduler::cacheTokens(const LlamaCppKnobs &k)
{
    return padCells(k.nCtx);
}

std::int64_t LlamaCppScheduler::slotContext(const LlamaCppKnobs &k)
{
    const std::int64_t cache = cacheTokens(k);
    return k.kvUnified ? cache : padCells(cache / std::max(1, k.nParallel));
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

std::int64_t LlamaCppScheduler::bookSlots()
{
    const std::size_t slots = std::size_t(std::max(1, m_config.server.llamacpp.nParallel));
    if (m_slotOwner.size() != slots) { // a new slot count: the server restarted
        m_slotOwner.assign(slots, 0);
        m_slotRelease.assign(slots, 0);
        m_slotCells.assign(slots, 0);
        m_slotUnsaved.assign(slots, false);
    }
    for (std::size_t i = 0; i < slots; ++i)
        if (m_slotOwner[i] != 0 &&
            std::none_of(m_running.begin(), m_running.end(),
                         [&](const SequencePtr &s) { return s->id == m_slotOwner[i]; })) {
            m_slotOwner[i] = 0;
            m_slotRelease[i] = ++m_releases;
            m_slotUnsaved[i] = m_slotCells[i] > 0;
        }
    std::int64_t copied = 0;
    const auto save = [&](std::size_t i) {
        if (m_slotUnsaved[i])
            copied += m_slotCells[i];
        m_slotUnsaved[i] = false;
    };
    bool started = false;
    for (const SequencePtr &s : m_running) {
        if (slotOf(s->id) >= 0)
            continue;
        int best = -1;
        for (std::size_t i = 0; i < slots; ++i) // `<=`: ties go to the highest id, as the server's loop
            if (m_slotOwner[i] == 0 && (best < 0 || m_slotRelease[i] <= m_slotRelease[std::size_t(best)]))
                best = int(i);
        if (best < 0)
            break;               // more running than slots: a smaller -np while they ran; they keep no slot
        save(std::size_t(best)); // get_available_slot: the slot's prompt before it is replaced
        m_slotOwner[std::size_t(best)] = s->id;
        m_slotCells[std::size_t(best)] = 0;
        started = true;
    }
    if (started) // cache_idle_slots: every idle slot, after the launch
        for (std::size_t i = 0; i < slots; ++i)
            if (m_slotOwner[i] == 0)
                save(i);
    return copied;
}

int LlamaCppScheduler::slotOf(std::uint64_t sequence) const
{
    for (std::size_t i = 0; i < m_slotOwner.size(); ++i)
        if (m_slotOwner[i] == sequence)
            return int(i);
    return -1;
}

std::vector<std::vector<StepItem::PassPiece>> LlamaCppScheduler::passes(const std::vector<BatchEntry> &batch,
                                                                        int nUbatch, bool perSlotCache)
{
    const std::int64_t ub = std::max(1, nUbatch);
    std::vector<std::vector<StepItem::PassPiece>> out(batch.size());
    std::vector<std::int64_t> left;
    for (const BatchEntry &e : batch)
        left.push_back(std::max<std::int64_t>(0, e.tokens));
    int pass = 0;
    if (!perSlotCache) { // split_simple: every n_ubatch tokens in the batch's order
        std::int64_t room = ub;
        for (std::size_t i = 0; i < batch.size(); ++i)
            while (left[i] > 0) {
                const std::int64_t n = std::min(left[i], room);
                out[i].push_back({pass, n});
                left[i] -= n;
                if ((room -= n) == 0)
                    ++pass, room = ub;
            }
        return out;
    }
    // split_equal(sequential): the first entry with tokens left, then each
    // later one whose slot is the previous chosen slot + 1; as many tokens
    // from each as the shortest has left, at most n_ubatch in all.
    for (;;) {
        std::vector<std::size_t> chosen;
        for (std::size_t i = 0; i < batch.size(); ++i)
            if (left[i] > 0 && (chosen.empty() || batch[i].slot == batch[chosen.back()].slot + 1))
                chosen.push_back(i);
        if (chosen.empty())
            return out;
        std::int64_t k = std::max<std::int64_t>(1, ub / std::int64_t(chosen.size()));
        for (std::size_t i : chosen)
            k = std::min(k, left[i]);
        for (std::size_t i : chosen) {
            out[i].push_back({pass, k});
            left[i] -= k;
        }
        ++pass;
    }
}

void LlamaCppScheduler::decide(TimePoint now, StepWork &step, std::vector<Failure> & /*failed*/)
{
    const LlamaCppKnobs &k = m_config.server.llamacpp;
    joinWaiting(now, step);
    const std::int64_t copied = bookSlots();
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
    // The batch's order (decodes by slot, then prompts by slot) and its
    // passes. feed() added the decodes first, then the prompts.
    std::vector<std::size_t> order(step.items.size());
    std::vector<BatchEntry> batch(step.items.size());
    for (std::size_t i = 0; i < step.items.size(); ++i) {
        order[i] = i;
        batch[i] = {slotOf(step.items[i].sequence), std::int64_t(step.items[i].tokens.size())};
    }
    const std::size_t decodes = std::size_t(step.decodeTokens);
    const auto bySlot = [&](std::size_t a, std::size_t b) { return batch[a].slot < batch[b].slot; };
    std::stable_sort(order.begin(), order.begin() + std::ptrdiff_t(std::min(decodes, order.size())), bySlot);
    if (decodes < order.size())
        std::stable_sort(order.begin() + std::ptrdiff_t(decodes), order.end(), bySlot);
    std::vector<BatchEntry> ordered;
    for (std::size_t i : order)
        ordered.push_back(batch[i]);
    const bool perSlotCache = !k.kvUnified && k.nParallel > 1;
    auto pieces = passes(ordered, k.nUbatch, perSlotCache);
    attendTo(step, order, pieces, perSlotCache);
    for (std::size_t j = 0; j < order.size(); ++j)
        step.items[order[j]].passes = pieces[j];
    if (copied > 0 && !step.items.empty())
        step.items.front().copiedCells = copied;
    // What each slot will hold after this turn (saved when a later task
    // starts, if it is idle by then).
    for (const SequencePtr &s : m_running)
        if (const int slot = slotOf(s->id); slot >= 0)
            m_slotCells[std::size_t(slot)] = s->cached + s->planned;
}

void LlamaCppScheduler::attendTo(const StepWork &step, const std::vector<std::size_t> &order,
                                 std::vector<std::vector<StepItem::PassPiece>> &pieces,
                                 bool perSlotCache) const
{
    const LlamaCppKnobs &k = m_config.server.llamacpp;
    // Each item's context before the step, and the pass count.
    std::vector<std::int64_t> before(order.size(), 0);
    int passCount = 0;
    for (std::size_t j = 0; j < order.size(); ++j) {
        const std::uint64_t id = step.items[order[j]].sequence;
        for (const SequencePtr &s : m_running)
            if (s->id == id)
                before[j] = s->cached;
        for (const StepItem::PassPiece &p : pieces[j])
            passCount = std::max(passCount, p.pass + 1);
    }
    const std::int64_t cells = perSlotCache ? slotContext(k) : cacheTokens(k);
    // A stream's cells in use after pass p: its sequence's context through
    // p (one cache: every running sequence's).
    const auto usedAfter = [&](std::size_t j, int pass) {
        std::int64_t used = before[j];
        for (const StepItem::PassPiece &q : pieces[j])
            if (q.pass <= pass)
                used += q.tokens;
        return used;
    };
    for (int pass = 0; pass < passCount; ++pass) {
        std::int64_t used = 0;
        for (std::size_t j = 0; j < order.size(); ++j) {
            if (!perSlotCache) {
                used += usedAfter(j, pass);
                continue;
            }
            for (const StepItem::PassPiece &q : pieces[j])
                if (q.pass == pass)
                    used = std::max(used, usedAfter(j, pass));
        }
        if (!perSlotCache) // the running sequences that are not in this step hold cells too
            for (const SequencePtr &s : m_running)
                if (s->planned == 0)
                    used += s->cached;
        // llama_kv_cache::get_n_kv: the largest stream's used cells, padded
        // to 256, at most the stream's size.
        const std::int64_t padded = std::min(cells, std::max(kKvPad, padCells(used)));
        for (auto &item : pieces)
            for (StepItem::PassPiece &q : item)
                if (q.pass == pass)
                    q.kvCells = padded;
    }
}

} // namespace bp
