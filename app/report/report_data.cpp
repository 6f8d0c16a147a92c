#include "report_data.h"

#include "engine/store/trace_store.h"

#include <algorithm>

namespace bp::report {

namespace {

constexpr double kNsPerMs = 1e6;

Percentiles percentiles(std::vector<std::int64_t> values)
{
    std::sort(values.begin(), values.end());
    Percentiles p;
    p.count = values.size();
    p.p50Ms = nearestRank(values, 0.50) / kNsPerMs;
    p.p90Ms = nearestRank(values, 0.90) / kNsPerMs;
    p.p99Ms = nearestRank(values, 0.99) / kNsPerMs;
    return p;
}

// The largest batch dispatched in each sample's interval (previous sample,
// this sample]; batches after the last sample count towards the last one.
std::vector<int> largestBatchPerSample(const std::vector<MetricSample> &samples,
                                       const std::vector<StoredBatch> &batches)
{
    std::vector<int> out(samples.size(), 0);
    if (samples.empty())
        return out;
    for (const StoredBatch &b : batches) {
        auto it = std::lower_bound(samples.begin(), samples.end(), b.dispatched,
                                   [](const MetricSample &s, Duration t) { return s.at < t; });
        const std::size_t i = it == samples.end() ? samples.size() - 1 : std::size_t(it - samples.begin());
        out[i] = std::max(out[i], b.size);
    }
    return out;
}

} // namespace

ExtraFigures extraFigures(const std::vector<StoredRequest> &requests)
{
    ExtraFigures f;
    std::vector<std::int64_t> wait, compute, ttft;
    for (const StoredRequest &r : requests) {
        if (r.status == StatusCode::DeadlineExceeded)
            ++f.timeouts;
        if (r.status != StatusCode::Ok)
            continue;
        wait.push_back(r.queueWait.count());
        compute.push_back(r.compute.count());
        f.generatedTokens += std::uint64_t(std::max(0, r.outputTokens));
        if (r.outputTokens > 0 && r.timeToFirstToken.count() > 0)
            ttft.push_back(r.timeToFirstToken.count());
        if (r.outputTokens >= 2)
            ++f.tpotRequests;
    }
    f.queueWaitP90Ms = percentiles(wait).p90Ms;
    f.compute = percentiles(std::move(compute));
    if (!ttft.empty())
        f.ttft = percentiles(std::move(ttft));
    return f;
}

Result<ReportData> loadReportData(const TraceStore &store, std::int64_t sessionId)
{
    auto session = store.session(sessionId);
    if (!session) {
        if (session.status().code() == StatusCode::NotFound)
            return Status(StatusCode::NotFound,
                          "no session " + std::to_string(sessionId) + " in " + store.path());
        return session.status();
    }
    auto summary = store.summary(sessionId);
    if (!summary)
        return summary.status();
    auto history = store.configHistory(sessionId);
    if (!history)
        return history.status();
    auto samples = store.metricSamples(sessionId);
    if (!samples)
        return samples.status();
    auto requests = store.requests(sessionId);
    if (!requests)
        return requests.status();
    auto batches = store.batches(sessionId);
    if (!batches)
        return batches.status();

    ReportData d;
    d.session = std::move(*session);
    d.summary = std::move(*summary);
    d.extra = extraFigures(*requests);
    d.configHistory = std::move(*history);
    d.maxBatchSize = largestBatchPerSample(*samples, *batches);
    d.samples = std::move(*samples);
    if (!requests->empty()) {
        Duration first = Duration::max(), last = Duration::min();
        for (const StoredRequest &r : *requests) {
            first = std::min(first, r.arrival);
            last = std::max(last, r.arrival + r.total);
        }
        d.firstArrivalS = toSeconds(first);
        d.lastCompletionS = toSeconds(last);
    }
    // A source that was deleted since leaves the link NULL (or dangling in
    // an older file): the report then simply has no comparison.
    if (d.session.sourceSessionId) {
        if (auto source = store.summary(*d.session.sourceSessionId))
            d.sourceSummary = std::move(*source);
    }
    if (d.session.sourceTraceId) {
        if (auto trace = store.trace(*d.session.sourceTraceId))
            d.sourceTrace = std::move(*trace);
    }
    if (auto tunings = tuningsForSession(store, sessionId))
        d.tunings = std::move(*tunings);
    if (auto replicas = replicaFigures(store, sessionId))
        d.replicas = std::move(*replicas);
    if (auto plans = capacityPlansFor(store, sessionId, d.session.sourceTraceId))
        d.plans = std::move(*plans);
    d.generatedAtUs = wallClockMicros();
    return d;
}

} // namespace bp::report
