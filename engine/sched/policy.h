// Batching policies as pure functions: (queue state, config, now) ->
// "dispatch this" or "wake me at T". No policy reads a clock, sleeps or
// touches a lock, so the live scheduler, the tests (fake clock) and replay
// (virtual clock) drive the very same code.
#pragma once

#include "engine/core/batching_config.h"
#include "engine/core/request.h"

#include <optional>
#include <span>

namespace bp {

// What a policy may know about one queue. Queues are FIFO by arrival.
struct QueueView {
    std::size_t size = 0;
    TimePoint oldestArrival{}; // meaningful when size > 0
    // Per-queue overrides the Batcher sets for `hybrid`'s static layer and
    // for the effective (adaptive, memory-capped) knobs; 0 / nullopt = take
    // max_batch_size / max_queue_delay from the config.
    int fill = 0;
    std::optional<Duration> delay;
    bool isStatic = false; // a full queue leaves as StaticFull
};

struct DispatchDecision {
    int queue = 0; // which queue to take from
    int count = 0; // how many from its front (1..size)
    DispatchReason reason = DispatchReason::Single;
    // When the dispatch condition became true, if the policy knows it better
    // than "the last member's arrival" (DelayExpired: oldest + delay).
    std::optional<TimePoint> intendedAt;
};

struct Decision {
    std::optional<DispatchDecision> dispatch;
    // With no dispatch: re-evaluate at this time; nullopt = only when a
    // request arrives (or the config changes).
    std::optional<TimePoint> wakeAt;
};

// `draining`: the engine is shutting down; partial batches may leave now.
Decision decide(std::span<const QueueView> queues, const BatchingConfig &config, TimePoint now,
                bool draining);

} // namespace bp
