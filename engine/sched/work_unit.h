// The unit of work: what a Scheduler hands a free executor, how it ran, and
// what the scheduler hands back after it (engine/sched/scheduler.h).
//
// One unit, one execute (engine/executor_step.h): a unit is either a batch
// of whole requests (the request-level policies; Backend::run computes every
// member's whole answer) or one step over the running sequences (policy
// `continuous`; StepModel::step appends a chunk or a token to each). The
// executor runs it on the model, times it with its clock, and gives the
// outcome (UnitRun) back to the scheduler, which says which requests ended
// and with what answer (UnitDone). The engine's threads and the simulator
// run the same step; only the clock and the backend differ.
#pragma once

#include "engine/core/records.h"
#include "engine/core/request.h"
#include "engine/model/backend.h"
#include "policy.h"

#include <cstdint>
#include <variant>
#include <vector>

namespace bp {

// A queued request and the completion it is owed.
struct Pending {
    Request request;
    Completion done;
    std::uint64_t seq = 0; // admission order, set by admit()
};

// Request-level: whole requests, run together by Backend::run and completed
// together.
struct Batch {
    std::uint64_t id = 0;
    std::vector<Pending> items;
    int paddedLength = 0;
    int bucket = 0;
    DispatchReason reason = DispatchReason::Single;
    PolicyKind policy = PolicyKind::None;
    TimePoint dispatchedAt{};
    TimePoint intendedAt{};
    std::uint64_t configVersion = 0;
};

// Iteration-level (policy `continuous`): one step over the running
// sequences, run by StepModel::step.
struct StepWork {
    std::uint64_t id = 0;
    std::vector<StepItem> items; // each running sequence at most once
    int prefillTokens = 0;       // tokens of prompt chunks in items
    int decodeTokens = 0;        // tokens of decodes in items
    int joined = 0;              // sequences that joined the running set for this step
    int preempted = 0;           // sequences preempted while deciding this step
    // Prefix caching: context tokens the joining sequences looked up in the
    // cache, and how many of them it held (they skip prefill).
    std::int64_t prefixQueryTokens = 0, prefixHitTokens = 0;
    // Set by the scheduler's finished(): its state once the step's outcome is applied.
    int runningAfter = 0, waitingAfter = 0;
    std::int64_t kvTokensAfter = 0;
    TimePoint dispatchedAt{};
    std::uint64_t configVersion = 0;
};

class WorkUnit {
public:
    WorkUnit(Batch batch) : m_work(std::move(batch)) {}
    WorkUnit(StepWork step) : m_work(std::move(step)) {}

    bool isStep() const { return std::holds_alternative<StepWork>(m_work); }
    // nullptr when the unit is of the other kind.
    Batch *batch() { return std::get_if<Batch>(&m_work); }
    const Batch *batch() const { return std::get_if<Batch>(&m_work); }
    StepWork *step() { return std::get_if<StepWork>(&m_work); }
    const StepWork *step() const { return std::get_if<StepWork>(&m_work); }

    std::uint64_t id() const;
    std::size_t size() const; // requests in a batch, sequences in a step
    TimePoint dispatchedAt() const;
    // The dispatch stamp moved to when the unit really started (the
    // simulator's scheduler lateness: an idle executor wakes late).
    void delayDispatch(Duration by);

private:
    std::variant<Batch, StepWork> m_work;
};

// The memory guard's account of a run (the executor's MemoryGuard fills it).
struct GuardedRun {
    // The status of the whole unit: non-OK only when nothing ran (per
    // sequence statuses are in the results / outcomes).
    Status status;
    int splits = 0;    // how many times a batch was split in halves
    int largestOk = 0; // the largest part that ran (0: none)
};

// How a unit ran on the model, as its executor saw it.
struct UnitRun {
    int executor = 0;
    TimePoint start{}, end{}; // the executor's clock around the model call
    GuardedRun guard;
    std::vector<SequenceResult> results; // a batch: results[i] for items[i]
    std::vector<StepOutcome> outcomes;   // a step: outcomes[i] for items[i]
};

// What the scheduler hands back after a unit (Scheduler::finished): the
// unit's record, and the requests that ended with it, with their answers,
// for the executor to record and complete outside the engine lock.
struct UnitDone {
    BatchRecord record;
    std::vector<Pending> done;
    std::vector<Response> responses; // responses[i] for done[i]
};

} // namespace bp
