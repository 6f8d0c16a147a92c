// Writing a trace as Mooncake-style JSON Lines, the format vLLM's and
// genai-perf's trace replays read:
//   {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}
// timestamp: integer milliseconds from the first arrival; hash_ids: one id per
// 512-token block of the prompt (kPrefixBlockTokens), equal ids = a shared
// prefix. parseTraceText reads the result back (format mooncake).
#pragma once

#include "trace_csv.h"

#include <ostream>
#include <vector>

namespace bp {

struct MooncakeExportStats {
    std::size_t rows = 0;
    bool syntheticHashIds = false; // no ids were given: each request got its own blocks
};

// `hashIds`: one list per row (an imported Mooncake / genai-perf trace's own),
// or empty: then every request gets fresh ids, ceil(input_length / 512) of
// them, shared with no other request — the store records token counts, not
// prompts, so no sharing is claimed that was not seen.
MooncakeExportStats writeMooncakeJsonl(std::ostream &out, const std::vector<TraceRow> &rows,
                                       const std::vector<PrefixBlocks> &hashIds = {});

} // namespace bp
