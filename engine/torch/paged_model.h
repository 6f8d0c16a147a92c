// The base of every decoder on the paged step (builtin:tiny-decoder, the
// Hugging Face decoders): Backend::run and DecoderModel::generate over the
// request-level path of PagedDecoder, steps() over PagedStepModel, the KV
// pool's preparation and notes. A derived model supplies its trunk
// (PagedTrunk), and may supply a recomputing reference for tests.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include "paged_decoder.h"
#include "tiny_decoder.h"
#include "torch_backend.h"
#include "trunk_steps.h"

#include <memory>
#include <string>
#include <vector>

namespace bp {

// Per-call bookkeeping of a generation: which requests take part and how
// many tokens each still needs.
struct GenerationPlan {
    std::vector<std::size_t> members; // request indices that run, in batch order
    std::vector<int> want;            // tokens each member asks for (>= 1)
    std::vector<const std::vector<TokenId> *> rows;
    std::vector<const Request *> requests; // every request of the batch (Request::onToken)
    int paddedLength = 0;
    int maxWant = 0;
};

class PagedModel : public TorchBackend<DecoderModel> {
public:
    StepModel *steps() override { return &m_steps; }
    Status prepareKv(const KvPoolRequest &request) override;
    std::vector<std::string> notes() const override;
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override;
    Status generate(const BatchInput &input, const GenerateOptions &options, std::vector<Generation> &out) override;

protected:
    // `trunk` is the derived class's member: stored, not used until the first step.
    PagedModel(const TorchPlacement &placement, const std::string &name, const PagedTrunk &trunk,
               const KvPoolShape &kvShape, int positions, int vocab);
    // The reference generation without the cache (useKvCache = false); the
    // default refuses it.
    virtual Status generateRecomputing(const GenerationPlan &plan, const GenerateOptions &options,
                                       std::vector<Generation> &out) const;
    // Lines the model adds to notes() before the pool's.
    virtual std::vector<std::string> modelNotes() const { return {}; }

    int m_positions;
    PagedDecoder m_decoder;
    PagedStepModel m_steps;

private:
    GenerationPlan makePlan(const BatchInput &input, std::vector<Generation> &out) const;
};

} // namespace bp
