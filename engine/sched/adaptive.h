// The self-tuning parts of batching, as pure code driven by the caller's
// clock: the adaptive queue delay and the SLO (AIMD) controller.
// docs/optimizations.md explains the rules and their defaults.
#pragma once

#include "engine/core/thread_annotations.h"

#include "engine/core/batching_config.h"
#include "engine/core/histogram.h"

#include <mutex>
#include <optional>
#include <string>

namespace bp {

// The queue delay for an observed arrival rate: the time `fill` ×
// max_batch_size requests take to arrive, clamped to the operator's bounds.
// A zero rate gives the upper bound.
Duration adaptiveDelay(double ratePerS, int maxBatchSize, const AdaptiveDelayConfig &config);

// Clipper-style AIMD on max_batch_size and max_queue_delay against a p99
// target. observe() is thread-safe (executors call it once per batch);
// evaluate() is called by the scheduling thread.
class SloController {
public:
    void observe(Duration latency, std::uint64_t count = 1);

    struct Adjustment {
        BatchingConfig config;
        std::string reason; // "p99 12.3ms > target 10ms over 2s (812 requests): back off"
    };
    // At most once per `slo.period`: the adjusted config and why, or nullopt
    // (disabled, period not over, too few samples, or nothing to change).
    std::optional<Adjustment> evaluate(const BatchingConfig &current, TimePoint now);

private:
    Mutex m_mutex;
    LatencyHistogram m_window GUARDED_BY(m_mutex);
    bool m_started = false;
    TimePoint m_periodStart{};
};

} // namespace bp
