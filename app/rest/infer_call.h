// One inference call in flight on the server thread: the HTTP request that
// is waiting, the engine requests it became (one per row: an OIP row, an
// OpenAI prompt) and the answers that have come back. The call table
// (call_table.h) keeps these in a map keyed by call id; engine completions
// carry only (call id, row), never a pointer, so nothing an engine thread
// holds can dangle.
#pragma once

#include "connection_queue.h"
#include "oip_codec.h"
#include "openai_stream.h"

#include <chrono>
#include <vector>

namespace bp::rest {

class CallHandler;

struct InferCall {
    enum class Kind { V1, Oip, OpenAi };
    using SteadyTime = std::chrono::steady_clock::time_point;

    Kind kind = Kind::V1;
    CallHandler *handler = nullptr; // the API that answers it (outlives every call)
    ReplyTicket ticket;
    std::string modelName;
    std::shared_ptr<const TextTokenizer> tokenizer; // V1: the answer's "text" (null: bytes)
    OipInferRequest oip;                            // Oip: id and wanted outputs (rows moved out on submit)
    OpenAiCall openAi;                              // OpenAi: identity, choices and stream state
    bool wantsTokens = false;                       // every row reports each token (Request::onToken)
    // Shared by every row's Request::cancelled (null: the rows run to the
    // end whatever happens to the client).
    std::shared_ptr<std::atomic<bool>> cancelled;
    int rows = 0;        // requests the call asked for
    int outstanding = 0; // accepted by the engine, not yet answered
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
    // The first row, in row order, that failed or was refused (one that was
    // only cancelled counts when no other failed); -1 if none.
    int firstFailedRow() const;
    const Status &rowStatus(int row) const;
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
