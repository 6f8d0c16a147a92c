#include "engine/model/device_check.h"

#include "kernels/paged_attention.h"
#include "tiny_decoder.h"
#include "torch_backend.h"
#include "torch_device.h"
#include "torch_models.h"
#include "transformer_layers.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace bp {

namespace {

struct OpCase {
    std::string name;
    int heads, kvHeads, headDim, blockTokens;
    // per sequence: tokens already cached, tokens fed now
    std::vector<std::pair<int, int>> sequences;
    int window = 0; // a sliding window (Gemma 3's local layers): the CPU kernel's alone
};

const std::vector<OpCase> &opCases()
{
    static const std::vector<OpCase> cases = {
        {"decode, 64-d heads, blocks of 16", 4, 4, 64, 16, {{0, 1}, {6, 1}, {32, 1}, {63, 1}, {129, 1}}},
        {"prefill chunk beside decodes, GQA 8/2, 128-d, blocks of 8",
         8,
         2,
         128,
         8,
         {{30, 20}, {5, 1}, {0, 9}}},
        {"32-d heads, blocks of 1", 2, 1, 32, 1, {{3, 1}, {0, 4}, {40, 2}}},
        {"sliding window of 6, prefill chunks beside decodes, GQA 4/2, blocks of 4",
         4,
         2,
         32,
         4,
         {{10, 9}, {3, 1}, {20, 1}, {0, 12}, {5, 3}},
         6},
        // runs longer than the CPU kernel's block of 64 query tokens: a
        // block's products cover only the keys its tokens see
        {"long prefill chunks across query blocks, GQA 4/2, 64-d, blocks of 16",
         4,
         2,
         64,
         16,
         {{0, 150}, {37, 70}, {8, 1}}},
        {"sliding window of 48 over long prefill chunks, GQA 4/2, blocks of 16",
         4,
         2,
         32,
         16,
         {{0, 140}, {90, 75}, {200, 1}},
         48},
    };
    return cases;
}

// Dense attention in float64 for every query token, from the pool's rows.
at::Tensor reference(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                     const std::vector<std::vector<std::int64_t>> &slotsOf, const std::vector<int> &seqOf,
                     const std::vector<int> &posOf, int kvHeads, double scale, int window)
{
    const std::int64_t T = q.size(0), H = q.size(1), D = q.size(2), group = H / kvHeads;
    at::Tensor out = at::zeros({T, H, D}, at::kDouble);
    for (std::int64_t t = 0; t < T; ++t) {
        const auto &slots = slotsOf[std::size_t(seqOf[std::size_t(t)])];
        const int pos = posOf[std::size_t(t)], first = window > 0 ? std::max(0, pos + 1 - window) : 0;
        const at::Tensor index =
            at::tensor(std::vector<std::int64_t>(slots.begin() + first, slots.begin() + pos + 1));
        const at::Tensor k = kPool.index_select(0, index); // [ctx, Hkv, D]
        const at::Tensor v = vPool.index_select(0, index);
        for (std::int64_t h = 0; h < H; ++h) {
            const at::Tensor scores = k.select(1, h / group).matmul(q[t][h]) * scale; // [ctx]
            out[t][h] = at::softmax(scores, 0).matmul(v.select(1, h / group));
        }
    }
    return out;
}

DeviceCheckLine checkOps(const OpCase &c, at::ScalarType dtype, const at::Device &device, std::mt19937 &rng)
{
    DeviceCheckLine line;
    line.name = std::string("paged attention ") + c10::toString(dtype) + ": " + c.name;
    line.limit = dtype == at::kFloat ? 1e-4 : dtype == at::kHalf ? 5e-3 : 3e-2;
    const int B = c.blockTokens;
    // Shuffled block numbers for every sequence (block 0 stays unused).
    std::int64_t blocksNeeded = 0;
    for (const auto &[cached, fed] : c.sequences)
        blocksNeeded += (cached + fed + B - 1) / B;
    std::vector<std::int32_t> free(std::size_t(blocksNeeded + 3));
    std::iota(free.begin(), free.end(), 1);
    std::shuffle(free.begin(), free.end(), rng);
    const std::int64_t blocks = std::int64_t(free.size() + 1), slots = blocks * B;

    const auto S = std::int64_t(c.sequences.size());
    std::int64_t width = 1;
    std::vector<std::vector<std::int32_t>> tables;
    std::vector<std::vector<std::int64_t>> slotsOf;
    std::size_t next = 0;
    for (const auto &[cached, fed] : c.sequences) {
        const std::int64_t n = (cached + fed + B - 1) / B;
        tables.emplace_back(free.begin() + std::ptrdiff_t(next), free.begin() + std::ptrdiff_t(next + n));
        next += std::size_t(n);
        width = std::max(width, n);
        std::vector<std::int64_t> s;
        for (int p = 0; p < cached + fed; ++p)
            s.push_back(std::int64_t(tables.back()[std::size_t(p / B)]) * B + p % B);
        slotsOf.push_back(std::move(s));
    }
    std::vector<std::int32_t> tableFlat(std::size_t(S * width), 0), newSlots, querySeq, positions;
    std::vector<int> seqOf, posOf;
    for (std::int64_t s = 0; s < S; ++s) {
        std::copy(tables[std::size_t(s)].begin(), tables[std::size_t(s)].end(),
                  tableFlat.begin() + s * width);
        const auto [cached, fed] = c.sequences[std::size_t(s)];
        for (int j = 0; j < fed; ++j) {
            newSlots.push_back(std::int32_t(slotsOf[std::size_t(s)][std::size_t(cached + j)]));
            querySeq.push_back(std::int32_t(s));
            positions.push_back(cached + j);
            seqOf.push_back(int(s));
            posOf.push_back(cached + j);
        }
    }
    const auto T = std::int64_t(newSlots.size());
    at::Generator gen = at::detail::createCPUGenerator(rng());
    const auto cpu = at::TensorOptions().dtype(at::kFloat);
    // The pool holds the cached tokens' rows already; the step writes the new
    // ones. [kvHeads, blocks, B, D]; the reference reads it by slot.
    at::Tensor kPool = at::normal(0, 1, {c.kvHeads, blocks, B, c.headDim}, gen, cpu).to(dtype);
    at::Tensor vPool = at::normal(0, 1, {c.kvHeads, blocks, B, c.headDim}, gen, cpu).to(dtype);
    const auto bySlot = [&](const at::Tensor &pool) {
        return pool.permute({1, 2, 0, 3}).reshape({slots, c.kvHeads, c.headDim});
    };
    // q, k, v as views of one fused projection, as the models pass them
    const std::int64_t qkvWidth = std::int64_t(c.heads + 2 * c.kvHeads) * c.headDim;
    const at::Tensor qkv = at::normal(0, 1, {T, qkvWidth}, gen, cpu).to(dtype);
    auto views = [&](const at::Tensor &fused) {
        const at::Tensor q = fused.narrow(1, 0, c.heads * c.headDim).view({T, c.heads, c.headDim});
        const at::Tensor k =
            fused.narrow(1, c.heads * c.headDim, c.kvHeads * c.headDim).view({T, c.kvHeads, c.headDim});
        const at::Tensor v = fused.narrow(1, (c.heads + c.kvHeads) * c.headDim, c.kvHeads * c.headDim)
                                 .view({T, c.kvHeads, c.headDim});
        return std::tuple{q, k, v};
    };
    const double scale = 1.0 / std::sqrt(double(c.headDim));
    const auto i32 = at::TensorOptions().dtype(at::kInt);
    const at::Tensor slotsT = at::tensor(newSlots, i32), seqT = at::tensor(querySeq, i32),
                     posT = at::tensor(positions, i32), tableT = at::tensor(tableFlat, i32).view({S, width});

    // On the device: write, then attend.
    at::Tensor kDev = kPool.to(device), vDev = vPool.to(device);
    const at::Tensor qkvDev = qkv.to(device);
    const auto [qD, kD, vD] = views(qkvDev);
    writeKv(kDev, vDev, kD, vD, slotsT.to(device));
    const at::Tensor got = pagedAttention(qD, kDev, vDev, tableT.to(device), seqT.to(device), posT.to(device),
                                          B, scale, c.window)
                               .to(at::kCPU)
                               .to(at::kDouble);
    // The reference: the same writes by plain indexing, then dense attention.
    const auto [q, k, v] = views(qkv);
    const at::Tensor slots64 = slotsT.to(at::kLong);
    at::Tensor kRef = bySlot(kPool).to(at::kDouble), vRef = bySlot(vPool).to(at::kDouble);
    kRef.index_copy_(0, slots64, k.to(at::kDouble));
    vRef.index_copy_(0, slots64, v.to(at::kDouble));
    const at::Tensor want =
        reference(q.to(at::kDouble), kRef, vRef, slotsOf, seqOf, posOf, c.kvHeads, scale, c.window);
    // The pool rows the write touched must be the new keys exactly.
    const double writeError =
        (bySlot(kDev.to(at::kCPU)).to(at::kDouble).index_select(0, slots64) - k.to(at::kDouble))
            .abs()
            .max()
            .item<double>();
    line.error = (got - want).abs().max().item<double>() / std::max(1e-12, want.abs().max().item<double>());
    line.passed = writeError == 0 && line.error <= line.limit && std::isfinite(line.error);
    line.detail = std::to_string(S) + " sequences, " + std::to_string(T) + " query tokens" +
                  (writeError == 0 ? "" : ", KV write off by " + std::to_string(writeError));
    return line;
}

double topMargin(const std::vector<float> &logits)
{
    std::vector<float> sorted = logits;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    return double(sorted[0]) - double(sorted[1]);
}

// Generations of `model` for `requests` (with logits when asked).
Result<std::vector<std::vector<TokenId>>> tokensOf(Backend &model, const std::vector<Request> &requests)
{
    BatchInput in;
    for (const Request &r : requests)
        in.requests.push_back(&r);
    std::vector<SequenceResult> out(requests.size());
    if (Status s = model.run(in, out); !s)
        return s;
    std::vector<std::vector<TokenId>> tokens;
    for (const SequenceResult &r : out) {
        if (!r.status)
            return r.status;
        tokens.push_back(r.tokens);
    }
    return tokens;
}

DeviceCheckLine compareTokens(const std::string &name, const std::vector<std::vector<TokenId>> &got,
                              const std::vector<std::vector<TokenId>> &ref,
                              const std::vector<std::vector<std::vector<float>>> &refLogits)
{
    DeviceCheckLine line;
    line.name = name;
    line.limit = 0;
    int differ = 0, compared = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
        for (std::size_t s = 0; s < ref[i].size() && s < got[i].size(); ++s) {
            ++compared;
            if (got[i][s] == ref[i][s])
                continue;
            if (topMargin(refLogits[i][s]) > 1e-3)
                ++differ;
            break; // a near-tie: the rest continues another sequence
        }
    line.error = differ;
    line.passed = differ == 0 && compared > 0;
    line.detail =
        std::to_string(compared) + " tokens compared over " + std::to_string(ref.size()) + " sequences";
    return line;
}

void checkDecoder(const std::string &device, DeviceCheckReport &report)
{
    ModelSpec spec;
    spec.name = "builtin:tiny-decoder";
    spec.preset = "small";
    spec.dtype = "float32";
    spec.threads = 0;
    ModelSpec cpuSpec = spec;
    cpuSpec.device = "cpu";
    auto cpu = createTorchBackend(cpuSpec);
    if (!cpu) {
        report.lines.push_back({"tiny-decoder: the CPU reference", false, 1, 0, cpu.status().toString()});
        return;
    }
    std::mt19937 rng(7);
    std::vector<Request> requests;
    for (int len : {3, 17, 64, 150, 1}) {
        Request r;
        std::uniform_int_distribution<TokenId> id(0, 255);
        for (int i = 0; i < len; ++i)
            r.tokens.push_back(id(rng));
        r.maxNewTokens = 24;
        requests.push_back(std::move(r));
    }
    // The reference and its logits (the decoder's own generate() with logits).
    auto *decoder = dynamic_cast<DecoderModel *>(cpu->get());
    std::vector<std::vector<TokenId>> ref;
    std::vector<std::vector<std::vector<float>>> refLogits;
    {
        BatchInput in;
        for (const Request &r : requests)
            in.requests.push_back(&r);
        std::vector<Generation> gens;
        GenerateOptions o;
        o.keepLogits = true;
        if (!decoder || !decoder->generate(in, o, gens)) {
            report.lines.push_back({"tiny-decoder: the CPU reference", false, 1, 0, "generate failed"});
            return;
        }
        for (Generation &g : gens) {
            ref.push_back(g.tokens);
            refLogits.push_back(g.logits);
        }
    }
    for (bool graphs : {true, false}) {
        ModelSpec devSpec = spec;
        devSpec.device = device;
        devSpec.cudaGraphs = graphs;
        const std::string name = std::string("tiny-decoder small float32 on ") + device +
                                 (graphs ? ", CUDA graphs" : ", eager") + " vs the CPU";
        auto model = createTorchBackend(devSpec);
        if (!model) {
            report.lines.push_back({name, false, 1, 0, model.status().toString()});
            continue;
        }
        auto got = tokensOf(**model, requests);
        if (!got) {
            report.lines.push_back({name, false, 1, 0, got.status().toString()});
            continue;
        }
        report.lines.push_back(compareTokens(name, *got, ref, refLogits));
        // The continuous path: the same sequences stepped together.
        if (graphs) {
            StepModel *steps = (*model)->steps();
            std::vector<std::vector<TokenId>> stepped(requests.size());
            std::vector<StepItem> items;
            for (std::size_t i = 0; i < requests.size(); ++i)
                items.push_back({i + 1, requests[i].tokens, true});
            std::vector<StepOutcome> out;
            bool ok = true;
            for (int s = 0; s < 24 && ok; ++s) {
                ok = steps->step(items, out).isOk();
                for (std::size_t i = 0; ok && i < items.size(); ++i) {
                    ok = out[i].status.isOk();
                    stepped[i].push_back(out[i].next);
                    items[i].tokens = {out[i].next};
                }
            }
            for (std::size_t i = 0; i < requests.size(); ++i)
                steps->release(i + 1);
            if (ok)
                report.lines.push_back(
                    compareTokens("tiny-decoder small float32 on " + device + ", continuous steps vs the CPU",
                                  stepped, ref, refLogits));
            else
                report.lines.push_back(
                    {"tiny-decoder continuous steps on " + device, false, 1, 0, "a step failed"});
        }
    }
}

} // namespace

Result<DeviceCheckReport> checkTorchDevice(const std::string &deviceSpec, bool decoder)
{
    auto device = resolveTorchDevice(deviceSpec);
    if (!device)
        return device.status();
    DeviceCheckReport report;
    report.device = device->name;
    const Status s = runTorch(
        resolveTorchThreads(0), [&] { return "device check on " + device->name; },
        [&]() -> Status {
            std::mt19937 rng(1234);
            for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf})
                for (const OpCase &c : opCases())
                    if (c.window == 0 || !device->cuda)
                        report.lines.push_back(checkOps(c, dtype, toAtDevice(*device), rng));
            return Status::ok();
        });
    if (!s)
        return s;
    if (decoder)
        checkDecoder(device->name, report);
    return report;
}

} // namespace bp
