// Building what the engine reports, as pure functions of what happened: the
// Response each request's completion receives and the records the metrics
// and the observers receive. No clock, no lock, no engine state: the
// executor measures, these assemble (and tests can check them alone).
#pragma once

#include "engine/core/records.h"
#include "engine/model/backend.h"
#include "scheduler.h"
#include "work_unit.h"

#include <string>
#include <vector>

namespace bp {

// The inter-token gaps of a request that generated `tokens` tokens: the
// measured ones (timing.interTokenLatencies, policy `continuous`), else, for
// request-level generation where only the first and last token times are
// known, tokens - 1 copies of timing.timePerOutputToken. Empty below two
// tokens (or without a TPOT).
std::vector<Duration> interTokenGaps(const Timing &timing, std::size_t tokens);

// A request's record before anything happened to it (id, arrival, input
// length, priority).
RequestRecord requestRecordOf(const Request &request);

// A batch as it ran (`run`: when, on which executor, the memory guard's outcome).
BatchRecord batchRecordOf(const Batch &batch, const UnitRun &run);

// Each member's Response (same order as batch.items). A non-OK run status
// overrides every member's own. Moves the results' values and tokens into
// the responses. TTFT and TPOT are the engine's one definition for
// request-level generation: first token = dispatch wait + the run's time to
// it; TPOT = (last token - first token) / (tokens - 1), per member.
void batchResponses(const Batch &batch, UnitRun &run, std::vector<Response> &responses);

// A batch's hand back: every member ends with it. Fills `done` (the batch
// record, the members, their responses) and empties batch.items. Any
// scheduler in force when the batch comes back calls it (a policy switch
// may have replaced the one that dispatched it).
void batchDone(Batch &batch, UnitRun &run, UnitDone &done);

// A request that never ran (expired, shut down), failed at `now` with
// `code`: its Response, and its record in queue `bucket`.
Response failedResponse(const Request &request, const Status &status, TimePoint now);
RequestRecord failedRecord(const Request &request, StatusCode code, TimePoint now, int bucket);

// A request answered before admission (a response-cache hit) at `now`:
// `answer` completed with the request's id and timing, and its record.
void answeredOutcome(const Request &request, TimePoint now, Response &answer, RequestRecord &record);

// A generation step (policy `continuous`) as a batch record: its items are
// the batch, its prompt and decode tokens the real (= padded) tokens.
BatchRecord stepRecordOf(const StepWork &step, const UnitRun &run);

// The record of a request that ended with `response` in unit `batchId`
// (its queue: the response's batch bucket).
RequestRecord completedRecord(const Request &request, const Response &response, std::uint64_t batchId);

} // namespace bp
