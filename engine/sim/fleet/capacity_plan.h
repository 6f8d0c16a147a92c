// The capacity planner's search: for each window of a
// trace, the fewest replicas — and the router — that meet an SLO. Generic
// over how a (window, replicas, router) point is judged: fleet_plan.h
// judges it by simulating the window's arrivals on a fleet; a test judges
// it on a synthetic surface.
//
// Search, per window: the verdict is monotone in the replica count (more
// replicas never miss where fewer meet), so the primary router's minimum
// is found by galloping from a hint (the last window's answer: neighbouring
// windows need similar counts) — down 1, 2, 4, ... while it meets, or up
// 1, 2, 4, ... until it does — then bisection between the last miss and the
// first meet: O(log) evaluations, not a scan. Each other router is then
// tried one replica below the best so far and, when it meets there, searched
// down the same way; it wins only with fewer replicas (ties keep the
// earlier router). A window that misses even at maxReplicas gets
// replicas = 0 (not met).
//
// Threading: windows are independent; `threads` workers take them in turn
// (the judge must then be thread-safe, or give each window its own state
// through the factory). progress runs on the worker threads under a lock;
// `cancel` (any thread) is checked between evaluations: the windows done
// are kept, the rest marked not done. Qt-free.
#pragma once

#include "engine/sim/simulation/router.h"

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace bp {

struct PlanVerdict {
    bool met = false;
    double sloRatio = 0; // worst p99 / bound (<= 1: met)
    double p99S = 0, ttftP99S = 0, tpotP99S = 0;
    std::vector<double> replicaBusy; // per replica: busy fraction over the window
    std::vector<std::size_t> replicaRouted;
};

// Judges one window: (replicas, router) -> verdict. Made once per window,
// so that it can load the window's arrivals once.
using WindowJudge = std::function<PlanVerdict(int replicas, RouterPolicy router)>;
using WindowJudgeFactory = std::function<WindowJudge(std::size_t window)>;

struct CapacitySearch {
    int minReplicas = 1, maxReplicas = 16;
    std::vector<RouterPolicy> routers{RouterPolicy::LeastOutstanding}; // the first is primary
    int threads = 1;
    std::function<void(std::size_t windowsDone, std::size_t windows)> progress;
    const std::atomic<bool> *cancel = nullptr;
};

struct WindowChoice {
    std::size_t window = 0;
    bool done = false;
    int replicas = 0; // 0: the SLO is missed even at maxReplicas
    RouterPolicy router = RouterPolicy::LeastOutstanding;
    PlanVerdict verdict; // at `replicas` with `router` (at maxReplicas when not met)
    // Each router's own minimum where it was searched (0: not below the best / not met).
    std::vector<std::pair<RouterPolicy, int>> routers;
    std::size_t evaluations = 0;
};

struct FleetSearchResult {
    std::vector<WindowChoice> windows;
    std::size_t evaluations = 0;
    bool cancelled = false;
};

FleetSearchResult searchCapacity(std::size_t windows, const WindowJudgeFactory &judge,
                                 const CapacitySearch &search);

// One window's search alone, from `hint` (clamped to the range).
WindowChoice searchWindow(std::size_t window, const WindowJudge &judge, const CapacitySearch &search,
                          int hint);

} // namespace bp
