#include "engine/sim/simulation/cost_backend.h"

#include <algorithm>
#include <limits>

namespace bp {

std::optional<CostNoise> parseCostNoise(std::string_view name)
{
    for (CostNoise n : {CostNoise::None, CostNoise::Mean, CostNoise::Drawn})
        if (costNoiseName(n) == name)
            return n;
    return std::nullopt;
}

std::string_view costNoiseName(CostNoise noise)
{
    switch (noise) {
    case CostNoise::None: return "none";
    case CostNoise::Mean: return "mean";
    case CostNoise::Drawn: return "drawn";
    }
    return "none";
}

CostBackend::CostBackend(const CostModel &cost, VirtualClock &clock, NoiseDraws &noise, ModelLimits limits,
                         OutputKind output, int positions)
    : m_cost(cost), m_clock(clock), m_noise(noise), m_output(output), m_positions(positions)
{
    m_info.name = "simulated";
    m_info.device = "virtual";
    m_info.vocabSize = limits.vocabSize;
    m_info.maxSequenceLength = limits.maxSequenceLength;
    m_info.generative = output == OutputKind::Generated;
}

Duration CostBackend::charge(double seconds, bool iteration)
{
    switch (m_noise.mode()) {
    case CostNoise::None: break;
    case CostNoise::Mean: seconds *= m_cost.meanResidual(iteration); break;
    case CostNoise::Drawn: seconds *= m_cost.residualAt(m_noise.uniform(), iteration); break;
    }
    return fromSeconds(std::max(0.0, seconds));
}

int CostBackend::outputTokens(const Request &r) const
{
    switch (m_output) {
    case OutputKind::None: return 0;
    case OutputKind::Echo:
        // builtin:echo: max_new_tokens n > 0 generates n tokens, 0 returns the input
        return r.maxNewTokens > 0 ? r.maxNewTokens : int(r.tokens.size());
    case OutputKind::Generated: return std::max(1, r.maxNewTokens);
    }
    return 0;
}

Status CostBackend::run(const BatchInput &input, std::vector<SequenceResult> &out)
{
    const std::size_t n = input.requests.size();
    out.assign(n, SequenceResult{});
    std::vector<int> wants;
    std::vector<bool> runs(n, true);
    int longest = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const Request &r = *input.requests[i];
        if (m_output == OutputKind::Generated && m_positions > 0 &&
            int(r.tokens.size()) + std::max(1, r.maxNewTokens) > m_positions) {
            runs[i] = false; // the decoder refuses it; the rest run
            out[i].status = {StatusCode::OutOfRange, "input + max_new_tokens would pass the model's " +
                                                         std::to_string(m_positions) + " positions"};
            continue;
        }
        wants.push_back(r.maxNewTokens);
        longest = std::max(longest, int(r.tokens.size()));
    }
    if (wants.empty())
        return Status::ok();
    const CostModel::BatchCost cost =
        m_cost.batchCost(int(wants.size()), std::max(input.paddedLength, longest), wants);
    const Duration charged = charge(toSeconds(cost.run) * m_cost.slowdownAt(m_units), false);
    // The charged run scales every predicted token time alike: the
    // prefill's share of it, and each member's own last token (the decode
    // steps up to its want, over the rows still running then), as the
    // decoder reports them — so the engine's outcome gives the simulated
    // request the one TPOT (timePerOutputToken, engine/core/request.h).
    auto scaled = [&](Duration d) {
        return cost.run > Duration::zero()
                   ? Duration(std::int64_t(double(d.count()) *
                                           (double(charged.count()) / double(cost.run.count()))))
                   : d;
    };
    const Duration first = scaled(cost.firstToken);
    std::size_t member = 0; // a running member's index in `wants` and cost.lastToken
    for (std::size_t i = 0; i < n; ++i) {
        if (!runs[i])
            continue;
        const std::size_t k = member++;
        const int tokens = outputTokens(*input.requests[i]);
        out[i].tokens.assign(std::size_t(tokens), 0);
        if (first > Duration::zero() && tokens > 0) {
            out[i].firstTokenAfter = first;
            out[i].lastTokenAfter =
                k < cost.lastToken.size() ? std::max(first, scaled(cost.lastToken[k])) : first;
        }
    }
    m_clock.charge(charged);
    return Status::ok();
}

Status CostBackend::step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out)
{
    out.assign(items.size(), StepOutcome{});
    if (Status s = checkDistinctSequences(items); !s)
        return s;
    // One shape per forward pass (StepItem::passes; one pass unless a
    // server model split the step).
    std::vector<StepShape> shapes(1);
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto fed = std::int64_t(items[i].tokens.size());
        const auto it = m_lengths.find(items[i].sequence);
        std::int64_t cached = it != m_lengths.end() ? it->second : 0;
        std::int64_t prefixed = 0;
        if (it == m_lengths.end() && !items[i].prefix.empty()) {
            // Prefix caching: it starts from kept blocks, attends to them and
            // feeds only the rest: the step is priced on what it feeds.
            auto blocks = m_kept.chain(items[i].prefix);
            if (!blocks) {
                out[i].status = blocks.status();
                continue;
            }
            for (std::int64_t b : *blocks)
                prefixed += b;
            cached = prefixed;
        }
        if (m_positions > 0 && cached + fed > m_positions) {
            out[i].status = {StatusCode::OutOfRange, "the sequence would pass the model's " +
                                                         std::to_string(m_positions) + " positions"};
            continue;
        }
        std::int64_t before = cached, left = fed;
        for (const StepItem::PassPiece &piece : items[i].passes) {
            const std::int64_t n = std::min(left, std::max<std::int64_t>(0, piece.tokens));
            const std::size_t pass = std::size_t(std::max(0, piece.pass));
            if (pass >= shapes.size())
                shapes.resize(pass + 1);
            shapes[pass].add(before, n, piece.kvCells > 0 && m_cost.attentionOnKvView ? piece.kvCells : -1);
            before += n;
            left -= n;
        }
        shapes.front().add(before, left); // tokens no piece named
        shapes.front().copiedCells += std::max<std::int64_t>(0, items[i].copiedCells);
        m_lengths[items[i].sequence] = cached + fed;
        m_cached += fed + prefixed;
        for (const KvBlock &kb : items[i].publish)
            if (kb.start >= 0 && kb.tokens > 0 && kb.start + kb.tokens <= cached + fed)
                m_kept.keep(kb.hash, kb.tokens);
    }
    double seconds = 0;
    for (const StepShape &shape : shapes)
        seconds += m_cost.iterationSeconds(shape);
    m_clock.charge(charge(seconds, true));
    return Status::ok();
}

CostBackend::DecodeSpan CostBackend::decodeSpan(std::span<const std::uint64_t> sequences) const
{
    DecodeSpan span;
    span.steps = std::numeric_limits<int>::max();
    for (const std::uint64_t id : sequences) {
        const auto it = m_lengths.find(id);
        if (it == m_lengths.end() || it->second <= 0)
            return {}; // not decoding on this model: no run
        span.context += it->second;
        if (m_positions > 0) // step() refuses a sequence past the positions
            span.steps =
                int(std::min<std::int64_t>(span.steps, std::max<std::int64_t>(0, m_positions - it->second)));
    }
    return span;
}

Duration CostBackend::chargeDecodes(int n, std::int64_t context)
{
    StepShape shape;
    shape.decodes = n;
    shape.decodeContext = context + n; // each attends to its context and the token it feeds
    return charge(m_cost.iterationSeconds(shape), true);
}

void CostBackend::advanceDecodes(std::span<const std::uint64_t> sequences, int steps)
{
    for (const std::uint64_t id : sequences)
        m_lengths[id] += steps;
    m_cached += std::int64_t(sequences.size()) * steps;
}

void CostBackend::release(std::uint64_t sequence)
{
    if (const auto it = m_lengths.find(sequence); it != m_lengths.end()) {
        m_cached -= it->second;
        m_lengths.erase(it);
    }
}

} // namespace bp
