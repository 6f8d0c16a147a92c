#include "tiny_decoder.h"

#include "engine/core/nvtx.h"

#include "torch_backend.h"
#include "transformer_layers.h"
#include "trunk_steps.h"

#include <ATen/CPUGeneratorImpl.h>

namespace bp {

namespace {

// Per-call bookkeeping of a generation: which requests take part and how
// many tokens each still needs. Plain C++; the tensors live in generate*().
struct Plan {
    std::vector<std::size_t> members; // request indices that run, in batch order
    std::vector<int> want;            // tokens each member asks for (>= 1)
    std::vector<const std::vector<TokenId> *> rows;
    std::vector<const Request *> requests; // every request of the batch (Request::onToken)
    int paddedLength = 0;
    int maxWant = 0;
};

class TinyDecoder final : public TorchBackend<DecoderModel> {
public:
    TinyDecoder(const TransformerShape &shape, const TorchPlacement &placement, std::uint64_t seed)
        : TorchBackend(placement), m_shape(shape), m_trunk(shape, m_weights),
          m_decoder("builtin:tiny-decoder", m_trunk,
                    KvPoolShape{shape.layers, shape.heads, shape.headDim(), placement.dtype}, shape.maxPositions,
                    placement.atDevice, placement.cudaGraphs),
          m_steps("builtin:tiny-decoder", m_decoder, shape.vocab, shape.maxPositions, placement.threads)
    {
        at::Generator gen = at::detail::createCPUGenerator(seed);
        m_weights = initTrunk(shape, gen, m_device, placement.dtype);
        m_info.name = "builtin:tiny-decoder";
        m_info.vocabSize = shape.vocab;
        m_info.maxSequenceLength = shape.maxPositions - 1; // room for at least one generated token
        m_info.generative = true;
        m_info.maxNewTokensLimit = shape.maxPositions - 1;
        m_info.parameters = countParameters(m_weights);
        m_info.kvBytesPerToken = m_decoder.shape().bytesPerToken();
        m_info.description = "GPT-style decoder with a paged KV cache, preset '" + shape.preset +
                             "': " + std::to_string(shape.layers) + " layers, d_model " +
                             std::to_string(shape.dModel) + ", " + std::to_string(shape.heads) +
                             " heads, vocab " + std::to_string(shape.vocab) + ", " + m_info.dtype +
                             "; greedy generation, seeded random weights";
    }

    StepModel *steps() override { return &m_steps; }

    Status prepareKv(const KvPoolRequest &request) override
    {
        return guarded([] { return std::string("builtin:tiny-decoder: KV cache"); },
                       [&] { return m_decoder.prepare(request); });
    }
    std::vector<std::string> notes() const override { return m_decoder.notes(); }

    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
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

    Status generate(const BatchInput &input, const GenerateOptions &options,
                    std::vector<Generation> &out) override
    {
        out.assign(input.requests.size(), Generation{});
        const Plan plan = makePlan(input, out);
        if (plan.members.empty())
            return Status::ok();
        return guarded(
            [&] {
                return "builtin:tiny-decoder failed on a batch of " + std::to_string(plan.members.size());
            },
            [&] {
                if (!options.useKvCache) {
                    generateRecomputing(plan, options, out);
                    return Status::ok();
                }
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

private:
    Plan makePlan(const BatchInput &input, std::vector<Generation> &out) const
    {
        Plan plan;
        plan.requests = input.requests;
        for (std::size_t i = 0; i < input.requests.size(); ++i) {
            const Request &r = *input.requests[i];
            const int want = std::max(1, r.maxNewTokens);
            const int length = int(r.tokens.size());
            if (length < 1) {
                out[i].status = Status(StatusCode::InvalidArgument, "empty input sequence");
                continue;
            }
            if (length + want > m_shape.maxPositions) {
                out[i].status = Status(StatusCode::OutOfRange,
                                       "input of " + std::to_string(length) + " tokens + " +
                                           std::to_string(want) + " new tokens exceeds the model's " +
                                           std::to_string(m_shape.maxPositions) + " positions");
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

    // Request::onToken for the token just appended to `tokens` (streaming).
    static void reportToken(const Request &r, const std::vector<TokenId> &tokens)
    {
        if (r.onToken)
            r.onToken(TokenEvent{r.id, tokens.back(), int(tokens.size()) - 1, SteadyClock::now()});
    }

    // The reference: no cache, no pool; every step runs the full (input +
    // generated) sequence through the trunk, left-padded, and reads the
    // last column.
    void generateRecomputing(const Plan &plan, const GenerateOptions &options,
                             std::vector<Generation> &out) const
    {
        const TimePoint start = SteadyClock::now();
        std::vector<std::vector<TokenId>> sequences;
        for (const auto *row : plan.rows)
            sequences.push_back(*row);
        std::vector<int> remaining = plan.want;
        for (int step = 0; step < plan.maxWant; ++step) {
            std::vector<const std::vector<TokenId> *> rows;
            for (const auto &s : sequences)
                rows.push_back(&s);
            const PaddedBatch batch = makeLeftPaddedBatch(rows, plan.paddedLength + step, m_device);
            at::Tensor x = embed(m_weights, batch.ids, batch.positions);
            const at::Tensor bias = causalBias(batch.mask);
            for (const auto &block : m_weights.blocks)
                x = blockForward(block, m_shape, x, bias);
            const at::Tensor logits = tiedLmHead(m_weights, x.select(1, x.size(1) - 1)).to(at::kFloat);
            const at::Tensor next = logits.argmax(-1).to(at::kCPU);
            const Duration now = SteadyClock::now() - start;
            const at::Tensor logitsCpu = options.keepLogits ? logits.to(at::kCPU).contiguous() : at::Tensor();
            for (std::size_t r = 0; r < plan.members.size(); ++r) {
                if (remaining[r] <= 0)
                    continue; // finished: its row still runs (no compaction here), unused
                Generation &g = out[plan.members[r]];
                const auto id = TokenId(next.data_ptr<std::int64_t>()[r]);
                g.tokens.push_back(id);
                reportToken(*plan.requests[plan.members[r]], g.tokens);
                sequences[r].push_back(id);
                if (options.keepLogits) {
                    const float *p = logitsCpu.data_ptr<float>() + std::int64_t(r) * logitsCpu.size(1);
                    g.logits.emplace_back(p, p + logitsCpu.size(1));
                }
                if (step == 0)
                    g.firstTokenAfter = now;
                if (--remaining[r] == 0)
                    g.lastTokenAfter = now;
            }
        }
    }

    TransformerShape m_shape;
    TrunkWeights m_weights;
    Gpt2PagedTrunk m_trunk; // reads m_weights
    PagedDecoder m_decoder; // reads m_trunk
    PagedStepModel m_steps; // reads m_decoder
};

} // namespace

Result<std::shared_ptr<DecoderModel>> makeTinyDecoder(const ModelSpec &spec)
{
    auto shape = transformerPreset(spec.preset);
    if (!shape)
        return shape.status();
    auto placement = prepareTorch(spec);
    if (!placement)
        return placement.status();
    return buildTorchBackend<DecoderModel, TinyDecoder>("builtin:tiny-decoder (" + spec.preset + ") on " +
                                                            placement->device.name,
                                                        *shape, *placement, spec.seed);
}

} // namespace bp
