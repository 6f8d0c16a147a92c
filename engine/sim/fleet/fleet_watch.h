// What an autoscaler observes of a live fleet (`autoscale
// --watch`): one round of /metrics scrapes, one per server, folded into a
// FleetObservation. Each server's figures come through the one mapping of
// server metrics (engine/telemetry/target_metrics.h): waiting requests (its
// queue when it exposes no waiting series), running sequences and KV usage;
// the request rate is each server's request counter (requestsCounter())
// differenced against the round before, summed. A server that did not
// answer is not ready; a server whose counter went down (restarted) starts
// its rate over.
#pragma once

#include "engine/sim/fleet/autoscaler.h"
#include "engine/telemetry/prometheus_text.h"
#include "engine/telemetry/target_metrics.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bp {

struct ServerScrape {
    std::string url;
    std::optional<prom::Exposition> metrics; // nullopt: no answer (see error)
    std::string error;
};

// Per server, what the last round read (for the printout).
struct ServerReading {
    std::string url, server, error;
    double waiting = 0, running = 0;
    std::optional<double> kvUsage, rate;
};

class FleetObserver {
public:
    // `atS`: seconds on any steady clock; rounds come in time order.
    FleetObservation observe(double atS, const std::vector<ServerScrape> &round);
    const std::vector<ServerReading> &readings() const { return m_readings; }

private:
    struct Counter {
        double value = 0, atS = 0;
    };
    std::map<std::string, TargetMetricsMapper> m_mappers; // by URL
    std::map<std::string, Counter> m_counters;            // by URL
    std::vector<ServerReading> m_readings;
};

} // namespace bp
