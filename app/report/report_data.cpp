#include "report_data.h"

#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"
#include "engine/store/trace_store.h"

#include <sqlite3.h>

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

// Reads a session's request and batch rows one at a time on a connection of
// its own (WAL: beside the store's), so a report on a session of millions of
// rows holds a few integers per completed request, never the records.
struct RecordScan {
    sqlite::Connection db;
    std::int64_t session;

    template <typename Row> Status forEach(const char *sql, const char *what, Row row)
    {
        auto st = db.prepare(sql);
        if (!st)
            return st.status();
        st->bind(1, session);
        int rc;
        while ((rc = st->step()) == SQLITE_ROW)
            row(*st);
        return rc == SQLITE_DONE ? Status::ok() : db.error(rc, what);
    }
};

// The largest batch dispatched in each sample's interval (previous sample,
// this sample]; batches after the last sample count towards the last one.
Result<std::vector<int>> largestBatchPerSample(RecordScan &scan, const std::vector<MetricSample> &samples)
{
    std::vector<int> out(samples.size(), 0);
    if (samples.empty())
        return out;
    Status s =
        scan.forEach("SELECT dispatched_ns, size FROM batches WHERE session_id = ?", "read batch sizes",
                     [&](const sqlite::Statement &st) {
                         const Duration at(st.int64At(0));
                         auto it =
                             std::lower_bound(samples.begin(), samples.end(), at,
                                              [](const MetricSample &m, Duration t) { return m.at < t; });
                         const std::size_t i =
                             it == samples.end() ? samples.size() - 1 : std::size_t(it - samples.begin());
                         out[i] = std::max(out[i], int(st.int64At(1)));
                     });
    if (!s)
        return s;
    return out;
}

} // namespace

void ExtraFiguresBuilder::add(StatusCode status, Duration queueWait, Duration compute, Duration ttft,
                              int outputTokens)
{
    if (status == StatusCode::DeadlineExceeded)
        ++m_f.timeouts;
    if (status != StatusCode::Ok)
        return;
    m_wait.push_back(queueWait.count());
    m_compute.push_back(compute.count());
    m_f.generatedTokens += std::uint64_t(std::max(0, outputTokens));
    if (outputTokens > 0 && ttft.count() > 0)
        m_ttft.push_back(ttft.count());
    if (outputTokens >= 2)
        ++m_f.tpotRequests;
}

ExtraFigures ExtraFiguresBuilder::finish() &&
{
    ExtraFigures f = m_f;
    f.queueWaitP90Ms = percentiles(std::move(m_wait)).p90Ms;
    f.compute = percentiles(std::move(m_compute));
    if (!m_ttft.empty())
        f.ttft = percentiles(std::move(m_ttft));
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
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    RecordScan scan{std::move(*db), sessionId};
    ExtraFiguresBuilder extra;
    Duration first = Duration::max(), last = Duration::min();
    Status read = scan.forEach(
        "SELECT status, queue_wait_ns, compute_ns, ttft_ns, output_tokens, arrival_ns, total_ns "
        "FROM requests WHERE session_id = ?",
        "read requests", [&](const sqlite::Statement &st) {
            extra.add(parseStatusCode(st.textAt(0)).value_or(StatusCode::Internal), Duration(st.int64At(1)),
                      Duration(st.int64At(2)), Duration(st.int64At(3)), int(st.int64At(4)));
            const Duration arrival(st.int64At(5));
            first = std::min(first, arrival);
            last = std::max(last, arrival + Duration(st.int64At(6)));
        });
    if (!read)
        return read;
    auto largest = largestBatchPerSample(scan, *samples);
    if (!largest)
        return largest.status();

    ReportData d;
    d.session = std::move(*session);
    d.summary = std::move(*summary);
    d.extra = std::move(extra).finish();
    d.configHistory = std::move(*history);
    d.maxBatchSize = std::move(*largest);
    d.samples = std::move(*samples);
    if (first <= last) {
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

ModelFacts modelFacts(const SessionInfo &session)
{
    ModelFacts f;
    const nlohmann::json &host = session.host;
    if (!host.is_object())
        return f;
    const auto model = host.find("model");
    if (model == host.end() || !model->is_object())
        return f;
    if (auto it = model->find("architecture");
        it != model->end() && it->is_string() && !it->get<std::string>().empty())
        f.architecture = it->get<std::string>();
    if (auto it = model->find("dtype"); it != model->end() && it->is_string())
        f.dtype = it->get<std::string>();
    if (auto it = model->find("kv_bytes_per_token"); it != model->end() && it->is_number_integer())
        f.kvBytesPerToken = it->get<std::int64_t>();
    if (auto it = model->find("parameters"); it != model->end() && it->is_number_integer())
        f.parameters = it->get<std::int64_t>();
    return f;
}

} // namespace bp::report
