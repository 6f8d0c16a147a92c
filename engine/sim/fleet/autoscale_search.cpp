// searchAutoscale (autoscale_sim.h): the cheapest policy that meets the
// SLO, by bisection along ladders of its knobs, on worker threads.
#include "engine/sim/fleet/autoscale_sim.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

namespace bp {

namespace {

// The knobs a search varies, as ladders from the most replicas (index 0) to
// the fewest, one ladder per combination of the other knobs.
std::vector<std::vector<AutoscaleKnobs>> ladders(const AutoscaleKnobs &start)
{
    std::vector<std::vector<AutoscaleKnobs>> out;
    const std::vector<double> scale{0.25, 0.35, 0.5, 0.7, 1, 1.4, 2, 2.8, 4};
    if (const auto *k = std::get_if<ReactiveKnobs>(&start)) {
        for (int extraMin : {0, 1})
            for (double down : {std::min(k->downWindowS, 120.0), std::max(k->downWindowS, 600.0)}) {
                std::vector<AutoscaleKnobs> ladder;
                for (double f : scale) {
                    ReactiveKnobs x = *k;
                    x.target = k->target * f;
                    if (x.metric == ScaleMetric::KvUsage)
                        x.target = std::min(x.target, 0.99);
                    x.downWindowS = down;
                    x.bounds.minReplicas = std::min(k->bounds.maxReplicas, k->bounds.minReplicas + extraMin);
                    ladder.emplace_back(x);
                }
                out.push_back(std::move(ladder));
            }
    } else if (const auto *k = std::get_if<PredictiveKnobs>(&start)) {
        for (int extraMin : {0, 1})
            for (double headroom : {1.0, 1.3}) {
                std::vector<AutoscaleKnobs> ladder;
                for (double f : scale) {
                    PredictiveKnobs x = *k;
                    x.replicaRate = k->replicaRate * f;
                    x.headroom = headroom;
                    x.bounds.minReplicas = std::min(k->bounds.maxReplicas, k->bounds.minReplicas + extraMin);
                    ladder.emplace_back(x);
                }
                out.push_back(std::move(ladder));
            }
    } else if (const auto *k = std::get_if<ScheduledKnobs>(&start)) {
        std::vector<AutoscaleKnobs> ladder;
        for (double f : {2.0, 1.5, 1.0, 0.5, 0.0}) { // a longer lead bills earlier
            ScheduledKnobs x = *k;
            x.leadS = std::max(0.0, k->leadS * f);
            ladder.emplace_back(x);
        }
        out.push_back(std::move(ladder));
    }
    return out;
}

} // namespace

AutoscaleSearchResult searchAutoscale(const SimulatorOptions &model, std::span<const PlannedArrival> arrivals,
                                      const AutoscaleSimRequest &request, const AutoscaleKnobs &start,
                                      const AutoscaleSearch &search)
{
    const TimePoint wallStart = SteadyClock::now();
    AutoscaleSearchResult result;
    const auto all = ladders(start);
    const double arrivalsSpanS = arrivals.empty() ? 0 : toSeconds(arrivals.back().offset);
    std::mutex mutex;
    std::size_t nextLadder = 0;
    double bestHours = 0; // 0: none met yet
    auto evaluate = [&](const AutoscaleKnobs &k) {
        AutoscaleSimRequest r = request;
        {
            std::lock_guard lock(mutex);
            r.stopAboveReplicaHours = bestHours;
        }
        // Past this many missed windows it cannot meet the required share.
        const auto windows = std::size_t(std::floor(arrivalsSpanS / r.windowS)) + 1;
        r.stopAboveMissedWindows =
            std::max<std::size_t>(1, std::size_t(std::floor((1 - search.requiredShare) * double(windows))));
        r.progress = nullptr;
        AutoscaleRun run = simulateAutoscale(model, arrivals, r, k);
        std::lock_guard lock(mutex);
        const bool met =
            !run.stopped && !run.cancelled && run.status && run.windowsMetShare() >= search.requiredShare;
        if (met && (bestHours == 0 || run.replicaHours < bestHours)) {
            bestHours = run.replicaHours;
            result.best = k;
            result.bestRun = run;
        }
        ++result.runs;
        result.cancelled = result.cancelled || run.cancelled;
        if (search.progress)
            search.progress(result.runs, run);
        result.tried.emplace_back(k, run);
        // Stopped for its cost: dearer than the best that met, so only the
        // cheaper end of its ladder can win — search there, as if it met.
        // Stopped for its misses: it did not meet.
        return std::pair{met || (run.stopped && !run.missedOut), run.cancelled};
    };
    auto worker = [&] {
        for (;;) {
            std::size_t ladder = 0;
            {
                std::lock_guard lock(mutex);
                if (nextLadder >= all.size() || result.cancelled)
                    return;
                ladder = nextLadder++;
            }
            // The cheapest rung that meets: bisection (meeting is taken as
            // monotone along the ladder).
            const auto &rungs = all[ladder];
            int lo = 0, hi = int(rungs.size()) - 1;
            while (lo <= hi) {
                const int mid = (lo + hi) / 2;
                const auto [ok, cancelled] = evaluate(rungs[std::size_t(mid)]);
                if (cancelled)
                    return;
                if (ok)
                    lo = mid + 1;
                else
                    hi = mid - 1;
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 1; t < std::max(1, search.threads); ++t)
        threads.emplace_back(worker);
    worker();
    for (auto &t : threads)
        t.join();
    result.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    return result;
}

} // namespace bp
