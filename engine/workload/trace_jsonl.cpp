#include "trace_rows.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace bp::trace_rows {

using nlohmann::json;

namespace {

// A JSON integer in [lo, INT_MAX]; floats with a fraction, strings and
// booleans are rejected (genai-perf int()s these fields; we take only what
// is already whole).
bool wholeNumber(const json &v, std::int64_t lo, std::int64_t hi, std::int64_t &out)
{
    if (v.is_number_integer()) {
        out = v.get<std::int64_t>();
        if (v.is_number_unsigned() &&
            v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
            return false;
    } else if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::abs(d) > 9e15)
            return false;
        out = std::int64_t(d);
    } else {
        return false;
    }
    return out >= lo && out <= hi;
}

std::string shown(const json &v)
{
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

constexpr std::int64_t kMaxTokens = std::numeric_limits<int>::max();

} // namespace

std::string parseJsonRow(TraceFormat format, std::string_view line, ParsedRow &out)
{
    const json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded())
        return "not valid JSON";
    if (!j.is_object())
        return "expected a JSON object, got " + shown(j);

    const auto ts = j.find("timestamp");
    if (ts == j.end())
        return "no \"timestamp\" (the arrival time in ms is needed to replay it)";
    if (!ts->is_number() || !std::isfinite(ts->get<double>()) || ts->get<double>() < 0)
        return "bad \"timestamp\" " + shown(*ts) + " (milliseconds, a non-negative number)";
    out.time = ts->get<double>() / 1e3;

    if (const auto h = j.find("hash_ids"); h != j.end()) {
        if (!h->is_array())
            return "bad \"hash_ids\" " + shown(*h) + " (an array of non-negative integers)";
        out.blocks.reserve(h->size());
        for (const json &id : *h) {
            std::int64_t v = 0;
            if (!wholeNumber(id, 0, std::numeric_limits<std::int64_t>::max(), v))
                return "bad hash id " + shown(id) + " in \"hash_ids\" (non-negative integers)";
            out.blocks.push_back(v);
        }
    } else if (format == TraceFormat::Mooncake) {
        return "no \"hash_ids\" (a Mooncake row lists its prefix blocks)";
    }

    std::int64_t v = 0;
    if (const auto in = j.find("input_length"); in != j.end()) {
        if (!wholeNumber(*in, 1, kMaxTokens, v))
            return "bad \"input_length\" " + shown(*in) + " (a positive integer)";
        out.row.inputTokens = int(v);
    } else if (format == TraceFormat::Mooncake) {
        return "no \"input_length\"";
    } else {
        const auto text = j.find("text") != j.end() ? j.find("text") : j.find("text_input");
        if (j.contains("text") && j.contains("text_input"))
            return "both \"text\" and \"text_input\" (genai-perf takes one)";
        if (text != j.end() && !text->is_string())
            return "bad \"" + std::string(j.contains("text") ? "text" : "text_input") + "\" (a string)";
        if (text != j.end() && !text->get_ref<const std::string &>().empty())
            out.row.inputTokens =
                int(std::min<std::size_t>(text->get_ref<const std::string &>().size(), kMaxTokens));
        else if (!out.blocks.empty())
            out.row.inputTokens =
                int(std::min<std::int64_t>(std::int64_t(out.blocks.size()) * kPrefixBlockTokens, kMaxTokens));
        else
            return "no \"input_length\", \"text\", \"text_input\" or \"hash_ids\": the input length is "
                   "unknown";
    }

    if (const auto o = j.find("output_length"); o != j.end()) {
        if (!wholeNumber(*o, 0, kMaxTokens, v))
            return "bad \"output_length\" " + shown(*o) + " (a non-negative integer)";
        out.row.outputTokens = int(v);
    } else if (format == TraceFormat::Mooncake) {
        return "no \"output_length\"";
    }

    // Each hash id is one 512-token block of the prompt (the last may be partial).
    const std::int64_t maxBlocks =
        (std::int64_t(out.row.inputTokens) + kPrefixBlockTokens - 1) / kPrefixBlockTokens;
    if (std::int64_t(out.blocks.size()) > maxBlocks)
        return std::to_string(out.blocks.size()) + " hash ids for " + std::to_string(out.row.inputTokens) +
               " input tokens (at most " + std::to_string(maxBlocks) + " blocks of " +
               std::to_string(kPrefixBlockTokens) + ")";
    return {};
}

Result<TraceFormat> detectJsonFormat(std::string_view firstLine)
{
    const json j = json::parse(firstLine.begin(), firstLine.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return Status(StatusCode::InvalidArgument,
                      "line 1 starts like JSON but is not a JSON object (expected a Mooncake or genai-perf "
                      "JSON Lines trace)");
    const bool mooncake = j.contains("timestamp") && j.contains("input_length") &&
                          j.contains("output_length") && j.contains("hash_ids") && !j.contains("text") &&
                          !j.contains("text_input");
    return mooncake ? TraceFormat::Mooncake : TraceFormat::GenAiPerf;
}

} // namespace bp::trace_rows
