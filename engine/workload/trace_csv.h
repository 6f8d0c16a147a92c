// Reading request traces, without Qt. The formats the field publishes, told
// apart by content (the CSV header, or the keys of the first JSON line) unless
// TraceParseOptions::format names one:
//   azure      Azure LLM inference trace 2023 and 2024:
//              TIMESTAMP,ContextTokens,GeneratedTokens
//              (TIMESTAMP = "YYYY-MM-DD HH:MM:SS[.f…][+HH:MM]"; 2023 writes 7
//              fraction digits and no offset, 2024 up to 6 and "+00:00", and
//              drops the fraction on whole seconds)
//   plain      arrival_s,input_tokens,output_tokens
//   burstgpt   Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
//              (Timestamp in seconds; a failed request has 0 response tokens:
//              kept as a prefill-only arrival and counted in failedRows, or
//              dropped with skipFailed; Model and Log Type are not kept)
//   mooncake   JSONL {"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}
//              (requests sharing a hash id share that 512-token prefix block)
//   genai-perf JSONL payload file (genai-perf --input-file payload:FILE):
//              "timestamp" ms, and the input length from "input_length", else
//              "text"/"text_input" (one token per byte, the engine's tokenizer),
//              else 512 × the number of "hash_ids"; "output_length" (0 when absent)
//   multi-turn JSONL {"conversation_id", "turn", "timestamp" (ms; turn 1, optional
//              after), "input_length" (the turn's new user text), "output_length",
//              "think_time_ms" (after the previous answer), "hash_ids" (optional,
//              blocks of the new text)}; docs/replay.md has an example
// docs/replay.md describes each format and its source. Arrival offsets are
// relative to the earliest row, in seconds; rows come back sorted by arrival.
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

struct TraceRow {
    double arrivalS = 0; // offset from the first request
    int inputTokens = 0; // a follow-up turn: the new user text only (multi-turn)
    int outputTokens = 0;
    // Multi-turn conversations (format multi-turn, the generator): 0 = a
    // request of its own. A turn after a conversation's first is released
    // `thinkS` after the previous turn's answer completes (closed loop);
    // its arrivalS is only the recorded time (ordering).
    std::int64_t conversation = 0;
    int turn = 0; // 1-based within its conversation; 0 without one
    double thinkS = 0;
};

enum class TraceFormat { Azure, Plain, BurstGpt, Mooncake, GenAiPerf, MultiTurn };

// "azure", "plain", "burstgpt", "mooncake", "genai-perf", "multi-turn" (stored in the trace database)
std::string_view traceFormatName(TraceFormat format);
std::optional<TraceFormat> parseTraceFormat(std::string_view name);
// "azure, plain, burstgpt, mooncake, genai-perf"
std::string traceFormatNames();

// Tokens per hash id in Mooncake traces and genai-perf payloads.
constexpr int kPrefixBlockTokens = 512;

// The prefix blocks of one request: hash ids, in prompt order.
using PrefixBlocks = std::vector<std::int64_t>;

struct TraceParseError {
    std::size_t line = 0; // 1-based line number in the file
    std::string message;
};

struct ParsedTrace {
    TraceFormat format = TraceFormat::Plain;
    std::vector<TraceRow> rows;
    // Empty when no row carries hash ids; else one entry per row, in the order
    // of `rows` (a row without hash ids has an empty list).
    std::vector<PrefixBlocks> hashIds;
    int blockTokens = kPrefixBlockTokens; // tokens per hash id (TraceParseOptions::blockTokens)
    std::vector<TraceParseError> errors;  // rows skipped (SkipBadRows only)
    std::size_t linesRead = 0;
    std::size_t skippedRows = 0; // every malformed row, whether kept in `errors` or only counted
    std::size_t failedRows = 0;  // BurstGPT rows with 0 response tokens (kept unless skipFailed)
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
    // The format, when the caller knows it; otherwise detected from the content.
    std::optional<TraceFormat> format;
    // BurstGPT: drop failed requests (0 response tokens) instead of keeping
    // them as prefill-only arrivals. Dropped ones still count in failedRows.
    bool skipFailed = false;
    // Tokens per hash id: Mooncake's traces use 512; another trace's own
    // block size can be given (1..1<<20).
    int blockTokens = kPrefixBlockTokens;
};

// Parses `path`, reading it line by line (a week of the Azure 2024 trace is
// tens of millions of rows). Fails with NotFound (unreadable),
// InvalidArgument (unknown header or format, empty file, a malformed row
// under RejectFile, no valid rows).
Result<ParsedTrace> parseTraceFile(const std::string &path, const TraceParseOptions &options = {});
Result<ParsedTrace> parseTraceText(const std::string &text, const TraceParseOptions &options = {});

// The format of a trace from its first non-empty line, or InvalidArgument
// naming what was expected.
Result<TraceFormat> detectTraceFormat(std::string_view firstLine);

// How much of a trace's prompt a prefix cache could serve: a block counts as
// reused when its hash id appeared in an earlier request (hash ids are
// position-aware, so an id stands for its whole prefix). With an unbounded
// cache that is the hit ratio; Mooncake reports up to 50% on its traces.
struct PrefixReuse {
    std::uint64_t blocks = 0;       // all blocks of all requests
    std::uint64_t reusedBlocks = 0; // blocks whose id was seen before
    std::uint64_t uniqueBlocks = 0; // distinct ids
    double reuseRatio() const { return blocks ? double(reusedBlocks) / double(blocks) : 0.0; }
};
PrefixReuse prefixReuse(const std::vector<PrefixBlocks> &hashIds);

} // namespace bp
