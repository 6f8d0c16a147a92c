// fleetSnapshot (simulator.h): a fleet's metric sample from its replicas'.
#include "engine/sim/simulation/simulator.h"

#include <algorithm>
#include <utility>

namespace bp {

Snapshot fleetSnapshot(std::span<const Snapshot> replicas)
{
    if (replicas.empty())
        return {};
    Snapshot f = replicas[0];
    if (replicas.size() == 1)
        return f;
    auto merge = [](LatencySummary &into, const LatencySummary &s) {
        const std::uint64_t n = into.count + s.count;
        if (n)
            into.meanUs = (into.meanUs * double(into.count) + s.meanUs * double(s.count)) / double(n);
        into.count = n;
        into.p50Us = std::max(into.p50Us, s.p50Us);
        into.p90Us = std::max(into.p90Us, s.p90Us);
        into.p99Us = std::max(into.p99Us, s.p99Us);
        into.p999Us = std::max(into.p999Us, s.p999Us);
        into.maxUs = std::max(into.maxUs, s.maxUs);
    };
    double busy = f.busyFraction;
    for (std::size_t i = 1; i < replicas.size(); ++i) {
        const Snapshot &s = replicas[i];
        f.submitted += s.submitted;
        f.completed += s.completed;
        for (std::size_t k = 0; k < f.byStatus.size(); ++k)
            f.byStatus[k] += s.byStatus[k];
        f.batches += s.batches;
        f.inputTokens += s.inputTokens;
        f.outputTokens += s.outputTokens;
        f.queueDepth += s.queueDepth;
        f.inFlightBatches += s.inFlightBatches;
        f.arrivalRate += s.arrivalRate;
        f.requestsPerS += s.requestsPerS;
        f.inputTokensPerS += s.inputTokensPerS;
        f.outputTokensPerS += s.outputTokensPerS;
        f.goodputPerS += s.goodputPerS;
        busy += s.busyFraction;
        for (auto [into, from] : {std::pair{&f.total, &s.total},
                                  {&f.queueWait, &s.queueWait},
                                  {&f.compute, &s.compute},
                                  {&f.timeToFirstToken, &s.timeToFirstToken},
                                  {&f.totalAll, &s.totalAll},
                                  {&f.queueWaitAll, &s.queueWaitAll},
                                  {&f.computeAll, &s.computeAll},
                                  {&f.timePerOutputToken, &s.timePerOutputToken}})
            merge(*into, *from);
    }
    f.busyFraction = busy / double(replicas.size());
    return f;
}

} // namespace bp
