#include "engine/sim/fleet/fleet_watch.h"

#include <chrono>

namespace bp {

FleetObservation FleetObserver::observe(double atS, const std::vector<ServerScrape> &round)
{
    FleetObservation o;
    o.atS = atS;
    m_readings.clear();
    double kvSum = 0;
    int kvCount = 0;
    for (const ServerScrape &scrape : round) {
        ServerReading r;
        r.url = scrape.url;
        if (!scrape.metrics) {
            r.error = scrape.error.empty() ? "no answer" : scrape.error;
            m_counters.erase(scrape.url);
            m_readings.push_back(std::move(r));
            continue;
        }
        const prom::Exposition &e = *scrape.metrics;
        r.server = detectServer(e);
        const auto at = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(atS));
        const TargetSample s = m_mappers[scrape.url].map(e, at);
        r.waiting = s.waiting.value_or(s.queue.value_or(0));
        r.running = s.running.value_or(0);
        r.kvUsage = s.kvUsage;
        if (const auto counter = requestsCounter(e, r.server)) {
            const auto previous = m_counters.find(scrape.url);
            if (previous != m_counters.end() && atS > previous->second.atS &&
                *counter >= previous->second.value)
                r.rate = (*counter - previous->second.value) / (atS - previous->second.atS);
            m_counters[scrape.url] = {*counter, atS};
        }
        ++o.ready;
        o.waiting += r.waiting;
        o.running += r.running;
        o.arrivalRate += r.rate.value_or(0);
        if (r.kvUsage) {
            kvSum += *r.kvUsage;
            ++kvCount;
        }
        m_readings.push_back(std::move(r));
    }
    o.kvUsage = kvCount ? kvSum / kvCount : 0;
    return o;
}

} // namespace bp
