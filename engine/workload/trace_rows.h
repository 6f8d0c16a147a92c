// Internal to the trace readers (trace_csv.cpp drives, trace_jsonl.cpp parses
// the JSON Lines formats): one data line in, one row or a problem out.
#pragma once

#include "trace_csv.h"

#include <string>
#include <string_view>

namespace bp::trace_rows {

struct ParsedRow {
    double time = 0; // in the file's own clock, seconds (absolute for azure)
    TraceRow row;
    PrefixBlocks blocks;
    bool failed = false; // BurstGPT: 0 response tokens
    // multi-turn: the conversation as written (a string or an integer's
    // text; the reader numbers conversations 1, 2, … by first appearance),
    // and whether the row had a timestamp (optional after turn 1).
    std::string conversationKey;
    bool hasTime = true;
};

// Mooncake / genai-perf: parses one JSON line. Returns "" or what is wrong
// with it (the caller adds the line number).
// `blockTokens`: tokens per hash id.
std::string parseJsonRow(TraceFormat format, std::string_view line, ParsedRow &out,
                         int blockTokens = kPrefixBlockTokens);

// Azure timestamps -> seconds since the epoch (trace_time.cpp).
bool parseAzureTimestamp(std::string_view s, double &out);

// The JSON formats' detection: "multi-turn" when the object has a
// "conversation_id"; "mooncake" when the object has exactly the
// Mooncake fields (extra ones allowed but no prompt text), "genai-perf" for any
// other object; InvalidArgument when the line is not a JSON object.
Result<TraceFormat> detectJsonFormat(std::string_view firstLine);

} // namespace bp::trace_rows
