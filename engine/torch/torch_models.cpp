#include "torch_models.h"

#include "llama_model.h"
#include "tiny_decoder.h"
#include "tiny_encoder.h"
#include "torchscript_backend.h"

namespace bp {

Result<std::shared_ptr<Backend>> createTorchBackend(const ModelSpec &spec)
{
    if (spec.name == "builtin:tiny-encoder")
        return makeTinyEncoder(spec);
    if (spec.name == "builtin:tiny-decoder") {
        auto decoder = makeTinyDecoder(spec);
        if (!decoder)
            return decoder.status();
        return std::shared_ptr<Backend>(std::move(decoder.value()));
    }
    if (isHfModelName(spec.name))
        return makeHfDecoder(spec);
    if (looksLikeModelFile(spec.name))
        return loadTorchScriptModel(spec);
    std::string known = "builtin:echo";
    for (const auto &n : torchBuiltinNames())
        known += ", " + n;
    return Status(StatusCode::NotFound,
                  "unknown model '" + spec.name + "' (known: " + known +
                      ", hf:FOLDER (a Hugging Face model folder), hf-config:CONFIG.json, or a TorchScript file path "
                      "ending in .pt)");
}

std::vector<std::string> torchBuiltinNames()
{
    return {"builtin:tiny-encoder", "builtin:tiny-decoder"};
}

} // namespace bp
