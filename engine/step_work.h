// The unit of work of an iteration-level scheduler (policy `continuous`):
// one step over the running sequences, run by StepModel::step, and what the
// scheduler hands back to the executor after it.
#pragma once

#include "backend.h"
#include "scheduler.h"

#include <cstdint>
#include <vector>

namespace bp {

struct StepWork {
    std::uint64_t id = 0;
    std::vector<StepItem> items; // each running sequence at most once
    int prefillTokens = 0;       // tokens of prompt chunks in items
    int decodeTokens = 0;        // tokens of decodes in items
    int joined = 0;              // sequences that joined the running set for this step
    int preempted = 0;           // sequences preempted while deciding this step
    // Set by the scheduler's finished(): its state once the step's outcome is applied.
    int runningAfter = 0, waitingAfter = 0;
    std::int64_t kvTokensAfter = 0;
    TimePoint dispatchedAt{};
    std::uint64_t configVersion = 0;
};

// What finished() returns: the requests whose generation ended (or failed)
// with this step, with their responses, for the executor to complete
// outside the engine lock.
struct StepDone {
    std::vector<Pending> done;
    std::vector<Response> responses; // responses[i] for done[i]
};

} // namespace bp
