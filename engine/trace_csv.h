// Reading request traces from CSV, without Qt. Two formats, told apart by the
// header line:
//   Azure LLM trace:  TIMESTAMP,ContextTokens,GeneratedTokens
//                     (TIMESTAMP = "YYYY-MM-DD HH:MM:SS.fffffff")
//   plain:            arrival_s,input_tokens,output_tokens
// Arrival offsets are relative to the earliest row, in seconds; rows come back
// sorted by arrival.
#pragma once

#include "result.h"

#include <functional>
#include <string>
#include <vector>

namespace bp {

struct TraceRow {
    double arrivalS = 0;  // offset from the first request
    int inputTokens = 0;
    int outputTokens = 0;
};

enum class TraceFormat { Azure, Plain };

struct TraceParseError {
    std::size_t line = 0; // 1-based line number in the file
    std::string message;
};

struct ParsedTrace {
    TraceFormat format = TraceFormat::Plain;
    std::vector<TraceRow> rows;
    std::vector<TraceParseError> errors; // rows skipped (SkipBadRows only)
    std::size_t linesRead = 0;
    std::size_t skippedRows = 0; // every malformed row, whether kept in `errors` or only counted
};

enum class BadRowPolicy {
    SkipBadRows, // skip and count malformed rows, each reported with its line
    RejectFile,  // the first malformed row fails the whole file
};

struct TraceParseOptions {
    BadRowPolicy badRows = BadRowPolicy::SkipBadRows;
    // Called every 4096 data lines (valid or not) with bytes read so far and total; return false
    // to cancel (the result is then Status Cancelled-as-InvalidArgument).
    std::function<bool(std::size_t bytesRead, std::size_t totalBytes)> progress;
    std::size_t maxErrorsKept = 100; // errors beyond this are counted, not kept
};

// Parses `path`. Fails with NotFound (unreadable), InvalidArgument (unknown
// header, empty file, a malformed row under RejectFile, no valid rows).
Result<ParsedTrace> parseTraceFile(const std::string &path, const TraceParseOptions &options = {});
Result<ParsedTrace> parseTraceText(const std::string &text, const TraceParseOptions &options = {});

} // namespace bp
