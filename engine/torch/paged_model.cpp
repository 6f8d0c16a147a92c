#include "paged_model.h"

namespace bp {

PagedModel::PagedModel(const TorchPlacement &placement, const std::string &name, const PagedTrunk &trunk,
                       const KvPoolShape &kvShape, int positions, int vocab)
    : TorchBackend(placement), m_positions(positions),
      m_decoder(name, trunk, kvShape, positions, placement.atDevice, placement.cudaGraphs),
      m_steps(name, m_decoder, vocab, positions, placement.threads)
{
    m_info.kvBytesPerToken = kvShape.bytesPerToken();
}

Status PagedModel::prepareKv(const KvPoolRequest &request)
{
    return guarded([&] { return m_info.name + ": KV cache"; }, [&] { return m_decoder.prepare(request); });
}

std::vector<std::string> PagedModel::notes() const
{
    std::vector<std::string> out = modelNotes();
    for (std::string &line : m_decoder.notes())
        out.push_back(std::move(line));
    return out;
}

Status PagedModel::run(const BatchInput &input, std::vector<SequenceResult> &out)
{
    std::vector<Generation> gens;
    Status s = generate(input, GenerateOptions{}, gens);
    if (!s)
        return s;
    for (std::size_t i = 0; i < gens.size(); ++i) {
        out[i].status = std::move(gens[i].status);
        out[i].tokens = std::move(gens[i].tokens);
        out[i].firstTokenAfter = gens[i].firstTokenAfter;
        out[i].lastTokenAfter = gens[i].lastTokenAfter;
    }
    return Status::ok();
}

GenerationPlan PagedModel::makePlan(const BatchInput &input, std::vector<Generation> &out) const
{
    GenerationPlan plan;
    plan.requests = input.requests;
    for (std::size_t i = 0; i < input.requests.size(); ++i) {
        const Request &r = *input.requests[i];
        const int want = std::max(1, r.maxNewTokens);
        const int length = int(r.tokens.size());
        if (length < 1) {
            out[i].status = Status(StatusCode::InvalidArgument, "empty input sequence");
            continue;
        }
        if (length + want > m_positions) {
            out[i].status = Status(StatusCode::OutOfRange, "input of " + std::to_string(length) + " tokens + " +
                                                               std::to_string(want) + " new tokens exceeds the model's " +
                                                               std::to_string(m_positions) + " positions");
            continue;
        }
        bool inVocabulary = true;
        for (TokenId t : r.tokens)
            inVocabulary = inVocabulary && t >= 0 && t < m_info.vocabSize;
        if (!inVocabulary) {
            out[i].status = Status(StatusCode::OutOfRange, "a token id outside the vocabulary of " +
                                                               std::to_string(m_info.vocabSize));
            continue;
        }
        plan.members.push_back(i);
        plan.want.push_back(want);
        plan.rows.push_back(&r.tokens);
        plan.paddedLength = std::max(plan.paddedLength, length);
        plan.maxWant = std::max(plan.maxWant, want);
    }
    return plan;
}

Status PagedModel::generate(const BatchInput &input, const GenerateOptions &options, std::vector<Generation> &out)
{
    out.assign(input.requests.size(), Generation{});
    const GenerationPlan plan = makePlan(input, out);
    if (plan.members.empty())
        return Status::ok();
    return guarded(
        [&] { return m_info.name + " failed on a batch of " + std::to_string(plan.members.size()); },
        [&]() -> Status {
            if (!options.useKvCache)
                return generateRecomputing(plan, options, out);
            std::vector<const Request *> requests;
            for (std::size_t i : plan.members)
                requests.push_back(plan.requests[i]);
            std::vector<PagedGeneration> gens;
            if (Status s = m_decoder.generate(plan.rows, plan.want, requests, options.keepLogits, gens); !s)
                return s;
            for (std::size_t k = 0; k < plan.members.size(); ++k) {
                Generation &g = out[plan.members[k]];
                g.tokens = std::move(gens[k].tokens);
                g.logits = std::move(gens[k].logits);
                g.firstTokenAfter = gens[k].firstTokenAfter;
                g.lastTokenAfter = gens[k].lastTokenAfter;
            }
            return Status::ok();
        });
}

Status PagedModel::generateRecomputing(const GenerationPlan &, const GenerateOptions &, std::vector<Generation> &) const
{
    return Status(StatusCode::InvalidArgument, m_info.name + " has no recomputing reference (useKvCache = false)");
}

} // namespace bp
