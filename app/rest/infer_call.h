// One inference call in flight on the server thread: the HTTP request that
// is waiting, the engine requests it became (one per row) and the answers
// that have come back. The frontend keeps these in a map keyed by call id;
// engine completions carry only (call id, row), never a pointer, so nothing
// an engine thread holds can dangle.
#pragma once

#include "completion_call.h"
#include "connection_queue.h"
#include "oip_codec.h"

#include <chrono>
#include <vector>

namespace bp::rest {

struct InferCall {
    enum class Kind { V1, Oip, Completion };
    using SteadyTime = std::chrono::steady_clock::time_point;

    Kind kind = Kind::V1;
    ReplyTicket ticket;
    std::string modelName;
    OipInferRequest oip;           // Oip: id and wanted outputs (rows moved out on submit)
    CompletionCall completion;     // Completion: identity and stream state
    int rows = 0;                  // requests the call asked for
    int outstanding = 0;           // accepted by the engine, not yet answered
    std::vector<Response> responses;
    std::vector<bool> answered;
    // A row the engine refused at submit; rows after it were not submitted.
    int refusedRow = -1;
    Status refusal;
    // Server-side times of this request (steady clock): Qt handed it over
    // parsed (handleRequest), and it was submitted to the engine (later than
    // `received` when it waited for room in the admission queue).
    SteadyTime received{};
    SteadyTime submitted{};

    // Records row `row`'s answer; true when nothing is outstanding any more.
    bool deliver(int row, Response &&response);
    // The HTTP answer once nothing is outstanding: the first failed row's
    // error in row order, else the formatted result; with Server-Timing.
    HttpReply reply(SteadyTime now) const;
    // `reply` plus the Server-Timing header (milliseconds, µs resolution):
    //   admit;dur=  received -> submitted (waiting for room in the queue)
    //   engine;dur= the engine's arrival -> completion (the slowest row)
    //   total;dur=  received -> this answer was formatted
    // A load generator subtracts `total` (or `engine`) from its own latency
    // of the same request to get what the HTTP layer adds.
    HttpReply withServerTiming(HttpReply reply, SteadyTime now) const;

private:
    HttpReply formatted() const;
};

} // namespace bp::rest
