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
};

// Mooncake / genai-perf: parses one JSON line. Returns "" or what is wrong
// with it (the caller adds the line number).
std::string parseJsonRow(TraceFormat format, std::string_view line, ParsedRow &out);

// The JSON formats' detection: "mooncake" when the object has exactly the
// Mooncake fields (extra ones allowed but no prompt text), "genai-perf" for any
// other object; InvalidArgument when the line is not a JSON object.
Result<TraceFormat> detectJsonFormat(std::string_view firstLine);

} // namespace bp::trace_rows
