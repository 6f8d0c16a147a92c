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

namespace {

// multi-turn: conversation_id, turn, think_time_ms. Returns "" or the problem.
std::string parseTurn(const json &j, ParsedRow &out)
{
    const auto c = j.find("conversation_id");
    if (c == j.end())
        return "no \"conversation_id\" (a multi-turn row names its conversation)";
    std::int64_t v = 0;
    if (c->is_string() && !c->get_ref<const std::string &>().empty())
        out.conversationKey = "s:" + c->get<std::string>();
    else if (wholeNumber(*c, 0, std::numeric_limits<std::int64_t>::max(), v))
        out.conversationKey = "n:" + std::to_string(v);
    else
        return "bad \"conversation_id\" " + shown(*c) + " (a non-empty string or a non-negative integer)";
    const auto t = j.find("turn");
    if (t == j.end())
        return "no \"turn\" (1 for a conversation's first request, then 2, 3, ...)";
    if (!wholeNumber(*t, 1, 1'000'000, v))
        return "bad \"turn\" " + shown(*t) + " (an integer from 1)";
    out.row.turn = int(v);
    if (const auto think = j.find("think_time_ms"); think != j.end()) {
        if (!think->is_number() || !std::isfinite(think->get<double>()) || think->get<double>() < 0 ||
            think->get<double>() > 86'400'000)
            return "bad \"think_time_ms\" " + shown(*think) + " (milliseconds, 0 to a day)";
        out.row.thinkS = think->get<double>() / 1e3;
    }
    return {};
}

} // namespace

std::string parseJsonRow(TraceFormat format, std::string_view line, ParsedRow &out, int blockTokens)
{
    const json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded())
        return "not valid JSON";
    if (!j.is_object())
        return "expected a JSON object, got " + shown(j);
    const bool multiTurn = format == TraceFormat::MultiTurn;
    if (multiTurn)
        if (std::string problem = parseTurn(j, out); !problem.empty())
            return problem;

    const auto ts = j.find("timestamp");
    if (ts == j.end()) {
        if (!multiTurn || out.row.turn == 1)
            return multiTurn ? "no \"timestamp\" on turn 1 (when the conversation starts, in ms)"
                             : "no \"timestamp\" (the arrival time in ms is needed to replay it)";
        out.hasTime = false;
    } else {
        if (!ts->is_number() || !std::isfinite(ts->get<double>()) || ts->get<double>() < 0)
            return "bad \"timestamp\" " + shown(*ts) + " (milliseconds, a non-negative number)";
        out.time = ts->get<double>() / 1e3;
    }

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
    } else if (format == TraceFormat::Mooncake || multiTurn) {
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
                int(std::min<std::int64_t>(std::int64_t(out.blocks.size()) * blockTokens, kMaxTokens));
        else
            return "no \"input_length\", \"text\", \"text_input\" or \"hash_ids\": the input length is "
                   "unknown";
    }

    if (const auto o = j.find("output_length"); o != j.end()) {
        if (!wholeNumber(*o, 0, kMaxTokens, v))
            return "bad \"output_length\" " + shown(*o) + " (a non-negative integer)";
        out.row.outputTokens = int(v);
    } else if (format == TraceFormat::Mooncake || multiTurn) {
        return "no \"output_length\"";
    }

    // Each hash id is one block of the prompt (the last may be partial).
    const std::int64_t maxBlocks = (std::int64_t(out.row.inputTokens) + blockTokens - 1) / blockTokens;
    if (std::int64_t(out.blocks.size()) > maxBlocks)
        return std::to_string(out.blocks.size()) + " hash ids for " + std::to_string(out.row.inputTokens) +
               " input tokens (at most " + std::to_string(maxBlocks) + " blocks of " +
               std::to_string(blockTokens) + ")";
    return {};
}

Result<TraceFormat> detectJsonFormat(std::string_view firstLine)
{
    const json j = json::parse(firstLine.begin(), firstLine.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return Status(StatusCode::InvalidArgument,
                      "line 1 starts like JSON but is not a JSON object (expected a Mooncake or genai-perf "
                      "JSON Lines trace)");
    if (j.contains("conversation_id"))
        return TraceFormat::MultiTurn;
    const bool mooncake = j.contains("timestamp") && j.contains("input_length") &&
                          j.contains("output_length") && j.contains("hash_ids") && !j.contains("text") &&
                          !j.contains("text_input");
    return mooncake ? TraceFormat::Mooncake : TraceFormat::GenAiPerf;
}

} // namespace bp::trace_rows
