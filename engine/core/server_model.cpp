#include "server_model.h"

namespace bp {

std::string_view serverKindName(ServerKind kind)
{
    switch (kind) {
    case ServerKind::BatchPilot: return "batchpilot";
    case ServerKind::Vllm: return "vllm";
    case ServerKind::Tgi: return "tgi";
    case ServerKind::Sglang: return "sglang";
    case ServerKind::Triton: return "triton";
    case ServerKind::LlamaCpp: return "llamacpp";
    }
    return "batchpilot";
}

std::optional<ServerKind> parseServerKind(std::string_view name)
{
    for (ServerKind k : {ServerKind::BatchPilot, ServerKind::Vllm, ServerKind::Tgi, ServerKind::Sglang,
                         ServerKind::Triton, ServerKind::LlamaCpp})
        if (serverKindName(k) == name)
            return k;
    return std::nullopt;
}

} // namespace bp
