// Simulated replay (`batchpilot replay --simulate`): a recorded session or an
// imported trace re-driven through the simulator (simulator.h) instead of an
// engine, with a calibration's cost model charging every batch. No model is
// loaded and nothing is computed. The result is a session like any other —
// requests, batches, config history, a metric sample every virtual second —
// so compare, reports and charts work on it; it is marked `kind =
// "simulation"`, `sessions.replay.clock = "simulated"`, and names its
// calibration in `sessions.replay.calibration` (with the fit's error).
//
// Threading: run() blocks the calling thread; the progress callback runs on
// it; `cancel` may be set from any thread.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/sim/tune/sim_interval.h"

#include "engine/replay/replayer.h"

namespace bp {

class SimulatedReplay {
public:
    SimulatedReplay(std::shared_ptr<TraceStore> store, Calibration calibration);

    // How each batch or step is charged (SimulatorOptions::costNoise; by
    // default times a residual drawn from the calibration's fit, with its
    // scheduler lateness drawn too, seeded). Stated in the session's replay
    // facts.
    void setCostNoise(CostNoise noise, std::uint64_t seed = 1);
    // A fleet: `replicas` engines behind a router
    // (SimulatorOptions::replicas, router, routerQueueLimit). The session's
    // rows then name their replica, each replica's figures are stored
    // (engine/store/fleet_store.h) and sessions.replay.fleet says the fleet.
    void setFleet(int replicas, RouterOptions router, int routerQueueLimit = 0);

    // `options.clock` is ignored (the session says "simulated"); the other
    // options mean what they mean for Replayer::run. The model's limits
    // (clamping, max_new_tokens) come from the calibration.
    Result<ReplayOutcome> run(const ReplayOptions &options, const Replayer::ProgressFn &progress = {},
                              const std::atomic<bool> *cancel = nullptr);

    // The last run's latency figures with the fit's spread carried through
    // (sim_interval.h); none when it was cancelled or the calibration has
    // no fit error for its units.
    const std::optional<SimulatedInterval> &interval() const { return m_interval; }

private:
    std::shared_ptr<TraceStore> m_store;
    Calibration m_calibration;
    CostNoise m_noise = CostNoise::Drawn;
    std::uint64_t m_seed = 1;
    int m_replicas = 1;
    RouterOptions m_router;
    int m_routerQueueLimit = 0;
    std::optional<SimulatedInterval> m_interval;
};

} // namespace bp
