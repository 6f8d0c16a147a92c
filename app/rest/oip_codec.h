// KServe v2 / Open Inference Protocol JSON for the one model the engine
// serves (https://kserve.github.io/website/docs/concepts/architecture/data-plane/v2-protocol).
//
// Inference request:
//   {"id": "...",                                   optional, echoed back
//    "parameters": {"max_new_tokens": n, "priority": p, "timeout": µs},   optional
//    "inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [N, L],
//                "data": [...]}],                   flat row-major or nested as the shape
//    "outputs": [{"name": "output_ids"}]}           optional: which outputs to return
// Each of the N rows becomes one engine request; the rows may land in
// different batches. The answer holds output_ids (INT64 [N, M]; rows of
// different lengths are padded with -1 and output_lengths says how long
// each is) and/or output_values (FP32 [N, K]), in row order.
//
// The binary tensor extension is not supported (400).
#pragma once

#include "engine/core/result.h"
#include "engine/model/backend.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace bp::rest {

struct OipInferRequest {
    std::string id; // empty when the client sent none
    std::vector<Request> rows;
    bool wantIds = true; // from "outputs"; both when absent
    bool wantValues = true;
};

Result<OipInferRequest> parseOipInfer(std::string_view body, const ModelInfo &model, TimePoint now);

// `responses` are the rows in order, all OK.
nlohmann::json oipInferResponse(const std::string &modelName, const OipInferRequest &request,
                                const std::vector<Response> &responses);

// The name clients use in /v2/models/{name} and /v1/models: the model's name
// unless it is a path: then a file's base name without its extension, a
// folder's name (hf:…/llama), or for a config.json (hf-config:) its folder's
// name ("qwen2-0.5b"). matchesModel() also accepts the
// short form of a built-in ("echo" for "builtin:echo").
std::string servedModelName(const ModelInfo &model);
bool matchesModel(const std::string &name, const ModelInfo &model);

nlohmann::json oipServerMetadata(const std::string &version);
nlohmann::json oipModelMetadata(const ModelInfo &model);

} // namespace bp::rest
