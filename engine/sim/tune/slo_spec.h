// The one parser of SLO strings, for the two spellings the tools take:
//  - percentile bounds (`batchpilot tune`, the Advisor's demo script):
//    "p99<=200ms", "ttft_p99<=500ms,tpot_p99<=50ms" — keys p99 / e2e_p99,
//    ttft_p99, tpot_p99;
//  - per-request bounds (`batchpilot-bench load --slo`, vLLM's goodput):
//    "ttft=500ms,tpot=50ms,e2e=2s" — keys ttft, tpot, e2e.
// Items are comma-separated, each key at most once, a positive number with
// a unit (us, µs, ms, s), at most a day; spaces are ignored. Errors are
// InvalidArgument "--slo 'SPEC': WHY (expected e.g. ...)".
#pragma once

#include "engine/core/clock.h"
#include "engine/core/result.h"

#include <string_view>

namespace bp {

enum class SloSyntax {
    Percentile, // key<=value, keys p99 | e2e_p99, ttft_p99, tpot_p99
    PerRequest, // key=value, keys e2e, ttft, tpot
};

// The bounds a string gives; zero = not bounded.
struct SloBounds {
    Duration e2e{}, ttft{}, tpot{};
};

Result<SloBounds> parseSloBounds(std::string_view spec, SloSyntax syntax);

} // namespace bp
