#include "report_json.h"

#include "report_figures.h"
#include "report_fleet.h"
#include "report_recommendation.h"

#include "engine/config/config_json.h"

namespace bp::report {

namespace {

using nlohmann::json;

template <typename T> json orNull(const std::optional<T> &v)
{
    return v ? json(*v) : json(nullptr);
}

void percentiles(const std::optional<Percentiles> &p, const char *prefix, json &into)
{
    into[std::string(prefix) + "_p50_ms"] = p ? json(p->p50Ms) : json(nullptr);
    into[std::string(prefix) + "_p90_ms"] = p ? json(p->p90Ms) : json(nullptr);
    into[std::string(prefix) + "_p99_ms"] = p ? json(p->p99Ms) : json(nullptr);
}

json sessionJson(const ReportData &d)
{
    const SessionInfo &s = d.session;
    const ModelFacts model = modelFacts(s);
    return {{"id", s.id},
            {"kind", s.kind},
            {"model", s.model},
            {"device", s.device},
            // null where the session did not record them (replays, older sessions)
            {"architecture", orNull(model.architecture)},
            {"dtype", orNull(model.dtype)},
            {"kv_bytes_per_token", orNull(model.kvBytesPerToken)},
            {"parameters", orNull(model.parameters)},
            {"host", s.host},
            {"notes", s.notes},
            {"source_session_id", orNull(s.sourceSessionId)},
            {"source_trace_id", orNull(s.sourceTraceId)},
            {"replay", s.replay},
            {"request_records", s.requestCount},
            {"batch_records", s.batchCount},
            {"dropped_rows", s.droppedRows},
            {"logging_error", s.loggingError}};
}

json timeSpanJson(const ReportData &d)
{
    const SessionInfo &s = d.session;
    json j{{"started_at_us", s.startedAtUs},
           {"started_at", isoTime(s.startedAtUs).toStdString()},
           {"ended_at_us", orNull(s.endedAtUs)},
           {"ended_at", s.endedAtUs ? json(isoTime(*s.endedAtUs).toStdString()) : json(nullptr)},
           {"wall_s", s.endedAtUs ? json(double(*s.endedAtUs - s.startedAtUs) / 1e6) : json(nullptr)},
           {"first_arrival_s", d.firstArrivalS},
           {"last_completion_s", d.lastCompletionS},
           {"traffic_s", d.summary.durationS}};
    return j;
}

json headlineJson(const ReportData &d)
{
    json j = toJson(d.summary); // the store's figures, unchanged
    const ExtraFigures &x = d.extra;
    j["queue_wait_p90_ms"] = x.queueWaitP90Ms;
    percentiles(std::optional<Percentiles>(x.compute), "compute", j);
    percentiles(x.ttft, "ttft", j);
    j["ttft_requests"] = x.ttft ? x.ttft->count : 0;
    j["tpot_requests"] = x.tpotRequests; // TPOT, goodput and its SLO are the summary's (above)
    j["timeouts"] = x.timeouts;
    j["generated_tokens"] = x.generatedTokens;
    return j;
}

json timelineJson(const ReportData &d)
{
    json out = json::array();
    for (const StoredConfigChange &c : d.configHistory)
        out.push_back({{"version", c.version},
                       {"at_s", toSeconds(c.at)},
                       {"origin", c.origin},
                       {"summary", c.summary},
                       {"config", toJson(c.config)}});
    return out;
}

// Column-wise: one array per figure, index-aligned with "t_s".
json seriesJson(const ReportData &d)
{
    json t = json::array(), rps = json::array(), inTok = json::array(), outTok = json::array(),
         p50 = json::array(), p90 = json::array(), p99 = json::array(), waitP99 = json::array(),
         depth = json::array(), inFlight = json::array(), meanBatch = json::array(), maxBatch = json::array(),
         padding = json::array(), busy = json::array(), submitted = json::array(), completed = json::array(),
         failed = json::array(), version = json::array(), dropped = json::array();
    for (std::size_t i = 0; i < d.samples.size(); ++i) {
        const MetricSample &m = d.samples[i];
        t.push_back(toSeconds(m.at));
        rps.push_back(m.requestsPerS);
        inTok.push_back(m.inputTokensPerS);
        outTok.push_back(m.outputTokensPerS);
        p50.push_back(m.totalP50Us / 1000);
        p90.push_back(m.totalP90Us / 1000);
        p99.push_back(m.totalP99Us / 1000);
        waitP99.push_back(m.queueWaitP99Us / 1000);
        depth.push_back(m.queueDepth);
        inFlight.push_back(m.inFlight);
        meanBatch.push_back(m.meanBatchSize);
        maxBatch.push_back(d.maxBatchSize[i]);
        padding.push_back(m.paddingEfficiency);
        busy.push_back(m.busyFraction);
        submitted.push_back(m.submitted);
        completed.push_back(m.completed);
        failed.push_back(m.failed);
        version.push_back(m.configVersion);
        dropped.push_back(m.droppedRows);
    }
    return {{"t_s", t},
            {"requests_per_s", rps},
            {"input_tokens_per_s", inTok},
            {"output_tokens_per_s", outTok},
            {"latency_p50_ms", p50},
            {"latency_p90_ms", p90},
            {"latency_p99_ms", p99},
            {"queue_wait_p99_ms", waitP99},
            {"queue_depth", depth},
            {"in_flight", inFlight},
            {"mean_batch_size", meanBatch},
            {"max_batch_size", maxBatch},
            {"padding_efficiency", padding},
            {"busy_fraction", busy},
            {"submitted", submitted},
            {"completed", completed},
            {"failed", failed},
            {"config_version", version},
            {"dropped_rows", dropped}};
}

json sourceJson(const ReportData &d)
{
    if (d.sourceSummary)
        return {
            {"kind", "session"}, {"id", d.sourceSummary->sessionId}, {"summary", toJson(*d.sourceSummary)}};
    if (d.sourceTrace) {
        const TraceInfo &t = *d.sourceTrace;
        return {{"kind", "trace"},          {"id", t.id},
                {"name", t.name},           {"format", traceFormatName(t.format)},
                {"rows", t.rows},           {"skipped_rows", t.skippedRows},
                {"duration_s", t.durationS}};
    }
    return nullptr;
}

json comparisonRowsJson(const SessionSummary &a, const SessionSummary &b)
{
    json rows = json::array();
    for (const ComparisonRow &r : comparisonRows(a, b))
        rows.push_back(
            {{"label", r.label}, {"key", r.key}, {"source", r.a}, {"replay", r.b}, {"change", r.change}});
    return rows;
}

} // namespace

json reportToJson(const ReportData &d)
{
    json j{{"report",
            {{"format", "batchpilot-session-report"},
             {"version", kReportJsonVersion},
             {"generated_at_us", d.generatedAtUs},
             {"generated_at", isoTime(d.generatedAtUs).toStdString()}}},
           {"session", sessionJson(d)},
           {"time_span", timeSpanJson(d)},
           {"headline", headlineJson(d)},
           {"config_timeline", timelineJson(d)},
           {"series", seriesJson(d)},
           {"source", sourceJson(d)}};
    json markers = json::array();
    for (const StoredConfigChange &c : d.configHistory)
        if (c.version > 1)
            markers.push_back({{"at_s", toSeconds(c.at)}, {"version", c.version}, {"summary", c.summary}});
    j["config_markers"] = markers;
    if (d.sourceSummary) {
        // a = the source, b = this replay; change = b/a - 1 (null where a is 0).
        json cmp = comparisonJson(*d.sourceSummary, d.summary);
        cmp["rows"] = comparisonRowsJson(*d.sourceSummary, d.summary);
        j["comparison"] = cmp;
    } else {
        j["comparison"] = nullptr;
    }
    j["recommendation"] = recommendationJson(d);
    j["fleet"] = fleetJson(d);
    j["capacity_plans"] = capacityPlanJson(d);
    return j;
}

} // namespace bp::report
