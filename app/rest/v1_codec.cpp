#include "v1_codec.h"

#include "engine/core/tokenizer.h"

#include <cmath>
#include <limits>

namespace bp::rest {

using nlohmann::json;

namespace {
Status invalid(std::string message)
{
    return {StatusCode::InvalidArgument, std::move(message)};
}
} // namespace

Status checkMaxNewTokens(long long value, const ModelInfo &model)
{
    if (value < 0)
        return invalid("max_new_tokens must not be negative");
    if (value > 0 && !model.generative)
        return invalid("model " + model.name + " does not generate tokens: max_new_tokens must be 0");
    if (model.generative && model.maxNewTokensLimit > 0 && value > model.maxNewTokensLimit)
        return {StatusCode::OutOfRange, "max_new_tokens " + std::to_string(value) +
                                            " is above the model's limit of " +
                                            std::to_string(model.maxNewTokensLimit)};
    return Status::ok();
}

Result<json> parseJsonObject(std::string_view body)
{
    if (body.empty())
        return invalid("request body is empty: a JSON object is required");
    json j = json::parse(body.begin(), body.end(), nullptr, false);
    if (j.is_discarded())
        return invalid("request body is not valid JSON");
    if (!j.is_object())
        return invalid(std::string("request body must be a JSON object, got ") + j.type_name());
    return j;
}

Result<Request> parseV1Infer(std::string_view body, const ModelInfo &model, TimePoint now)
{
    auto parsed = parseJsonObject(body);
    if (!parsed)
        return parsed.status();
    const json &j = *parsed;
    Request r;
    bool haveInput = false;
    for (const auto &[key, value] : j.items()) {
        if (key == "input_ids") {
            if (!value.is_array())
                return invalid(std::string("field 'input_ids' must be an array of integers, got ") +
                               value.type_name());
            r.tokens.reserve(value.size());
            for (std::size_t i = 0; i < value.size(); ++i) {
                const json &t = value[i];
                if (!t.is_number_integer())
                    return invalid("input_ids[" + std::to_string(i) + "] must be an integer, got " +
                                   t.type_name());
                const long long id = t.get<long long>();
                if (id < 0 || id >= model.vocabSize)
                    return Status(StatusCode::OutOfRange, "input_ids[" + std::to_string(i) +
                                                              "] = " + std::to_string(id) +
                                                              " is outside the vocabulary [0, " +
                                                              std::to_string(model.vocabSize) + ")");
                r.tokens.push_back(TokenId(id));
            }
            haveInput = true;
        } else if (key == "text") {
            if (!value.is_string())
                return invalid(std::string("field 'text' must be a string, got ") + value.type_name());
            r.tokens = tokenizerOf(model).encode(value.get_ref<const std::string &>());
            haveInput = true;
        } else if (key == "max_new_tokens") {
            if (!value.is_number_integer())
                return invalid(std::string("field 'max_new_tokens' must be an integer, got ") +
                               value.type_name());
            const long long n = value.get<long long>();
            if (Status s = checkMaxNewTokens(n, model); !s)
                return s;
            r.maxNewTokens = int(n);
        } else if (key == "timeout_ms") {
            if (!value.is_number())
                return invalid(std::string("field 'timeout_ms' must be a number, got ") + value.type_name());
            const double ms = value.get<double>();
            if (!(ms >= 0) || ms > 1e9)
                return invalid("field 'timeout_ms' must be in [0, 1e9]");
            r.deadline =
                now + std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
        } else if (key == "priority") {
            if (!value.is_number_integer())
                return invalid(std::string("field 'priority' must be an integer, got ") + value.type_name());
            const long long p = value.get<long long>();
            if (p < std::numeric_limits<int>::min() || p > std::numeric_limits<int>::max())
                return invalid("field 'priority' is out of range");
            r.priority = int(p);
        } else {
            return invalid("unknown field '" + key +
                           "' (input_ids, text, max_new_tokens, timeout_ms, priority)");
        }
    }
    if (!haveInput)
        return invalid("either 'input_ids' or 'text' is required");
    if (j.contains("input_ids") && j.contains("text"))
        return invalid("give either 'input_ids' or 'text', not both");
    return r;
}

json v1ResponseJson(const Response &r, const std::string &modelName, const TextTokenizer &tokenizer)
{
    json output = json::object();
    if (!r.tokens.empty()) {
        output["tokens"] = r.tokens;
        output["text"] = tokenizer.decode(r.tokens);
    }
    if (!r.values.empty())
        output["values"] = r.values;
    json timing{{"queue_us", toMicros(r.timing.queueWait)},
                {"compute_us", toMicros(r.timing.compute)},
                {"total_us", toMicros(r.timing.total)}};
    if (r.timing.timeToFirstToken > Duration::zero())
        timing["ttft_us"] = toMicros(r.timing.timeToFirstToken);
    return json{{"id", r.requestId},
                {"model", modelName},
                {"output", std::move(output)},
                {"timing", std::move(timing)},
                {"batch",
                 {{"id", r.batch.batchId},
                  {"size", r.batch.size},
                  {"padded_length", r.batch.paddedLength},
                  {"bucket", r.batch.bucket},
                  {"dispatch_reason", std::string(dispatchReasonName(r.batch.reason))}}}};
}

} // namespace bp::rest
