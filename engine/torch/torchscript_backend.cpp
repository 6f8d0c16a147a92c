#include "torchscript_backend.h"

#include "torch_backend.h"
#include "torchscript_decoder.h"

#include <torch/script.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace bp {

namespace {

std::string firstLine(const c10::Error &e)
{
    std::string what = e.what_without_backtrace();
    if (const auto eol = what.find('\n'); eol != std::string::npos)
        what.resize(eol);
    return what;
}

std::string describeSchema(const c10::FunctionSchema &schema)
{
    std::ostringstream s;
    s << schema;
    return s.str();
}

bool isTensor(const c10::TypePtr &type) { return type->kind() == c10::TypeKind::TensorType; }

std::int64_t intAttribute(const torch::jit::Module &module, const char *name, std::int64_t fallback)
{
    if (!module.hasattr(name))
        return fallback;
    const c10::IValue v = module.attr(name);
    return v.isInt() ? v.toInt() : fallback;
}

std::string lower(std::string s)
{
    for (char &c : s)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Rows of the model's embedding tables: the token embedding (the first one
// whose name does not mention positions) and a position embedding. Found by
// module type (nn.Embedding) first, then by parameter name ("*embed*.weight",
// 2-D), since a scripted model may implement its own lookup.
struct EmbeddingRows {
    std::int64_t tokens = 0, positions = 0;
    std::string tokensName, positionsName;
};

EmbeddingRows embeddingRows(const torch::jit::Module &module)
{
    EmbeddingRows rows;
    auto take = [&rows](const std::string &name, const at::Tensor &weight) {
        if (weight.dim() != 2)
            return;
        const bool position = lower(name).find("pos") != std::string::npos;
        if (position && !rows.positions) {
            rows.positions = weight.size(0);
            rows.positionsName = name;
        } else if (!position && !rows.tokens) {
            rows.tokens = weight.size(0);
            rows.tokensName = name;
        }
    };
    for (const auto &m : module.named_modules()) {
        const auto type = m.value.type()->name();
        if (!type || !type->qualifiedName().ends_with(".Embedding") || !m.value.hasattr("weight"))
            continue;
        const c10::IValue w = m.value.attr("weight");
        if (w.isTensor())
            take(m.name.empty() ? "weight" : m.name + ".weight", w.toTensor());
    }
    for (const auto &p : module.named_parameters(/*recurse=*/true)) {
        const std::string name = lower(p.name);
        if (name.find("emb") != std::string::npos && name.ends_with("weight"))
            take(p.name, p.value);
    }
    return rows;
}

class TorchScriptBackend final : public TorchBackend<> {
public:
    TorchScriptBackend(torch::jit::Module module, ModelInfo info, const TorchPlacement &placement)
        : TorchBackend(placement), m_module(std::move(module))
    {
        m_info = std::move(info);
    }

    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        if (input.requests.empty())
            return Status::ok();
        return guarded(
            [&] {
                return "TorchScript model '" + m_info.name + "' failed on a batch of " +
                       std::to_string(input.requests.size());
            },
            [&] { return forward(input, out); });
    }

    static std::string shapeOf(const at::Tensor &t)
    {
        std::ostringstream s;
        s << t.sizes();
        return s.str();
    }

private:
    Status forward(const BatchInput &input, std::vector<SequenceResult> &out)
    {
        const auto B = std::int64_t(input.requests.size());
        std::int64_t L = input.paddedLength;
        for (const Request *r : input.requests)
            L = std::max(L, std::int64_t(r->tokens.size()));
        at::Tensor ids = at::zeros({B, L}, at::kLong);
        at::Tensor mask = at::zeros({B, L}, at::kBool);
        auto *idp = ids.data_ptr<std::int64_t>();
        auto *mp = mask.data_ptr<bool>();
        for (std::int64_t i = 0; i < B; ++i) {
            const auto &tokens = input.requests[std::size_t(i)]->tokens;
            const std::int64_t n = std::int64_t(tokens.size()), offset = L - n;
            for (std::int64_t j = 0; j < n; ++j) {
                idp[i * L + offset + j] = tokens[std::size_t(j)];
                mp[i * L + offset + j] = true;
            }
        }
        const at::Tensor result = m_module.forward({ids.to(m_device), mask.to(m_device)}).toTensor();
        if (result.dim() < 1 || result.size(0) != B)
            return Status(StatusCode::Internal, "TorchScript model '" + m_info.name + "' returned shape " +
                                                    shapeOf(result) + " for a batch of " + std::to_string(B));
        scatter(result, out);
        return Status::ok();
    }

    static void scatter(const at::Tensor &result, std::vector<SequenceResult> &out)
    {
        const std::int64_t B = result.size(0);
        if (at::isIntegralType(result.scalar_type(), /*includeBool=*/true)) {
            const at::Tensor rows = result.reshape({B, -1}).to(at::kCPU, at::kLong).contiguous();
            const auto width = rows.size(1);
            const auto *p = rows.data_ptr<std::int64_t>();
            for (std::int64_t i = 0; i < B; ++i)
                out[std::size_t(i)].tokens.assign(p + i * width, p + (i + 1) * width);
        } else {
            const at::Tensor rows = result.reshape({B, -1}).to(at::kCPU, at::kFloat).contiguous();
            const auto width = rows.size(1);
            const float *p = rows.data_ptr<float>();
            for (std::int64_t i = 0; i < B; ++i)
                out[std::size_t(i)].values.assign(p + i * width, p + (i + 1) * width);
        }
    }

    torch::jit::Module m_module; // forward() is safe to call from several threads
};

// Fills info.vocabSize and info.maxSequenceLength (see the header for the order).
Status readLimits(const torch::jit::Module &module, const ModelSpec &spec, ModelInfo &info)
{
    const std::string &path = spec.name;
    const EmbeddingRows rows = embeddingRows(module);
    if (spec.vocabSize < 0 || spec.maxSequenceLength < 0)
        return Status(StatusCode::InvalidArgument, "--vocab-size and --max-length must be positive");
    if (rows.tokens && spec.vocabSize > rows.tokens)
        return Status(StatusCode::InvalidArgument,
                      "--vocab-size " + std::to_string(spec.vocabSize) + " is larger than the " +
                          std::to_string(rows.tokens) + " rows of '" + path + "''s token embedding (" +
                          rows.tokensName + "): ids past them would fail inside forward; pass at most " +
                          std::to_string(rows.tokens));
    if (rows.positions && spec.maxSequenceLength > rows.positions)
        return Status(StatusCode::InvalidArgument,
                      "--max-length " + std::to_string(spec.maxSequenceLength) + " is longer than the " +
                          std::to_string(rows.positions) + " rows of '" + path + "''s position embedding (" +
                          rows.positionsName + "); pass at most " + std::to_string(rows.positions));
    std::int64_t vocab = spec.vocabSize;
    std::string vocabFrom = "--vocab-size";
    if (vocab <= 0) {
        vocab = intAttribute(module, "vocab_size", 0);
        vocabFrom = "attribute vocab_size";
    }
    if (vocab <= 0) {
        vocab = rows.tokens;
        vocabFrom = rows.tokensName + " rows";
    }
    if (vocab <= 0 || vocab > std::numeric_limits<int>::max())
        return Status(StatusCode::InvalidArgument,
                      "TorchScript file '" + path +
                          "': cannot tell its vocabulary size (no integer attribute "
                          "vocab_size, no embedding weight among its parameters): pass --vocab-size N (and "
                          "--max-length N), or give the model a vocab_size attribute");
    std::int64_t length = spec.maxSequenceLength;
    std::string lengthFrom = "--max-length";
    if (length <= 0) {
        length = intAttribute(module, "max_sequence_length", 0);
        lengthFrom = "attribute max_sequence_length";
    }
    if (length <= 0) {
        length = rows.positions;
        lengthFrom = rows.positionsName + " rows";
    }
    if (length <= 0) {
        length = 1024;
        lengthFrom = "default; --max-length sets it";
    }
    info.vocabSize = int(vocab);
    info.maxSequenceLength = int(std::min<std::int64_t>(length, std::numeric_limits<int>::max()));
    info.description = "vocabulary " + std::to_string(info.vocabSize) + " (" + vocabFrom + "), max length " +
                       std::to_string(info.maxSequenceLength) + " (" + lengthFrom + ")";
    return Status::ok();
}

} // namespace

bool looksLikeModelFile(const std::string &name)
{
    return name.find('/') != std::string::npos || (name.size() > 3 && name.ends_with(".pt"));
}

Result<std::shared_ptr<Backend>> loadTorchScriptModel(const ModelSpec &spec)
{
    namespace fs = std::filesystem;
    const std::string &path = spec.name;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st))
        return Status(StatusCode::NotFound, "model file '" + path + "' not found");
    if (fs::is_directory(st))
        return Status(StatusCode::InvalidArgument, "model file '" + path + "' is a directory, not a TorchScript file");
    {
        std::ifstream probe(path, std::ios::binary);
        if (!probe)
            return Status(StatusCode::NotFound, "model file '" + path + "' cannot be read: " + std::strerror(errno));
    }
    auto placement = prepareTorch(spec);
    if (!placement)
        return placement.status();
    const at::Device atDevice = placement->atDevice;

    torch::jit::Module module;
    try {
        module = torch::jit::load(path, atDevice);
    } catch (const c10::Error &e) {
        return Status(StatusCode::InvalidArgument,
                      "model file '" + path + "' is not a loadable TorchScript file: " + firstLine(e));
    } catch (const std::exception &e) {
        return Status(StatusCode::InvalidArgument,
                      "model file '" + path + "' is not a loadable TorchScript file: " + e.what());
    }
    module.eval();

    const auto method = module.find_method("forward");
    if (!method)
        return Status(StatusCode::InvalidArgument, "TorchScript file '" + path + "' has no forward method");
    const c10::FunctionSchema &schema = method->function().getSchema();
    const bool decoder = isDecoderSchema(schema);
    const auto &args = schema.arguments(); // args[0] is self
    const bool signatureOk =
        decoder || (args.size() == 3 && isTensor(args[1].type()) && isTensor(args[2].type()) &&
                    schema.returns().size() == 1 && isTensor(schema.returns()[0].type()));
    if (!signatureOk)
        return Status(
            StatusCode::InvalidArgument,
            "TorchScript file '" + path + "' has forward with the wrong signature: expected " +
                "forward(input_ids: Tensor, attention_mask: Tensor) -> Tensor (a model with one output "
                "per sequence) or forward(input_ids: Tensor, attention_mask: Tensor, past_key_values: "
                "Optional[Tensor]) -> Tuple[Tensor, Tensor] (a decoder; docs/models.md), found " +
                describeSchema(schema));

    ModelInfo info;
    info.name = path;
    info.device = placement->device.name;
    if (Status s = readLimits(module, spec, info); !s)
        return s;
    for (const auto &p : module.parameters())
        info.parameters += p.numel();
    if (decoder)
        return makeTorchScriptDecoder(std::move(module), std::move(info), *placement);
    // A probe batch: two sequences of lengths 2 and 1 (left-padded).
    try {
        c10::InferenceMode guard;
        at::Tensor mask = at::ones({2, 2}, at::kBool);
        mask[1][0] = false;
        const at::Tensor result =
            module.forward({at::ones({2, 2}, at::kLong).to(atDevice), mask.to(atDevice)}).toTensor();
        if (result.dim() < 1 || result.size(0) != 2)
            return Status(StatusCode::InvalidArgument,
                          "TorchScript file '" + path + "': forward returned shape " +
                              TorchScriptBackend::shapeOf(result) + " for a batch of 2; expected [2, ...]");
        std::string perRow = TorchScriptBackend::shapeOf(result.select(0, 0)); // "[4]" or "[]"
        perRow = perRow.size() > 2 ? ", " + perRow.substr(1) : "]";
        info.description =
            "TorchScript file; forward(input_ids, attention_mask) -> [B" + perRow + "; " + info.description;
    } catch (const c10::Error &e) {
        return Status(StatusCode::InvalidArgument,
                      "TorchScript file '" + path + "': forward failed on a probe batch: " + firstLine(e));
    } catch (const std::exception &e) {
        return Status(StatusCode::InvalidArgument,
                      "TorchScript file '" + path + "': forward failed on a probe batch: " + e.what());
    }
    return buildTorchBackend<Backend, TorchScriptBackend>("TorchScript model '" + path + "'",
                                                          std::move(module), std::move(info), *placement);
}

} // namespace bp
