// The unit of work and its answer.
//
// Ownership and threading contract:
//  - Engine::submit() takes the Request and its Completion by value. When
//    submit() returns a non-OK Status the completion is NOT called (ownership
//    of the completion moves only on success, as in Triton's core).
//  - Every accepted request receives exactly one Completion call, on an engine
//    thread (an executor or the scheduler). A completion must not block and
//    must not call back into the engine synchronously with a lock held; REST
//    and GUI code re-post the Response to their own threads.
#pragma once

#include "clock.h"
#include "status.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace bp {

using TokenId = std::int32_t;

// Why a batch left the queue when it did. Recorded on every batch and every
// response so an operator can see it.
enum class DispatchReason {
    Single,       // policy `none`: one request, as soon as an instance is free
    Full,         // reached max_batch_size
    DelayExpired, // the oldest request waited max_queue_delay
    StaticFull,   // `static`: collected exactly N requests
    Drain,        // shutting down, partial batch flushed
    CacheHit,     // answered from the response cache; no batch ran
};
std::string_view dispatchReasonName(DispatchReason reason);

// One generated token, reported while the request runs (streaming).
struct TokenEvent {
    std::uint64_t requestId = 0;
    TokenId token = 0;
    int index = 0;  // 0 = the first generated token
    TimePoint at{}; // engine clock, when the token was ready
};

struct Request {
    std::uint64_t id = 0;              // assigned by the engine when 0
    std::vector<TokenId> tokens;       // the input sequence; must not be empty
    int maxNewTokens = 0;              // >0 asks a generative model for that many tokens
    std::optional<TimePoint> deadline; // fail with DeadlineExceeded if not started by then
    TimePoint arrival{};               // set by submit() from the engine clock when default
    int priority = 0;                  // higher first within a queue (see docs/scheduling.md)
    // A multi-turn conversation's id (0 = none) and this request's turn
    // (1-based), stored with the request (requests.conversation_id, turn).
    std::int64_t conversation = 0;
    int turn = 0;
    // Called on an engine thread for every generated token, in order, before
    // the completion. Must be cheap and must not call into the engine. Optional.
    std::function<void(const TokenEvent &)> onToken;
    // Set to true by the client (e.g. an HTTP client disconnected); the
    // scheduler stops the request at its next step/decision and completes it
    // with StatusCode::Cancelled, freeing its sequence. Optional.
    std::shared_ptr<std::atomic<bool>> cancelled;
};

struct Timing {
    Duration queueWait{};        // arrival -> batch dispatched
    Duration compute{};          // batch start -> batch end (shared by the batch)
    Duration total{};            // arrival -> completion
    Duration timeToFirstToken{}; // generative models: arrival -> first token ready
    // generative models with 2+ tokens: (last token - first token) / (tokens - 1)
    Duration timePerOutputToken{};
    // generative models with 2+ tokens under policy `continuous`: the gap
    // before each token after the first (n - 1 of them, in order), as the
    // scheduler saw them. Empty for request-level generation, where only the
    // first and last token times are known (outcome.h's interTokenGaps()).
    std::vector<Duration> interTokenLatencies;
    // The part of queueWait the policy meant to spend (waiting for company
    // until the batch filled or the delay expired). queueWait minus this is
    // the scheduler's own lateness.
    Duration intendedWait{};
};

// Time per output token, the one definition the engine, the simulator, the
// tuner and the benches share: a request's own first token to its own last,
// over the gaps between them — (last − first) / (tokens − 1). `first` and
// `last` are measured from the same origin (the batch's start, the
// arrival). Zero below two tokens or when the last is not after the first.
// Not (end to end − TTFT) / (tokens − 1): under request-level batching a
// short request ends with its batch, after its own last token.
inline Duration timePerOutputToken(Duration first, Duration last, std::size_t tokens)
{
    if (tokens < 2 || last <= first)
        return Duration::zero();
    return (last - first) / std::int64_t(tokens - 1);
}

struct BatchFacts {
    std::uint64_t batchId = 0;
    int size = 0;         // requests in the batch
    int paddedLength = 0; // sequence length every member was padded to
    int bucket = 0;       // queue index (bucketed policy), else 0
    DispatchReason reason = DispatchReason::Single;
};

struct Response {
    std::uint64_t requestId = 0;
    Status status;
    bool cacheHit = false;       // served from the response cache (batch facts are empty)
    int cachedTokens = 0;        // prompt tokens served from the KV prefix cache (policy continuous)
    std::vector<float> values;   // e.g. class logits of an encoder
    std::vector<TokenId> tokens; // generated tokens (decoder) or the echo
    Timing timing;
    BatchFacts batch;
};

using Completion = std::function<void(Response &&)>;

} // namespace bp
