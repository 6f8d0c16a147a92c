// The console's capacity figure: how many requests/s the model sustains for
// the traffic panel's requests, so the panel can default to a rate the model
// serves and warn before the queue runs away.
//
// Capacity is the ceiling of docs/benchmarks.md (the best throughput over
// batch sizes, measured offline on the model: no queue, no scheduler) on a
// short grid: batch sizes 1, 2, 4, ... up to the current batch limit, at the
// panel's mean input length and max_new_tokens, one warm-up and three timed
// runs per size (median), timed by the one backend timing
// (engine/sim/calibration/backend_timing.h). measureCapacity runs the model: call it off the
// GUI thread (Backend::run is safe beside the engine's executors).
#pragma once

#include "engine/model/backend.h"

#include <QString>

#include <cstddef>
#include <deque>

namespace bp::ui {

struct CapacityEstimate {
    double requestsPerS = 0; // 0 = unknown
    int batch = 0;           // the batch size that gave it
    int batchLimit = 0;      // the largest batch size measured
    int length = 0;          // input tokens per request
    int newTokens = 0;
};

Result<CapacityEstimate> measureCapacity(Backend &backend, int length, int maxNewTokens, int batchLimit);

// The rate the panel defaults to: 70% of capacity (headroom for Poisson
// bursts), at most 10,000 req/s (beyond that the generator and the charts,
// not the model, set the pace: docs/benchmarks.md, console), rounded to two
// significant figures.
double defaultRateFor(double capacity);

// Offered load against capacity, for the label and its colour.
enum class LoadLevel { Unknown, Comfortable, Near, Over };
LoadLevel loadLevel(double offered, double capacity); // Near from 0.85, Over from 1.0 of capacity

// Is the queue running away? True after `window` consecutive snapshots whose
// queue depth grew, ending above `threshold` requests; one snapshot that
// does not grow resets it.
class QueueTrend {
public:
    explicit QueueTrend(int window = 4) : m_window(window) {}
    void add(std::size_t depth);
    void reset();
    bool growing(std::size_t threshold) const;
    std::size_t depth() const { return m_last; }

private:
    int m_window;
    int m_rises = 0;
    bool m_any = false;
    std::size_t m_last = 0;
};

} // namespace bp::ui
