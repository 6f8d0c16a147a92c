// Plain records of what the engine did: one per request, one per batch, one
// per config change. The metrics recorder aggregates them; observers (the
// SQLite trace sink, the console's batch timeline) receive them as values.
#pragma once

#include "batching_config.h"
#include "clock.h"
#include "request.h"

#include <cstdint>
#include <span>
#include <string>

namespace bp {

struct RequestRecord {
    std::uint64_t id = 0;
    TimePoint arrival{};
    Duration queueWait{};
    Duration compute{};
    Duration total{};
    Duration timeToFirstToken{}; // zero when nothing was generated
    // (last token - first token) / (outputTokens - 1); zero below two tokens
    Duration timePerOutputToken{};
    // Inter-token latency: the gap before each generated token after the
    // first, outputTokens - 1 of them, in order. Under `continuous` these are
    // the gaps the scheduler measured, one per step that produced a token
    // (stalls from prefills or preemption included). Request-level
    // generation (Backend::run) only knows the first and last token times:
    // every gap is then recorded as timePerOutputToken, so the ITL
    // distribution degenerates to TPOT for those policies.
    std::vector<Duration> interTokenLatencies;
    int inputTokens = 0;
    int outputTokens = 0;
    int bucket = 0;
    std::uint64_t batchId = 0; // 0 when the request never ran
    StatusCode status = StatusCode::Ok;
    bool cacheHit = false; // answered from the response cache
    // Prompt tokens served from the KV prefix cache at its first join
    // (policy `continuous` with prefix_cache.enabled): they skipped prefill.
    int cachedTokens = 0;
    int priority = 0;
    // A fleet simulation (engine/sim/simulation/simulator.h): the replica that served
    // it, and how long it waited in the router's queue before that (part of
    // queueWait). 0 for a single engine.
    int replica = 0;
    Duration routerWait{};
    std::int64_t conversation = 0; // multi-turn (Request::conversation); 0 = none
    int turn = 0;
};

struct BatchRecord {
    std::uint64_t id = 0;
    TimePoint dispatchedAt{};
    // When the policy's condition became true (last member's arrival for a
    // full batch, oldest arrival + delay for an expired one). The difference
    // to dispatchedAt is the scheduler's own lateness.
    TimePoint intendedAt{};
    TimePoint startedAt{}; // an executor began running it (dispatch -> start = hand-off)
    int size = 0;
    int paddedLength = 0;
    std::int64_t realTokens = 0;   // sum of input lengths
    std::int64_t paddedTokens = 0; // size * paddedLength
    Duration compute{};
    DispatchReason reason = DispatchReason::Single;
    PolicyKind policy = PolicyKind::None;
    int bucket = 0;
    int executor = 0;
    int replica = 0; // a fleet simulation's replica (0 for a single engine)
    std::uint64_t configVersion = 0;
    StatusCode status = StatusCode::Ok;
    // Out-of-memory retries: how many times the batch was split in halves
    // before every part ran (0 = it ran whole).
    int oomSplits = 0;

    // Policy `continuous`: one record per step (zero for request batches).
    int prefillTokens = 0, decodeTokens = 0; // tokens in the step
    int joined = 0;                          // sequences that joined the running set for it
    int running = 0, waiting = 0;            // sequences after the step
    std::int64_t kvTokens = 0;               // tokens in KV caches after the step
    int preempted = 0;                       // sequences preempted deciding this step
    // Prefix caching: context tokens looked up for the sequences that
    // joined for this step, and the cached ones among them.
    std::int64_t prefixQueryTokens = 0, prefixHitTokens = 0;
};

struct ConfigChange {
    TimePoint at{};
    std::uint64_t version = 0; // 1 = the initial config
    std::string summary;       // describeChange(previous, config), "initial" for version 1
    std::string origin;        // "gui", "rest", "cli", "slo-controller", "memory-guard", ...
    BatchingConfig config;
};

// Receives records on engine threads. Implementations must be fast and must
// not block (push into a bounded queue and return); they must not call back
// into the Engine. They should not throw: the engine catches anything a
// callback throws, reports it on stderr (the first few times) and carries on
// with the other observers and the completions.
class EngineObserver {
public:
    virtual ~EngineObserver() = default;
    virtual void onBatchCompleted(const BatchRecord &, std::span<const RequestRecord>) {}
    // A request that never ran: rejected at submit, expired in the queue,
    // or failed on shutdown.
    virtual void onRequestFailed(const RequestRecord &) {}
    // A request answered from the response cache (on the submitting thread).
    virtual void onRequestServedFromCache(const RequestRecord &) {}
    virtual void onConfigChanged(const ConfigChange &) {}
};

} // namespace bp
