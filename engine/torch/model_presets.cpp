#include "model_presets.h"

namespace bp {

namespace {

const std::vector<TransformerShape> &presets()
{
    static const std::vector<TransformerShape> all = {
        {"test", 2, 32, 2, 64, 256, 256, 4},
        {"small", 4, 256, 4, 1024, 1024, 256, 4},
        {"medium", 8, 512, 8, 2048, 1024, 256, 4},
        {"gpt2", 12, 768, 12, 3072, 1024, 50257, 4},
    };
    return all;
}

// One pre-LN block: two LayerNorms, fused QKV, output projection, 2-layer MLP.
std::int64_t blockParameters(const TransformerShape &s)
{
    const std::int64_t d = s.dModel, f = s.dFF;
    const std::int64_t norms = 2 * (2 * d);
    const std::int64_t attention = (d * 3 * d + 3 * d) + (d * d + d);
    const std::int64_t mlp = (d * f + f) + (f * d + d);
    return norms + attention + mlp;
}

std::int64_t trunkParameters(const TransformerShape &s)
{
    const std::int64_t d = s.dModel;
    const std::int64_t embeddings = std::int64_t(s.vocab) * d + std::int64_t(s.maxPositions) * d;
    return embeddings + s.layers * blockParameters(s) + 2 * d; // + final LayerNorm
}

} // namespace

Result<TransformerShape> transformerPreset(const std::string &name)
{
    for (const auto &p : presets())
        if (p.preset == name)
            return p;
    std::string known;
    for (const auto &p : presets())
        known += (known.empty() ? "" : ", ") + p.preset;
    return Status(StatusCode::NotFound, "unknown model preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> transformerPresetNames()
{
    std::vector<std::string> names;
    for (const auto &p : presets())
        names.push_back(p.preset);
    return names;
}

std::int64_t decoderParameterCount(const TransformerShape &shape)
{
    return trunkParameters(shape); // the LM head is tied to the token embedding
}

std::int64_t encoderParameterCount(const TransformerShape &shape)
{
    const std::int64_t d = shape.dModel;
    return trunkParameters(shape) + d * shape.classes + shape.classes;
}

} // namespace bp
