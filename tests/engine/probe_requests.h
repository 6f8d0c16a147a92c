// A calibration probe's answered request as the tests write one
// (engine/sim/calibration/remote_calibration.h ProbeRequest): `tokens`
// streamed events spread evenly from the first token to the end. For
// test_remote_mixed_round and the llama-server model's probe rows.
#pragma once

#include "engine/sim/calibration/remote_calibration.h"

#include <algorithm>
#include <string>

namespace bp::testing {

inline ProbeRequest answered(const std::string &phase, int round, bool stream, int prompt, double sent,
                             double first, double end, int tokens)
{
    ProbeRequest r;
    r.phase = phase;
    r.round = round;
    r.stream = stream;
    r.promptTokens = prompt;
    r.maxTokens = tokens;
    r.sentS = sent;
    r.firstTokenS = first;
    r.endS = end;
    r.outputTokens = tokens;
    r.ok = true;
    for (int i = 0; i < tokens; ++i)
        r.tokenTimesS.push_back(first + (end - first) * i / std::max(1, tokens - 1));
    return r;
}

} // namespace bp::testing
