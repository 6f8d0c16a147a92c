// Decode runs: the simulator's coalesced steps (sim/simulation/simulator.h,
// SimulatorOptions::coalesceDecodeRuns). Not part of the Scheduler seam
// (scheduler.h) that the executor step drives: a scheduler that can say its
// next decisions ahead of time implements this interface as well
// (ContinuousScheduler does; the request-level Batcher and the server
// models do not), and EngineCore::beginDecodeRunLocked finds it with a
// dynamic_cast. The engine's threads never ask for one.
#pragma once

#include "engine/core/clock.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace bp {

// A run of decode steps a scheduler would decide one after another while
// nothing else happens: every running sequence fed its next token in each,
// none finishing, none preempted.
struct DecodeRun {
    std::vector<std::uint64_t> sequences; // the model's live-sequence ids, in the step's order
    int steps = 0;                        // at most this many such steps in a row
};

class DecodeRunSource {
public:
    virtual ~DecodeRunSource() = default;
    // With no unit in flight: the run of at most `maxSteps` steps its next
    // decisions would be if no request arrived (nullopt: none), held as a
    // unit in flight until endDecodeRun().
    virtual std::optional<DecodeRun> beginDecodeRun(int maxSteps) = 0;
    // The run's first ends.size() steps happened, the i-th model call
    // ending at ends[i] (each sequence's next token then): the books as
    // that many steps would leave them. Their unit ids are taken.
    virtual void endDecodeRun(std::span<const TimePoint> ends) = 0;
};

} // namespace bp
