#include "oip_codec.h"

#include "v1_codec.h"

#include <algorithm>
#include <limits>

namespace bp::rest {

using nlohmann::json;

namespace {

Status invalid(std::string message)
{
    return {StatusCode::InvalidArgument, std::move(message)};
}

// One element of `data`: an integer token id inside the vocabulary.
Status appendToken(const json &v, const ModelInfo &model, std::vector<TokenId> &out)
{
    if (!v.is_number_integer())
        return invalid(std::string("input 'input_ids': data must hold integers, got ") + v.type_name());
    const long long id = v.get<long long>();
    if (id < 0 || id >= model.vocabSize)
        return Status(StatusCode::OutOfRange, "input 'input_ids': token id " + std::to_string(id) +
                                                  " at flat index " + std::to_string(out.size()) +
                                                  " is outside the vocabulary [0, " +
                                                  std::to_string(model.vocabSize) + ")");
    out.push_back(TokenId(id));
    return Status::ok();
}

// Appends the leaves of `data` (flat, or nested exactly as `shape`) to out.
Status flatten(const json &data, const std::vector<long long> &shape, std::size_t depth,
               const ModelInfo &model, std::vector<TokenId> &out)
{
    const bool nested = !data.empty() && data.front().is_array();
    if (depth == 0 && !nested) { // flat row-major
        for (const json &v : data) {
            if (Status st = appendToken(v, model, out); !st)
                return st;
        }
        return Status::ok();
    }
    if (depth >= shape.size() || std::int64_t(data.size()) != shape[depth])
        return invalid("input 'input_ids': nested data does not match the shape");
    for (const json &v : data) {
        if (depth + 1 < shape.size()) {
            if (!v.is_array())
                return invalid("input 'input_ids': nested data does not match the shape");
            if (Status s = flatten(v, shape, depth + 1, model, out); !s)
                return s;
        } else {
            if (Status st = appendToken(v, model, out); !st)
                return st;
        }
    }
    return Status::ok();
}

// How many values `data` holds, flat or nested one level (a [N, L] tensor),
// counted without allocating. Deeper nesting is left to flatten() to refuse.
std::size_t valueCount(const json &data)
{
    if (data.empty() || !data.front().is_array())
        return data.size();
    std::size_t n = 0;
    for (const json &row : data)
        n += row.is_array() ? row.size() : 1;
    return n;
}

Status readParameters(const json &params, const ModelInfo &model, TimePoint now, Request &proto)
{
    if (!params.is_object())
        return invalid("'parameters' must be an object");
    // Unknown parameters are ignored: the protocol lets clients send their own.
    if (auto it = params.find("max_new_tokens"); it != params.end()) {
        if (!it->is_number_integer())
            return invalid("parameter 'max_new_tokens' must be an integer");
        if (Status s = checkMaxNewTokens(it->get<long long>(), model); !s)
            return s;
        proto.maxNewTokens = int(it->get<long long>());
    }
    if (auto it = params.find("priority"); it != params.end()) {
        if (!it->is_number_integer())
            return invalid("parameter 'priority' must be an integer");
        const long long p = it->get<long long>();
        if (p < std::numeric_limits<int>::min() || p > std::numeric_limits<int>::max())
            return invalid("parameter 'priority' is out of range");
        proto.priority = int(p);
    }
    if (auto it = params.find("timeout"); it != params.end()) { // microseconds, as in Triton
        if (!it->is_number_integer() || it->get<long long>() < 0)
            return invalid("parameter 'timeout' must be a non-negative integer (microseconds)");
        proto.deadline =
            now + std::chrono::microseconds(std::min<long long>(it->get<long long>(), 1'000'000'000'000LL));
    }
    return Status::ok();
}

} // namespace

Result<OipInferRequest> parseOipInfer(std::string_view body, const ModelInfo &model, TimePoint now)
{
    auto parsed = parseJsonObject(body);
    if (!parsed)
        return parsed.status();
    const json &j = *parsed;
    OipInferRequest out;
    if (auto it = j.find("id"); it != j.end()) {
        if (!it->is_string())
            return invalid("'id' must be a string");
        out.id = it->get<std::string>();
    }
    Request proto;
    if (auto it = j.find("parameters"); it != j.end())
        if (Status s = readParameters(*it, model, now, proto); !s)
            return s;
    if (auto it = j.find("outputs"); it != j.end()) {
        if (!it->is_array())
            return invalid("'outputs' must be an array");
        out.wantIds = out.wantValues = false;
        for (const json &o : *it) {
            const std::string name = o.is_object() && o.contains("name") && o["name"].is_string()
                                         ? o["name"].get<std::string>()
                                         : std::string();
            if (name == "output_ids")
                out.wantIds = true;
            else if (name == "output_values")
                out.wantValues = true;
            else
                return invalid("unknown output '" + name + "' (output_ids, output_values)");
        }
    }
    auto inputs = j.find("inputs");
    if (inputs == j.end() || !inputs->is_array() || inputs->empty())
        return invalid("'inputs' must be a non-empty array holding the tensor 'input_ids'");
    const json *tensor = nullptr;
    for (const json &in : *inputs) {
        if (!in.is_object() || !in.contains("name") || !in["name"].is_string())
            return invalid("every input needs a string 'name'");
        const std::string name = in["name"].get<std::string>();
        if (name != "input_ids")
            return invalid("unknown input '" + name + "': this model takes one input, 'input_ids'");
        if (tensor)
            return invalid("input 'input_ids' is given twice");
        tensor = &in;
    }
    const json &t = *tensor;
    if (t.contains("parameters") && t["parameters"].is_object() &&
        t["parameters"].contains("binary_data_size"))
        return invalid("the binary tensor extension is not supported: send 'data' as JSON");
    if (!t.contains("datatype") || !t["datatype"].is_string() ||
        (t["datatype"] != "INT64" && t["datatype"] != "INT32"))
        return invalid("input 'input_ids' must have datatype INT64 (or INT32)");
    if (!t.contains("shape") || !t["shape"].is_array() || t["shape"].empty() || t["shape"].size() > 2)
        return invalid("input 'input_ids' needs a shape [N, L] (or [L] for one row)");
    std::vector<long long> shape;
    for (const json &d : t["shape"]) {
        if (!d.is_number_integer() || d.get<long long>() < 0 || d.get<long long>() > (1LL << 31))
            return invalid("input 'input_ids': shape dimensions must be non-negative integers");
        shape.push_back(d.get<long long>());
    }
    if (shape.size() == 1)
        shape.insert(shape.begin(), 1);
    const long long rows = shape[0], length = shape[1];
    if (rows < 1)
        return invalid("input 'input_ids' has no rows (shape [0, L])");
    if (length < 1)
        return invalid("input is empty: rows of input_ids need at least one token");
    if (rows > 4096)
        return invalid("input 'input_ids' has " + std::to_string(rows) + " rows; at most 4096 per request");
    if (length > model.maxSequenceLength)
        return Status(StatusCode::OutOfRange, "rows of " + std::to_string(length) +
                                                  " tokens; the model accepts at most " +
                                                  std::to_string(model.maxSequenceLength));
    if (!t.contains("data") || !t["data"].is_array())
        return invalid("input 'input_ids' needs 'data' (an array)");
    // The shape is the client's claim; the data is what the body really
    // holds. Compare the two before sizing anything from the shape, so a
    // 200-byte body claiming [4096, 8192] costs nothing.
    long long values = 0;
    if (__builtin_mul_overflow(rows, length, &values))
        return invalid("input 'input_ids': the shape's size overflows");
    const std::size_t given = valueCount(t["data"]);
    if (given != std::size_t(values))
        return invalid("input 'input_ids': shape [" + std::to_string(rows) + ", " + std::to_string(length) +
                       "] needs " + std::to_string(values) + " values, data has " + std::to_string(given));
    std::vector<TokenId> flat;
    flat.reserve(given);
    if (Status s = flatten(t["data"], shape, 0, model, flat); !s)
        return s;
    out.rows.reserve(std::size_t(rows));
    for (long long r = 0; r < rows; ++r) {
        Request req = proto;
        req.tokens.assign(flat.begin() + r * length, flat.begin() + (r + 1) * length);
        out.rows.push_back(std::move(req));
    }
    return out;
}

json oipInferResponse(const std::string &modelName, const OipInferRequest &request,
                      const std::vector<Response> &responses)
{
    const std::size_t n = responses.size();
    std::size_t maxTokens = 0, maxValues = 0, batches = 0;
    bool ragged = false;
    double queueUs = 0, computeUs = 0, totalUs = 0;
    int maxBatch = 0;
    std::vector<std::uint64_t> seen;
    for (const Response &r : responses) {
        if (maxTokens && r.tokens.size() != maxTokens)
            ragged = true;
        maxTokens = std::max(maxTokens, r.tokens.size());
        maxValues = std::max(maxValues, r.values.size());
        queueUs = std::max(queueUs, toMicros(r.timing.queueWait));
        computeUs = std::max(computeUs, toMicros(r.timing.compute));
        totalUs = std::max(totalUs, toMicros(r.timing.total));
        maxBatch = std::max(maxBatch, r.batch.size);
        if (std::find(seen.begin(), seen.end(), r.batch.batchId) == seen.end()) {
            seen.push_back(r.batch.batchId);
            ++batches;
        }
    }
    json outputs = json::array();
    if (request.wantIds && maxTokens > 0) {
        std::vector<std::int64_t> data;
        data.reserve(n * maxTokens);
        std::vector<std::int64_t> lengths;
        for (const Response &r : responses) {
            data.insert(data.end(), r.tokens.begin(), r.tokens.end());
            data.insert(data.end(), maxTokens - r.tokens.size(), -1);
            lengths.push_back(std::int64_t(r.tokens.size()));
        }
        outputs.push_back(
            {{"name", "output_ids"}, {"datatype", "INT64"}, {"shape", {n, maxTokens}}, {"data", data}});
        if (ragged)
            outputs.push_back(
                {{"name", "output_lengths"}, {"datatype", "INT64"}, {"shape", {n}}, {"data", lengths}});
    }
    if (request.wantValues && maxValues > 0) {
        std::vector<float> data;
        data.reserve(n * maxValues);
        for (const Response &r : responses) {
            data.insert(data.end(), r.values.begin(), r.values.end());
            data.insert(data.end(), maxValues - r.values.size(), 0.0f);
        }
        outputs.push_back(
            {{"name", "output_values"}, {"datatype", "FP32"}, {"shape", {n, maxValues}}, {"data", data}});
    }
    json out{{"model_name", modelName},
             {"model_version", "1"},
             {"outputs", std::move(outputs)},
             // Parameters carry scalars only (the protocol's rule): the worst row
             // and how many batches the rows ran in.
             {"parameters",
              {{"queue_us", queueUs},
               {"compute_us", computeUs},
               {"total_us", totalUs},
               {"max_batch_size", maxBatch},
               {"batches", batches},
               {"batch_id", responses.empty() ? 0 : responses.front().batch.batchId}}}};
    if (!request.id.empty())
        out["id"] = request.id;
    return out;
}

std::string servedModelName(const ModelInfo &model)
{
    std::string name = model.name;
    while (name.size() > 1 && name.back() == '/') // hf:/models/llama/
        name.pop_back();
    const auto slash = name.find_last_of('/');
    if (slash == std::string::npos)
        return name;
    std::string base = name.substr(slash + 1);
    // hf-config:…/qwen2-0.5b/config.json is named by its folder.
    if (base == "config.json" && slash > 0) {
        const auto parent = name.find_last_of("/:", slash - 1);
        const std::string folder = name.substr(parent == std::string::npos ? 0 : parent + 1,
                                               slash - (parent == std::string::npos ? 0 : parent + 1));
        if (!folder.empty() && folder != "." && folder != "..")
            return folder;
    }
    const bool folder = name.rfind("hf:", 0) == 0; // Qwen2.5-0.5B keeps its dots
    if (const auto dot = base.rfind('.'); !folder && dot != std::string::npos && dot > 0)
        base.erase(dot);
    return base;
}

bool matchesModel(const std::string &name, const ModelInfo &model)
{
    const std::string served = servedModelName(model);
    if (name == served || name == model.name)
        return true;
    const std::string prefix = "builtin:";
    return served.rfind(prefix, 0) == 0 && name == served.substr(prefix.size());
}

json oipServerMetadata(const std::string &version)
{
    return json{{"name", "batchpilot"}, {"version", version}, {"extensions", json::array()}};
}

json oipModelMetadata(const ModelInfo &model)
{
    json outputs = json::array();
    if (model.generative)
        outputs.push_back({{"name", "output_ids"}, {"datatype", "INT64"}, {"shape", {-1, -1}}});
    else
        outputs.push_back({{"name", "output_values"}, {"datatype", "FP32"}, {"shape", {-1, -1}}});
    return json{{"name", servedModelName(model)},
                {"versions", {"1"}},
                {"platform", "batchpilot"},
                {"inputs", {{{"name", "input_ids"}, {"datatype", "INT64"}, {"shape", {-1, -1}}}}},
                {"outputs", std::move(outputs)},
                {"parameters",
                 {{"device", model.device},
                  {"architecture", model.architecture},
                  {"dtype", model.dtype},
                  {"kv_bytes_per_token", model.kvBytesPerToken},
                  {"vocab_size", model.vocabSize},
                  {"max_sequence_length", model.maxSequenceLength},
                  {"generative", model.generative},
                  {"max_new_tokens_limit", model.maxNewTokensLimit},
                  {"parameters", model.parameters},
                  {"description", model.description}}}};
}

} // namespace bp::rest
