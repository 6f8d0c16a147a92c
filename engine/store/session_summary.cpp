#include "session_summary.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

namespace bp {

namespace {

struct Metric {
    const char *label;
    const char *key;
    int decimals; // -1: text row (no change column)
    std::function<double(const SessionSummary &)> value;
    std::function<std::string(const SessionSummary &)> text = {};
};

std::string describeKind(const SessionSummary &s)
{
    if (s.sourceSessionId)
        return s.kind + " of session " + std::to_string(s.sourceSessionId);
    if (s.sourceTraceId)
        return s.kind + " of trace " + std::to_string(s.sourceTraceId);
    return s.kind;
}

std::string describeSlo(const SessionSummary &s)
{
    std::string out;
    auto bound = [&](const char *name, double ms) {
        if (ms <= 0)
            return;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%s<=%gms", out.empty() ? "" : " ", name, ms);
        out += buf;
    };
    bound("ttft", s.sloTtftMs);
    bound("tpot", s.sloTpotMs);
    bound("e2e", s.sloE2eMs);
    return out.empty() ? "none (every completed request)" : out;
}

const std::vector<Metric> &metrics()
{
    static const std::vector<Metric> list = {
        {"kind", "kind", -1, nullptr, describeKind},
        {"model", "model", -1, nullptr,
         [](const SessionSummary &s) { return s.model + " (" + s.device + ")"; }},
        {"config", "config", -1, nullptr, [](const SessionSummary &s) { return s.config; }},
        {"requests", "requests", 0, [](const SessionSummary &s) { return double(s.requests); }},
        {"completed", "completed", 0, [](const SessionSummary &s) { return double(s.completed); }},
        {"rejected", "rejected", 0, [](const SessionSummary &s) { return double(s.rejected); }},
        {"failed", "failed", 0, [](const SessionSummary &s) { return double(s.failed); }},
        {"duration (s)", "duration_s", 2, [](const SessionSummary &s) { return s.durationS; }},
        {"throughput (req/s)", "throughput_rps", 2, [](const SessionSummary &s) { return s.throughputRps; }},
        {"output tokens/s", "output_tokens_per_s", 1,
         [](const SessionSummary &s) { return s.outputTokensPerS; }},
        {"latency mean (ms)", "latency_mean_ms", 3, [](const SessionSummary &s) { return s.latencyMeanMs; }},
        {"latency p50 (ms)", "latency_p50_ms", 3, [](const SessionSummary &s) { return s.latencyP50Ms; }},
        {"latency p90 (ms)", "latency_p90_ms", 3, [](const SessionSummary &s) { return s.latencyP90Ms; }},
        {"latency p99 (ms)", "latency_p99_ms", 3, [](const SessionSummary &s) { return s.latencyP99Ms; }},
        {"queue wait p50 (ms)", "queue_wait_p50_ms", 3,
         [](const SessionSummary &s) { return s.queueWaitP50Ms; }},
        {"queue wait p99 (ms)", "queue_wait_p99_ms", 3,
         [](const SessionSummary &s) { return s.queueWaitP99Ms; }},
        {"TTFT p50 (ms)", "ttft_p50_ms", 3, [](const SessionSummary &s) { return s.ttftP50Ms; }},
        {"TTFT p90 (ms)", "ttft_p90_ms", 3, [](const SessionSummary &s) { return s.ttftP90Ms; }},
        {"TTFT p99 (ms)", "ttft_p99_ms", 3, [](const SessionSummary &s) { return s.ttftP99Ms; }},
        {"prefix cache hit rate", "prefix_cache_hit_rate", 3,
         [](const SessionSummary &s) { return s.prefixCacheHitRate; }},
        {"TPOT p50 (ms)", "tpot_p50_ms", 3, [](const SessionSummary &s) { return s.tpotP50Ms; }},
        {"TPOT p90 (ms)", "tpot_p90_ms", 3, [](const SessionSummary &s) { return s.tpotP90Ms; }},
        {"TPOT p99 (ms)", "tpot_p99_ms", 3, [](const SessionSummary &s) { return s.tpotP99Ms; }},
        {"goodput SLO", "goodput_slo", -1, nullptr, describeSlo},
        {"goodput (req/s)", "goodput_rps", 2, [](const SessionSummary &s) { return s.goodputRps; }},
        {"good requests", "good_completed", 0,
         [](const SessionSummary &s) { return double(s.goodCompleted); }},
        {"batches", "batches", 0, [](const SessionSummary &s) { return double(s.batches); }},
        {"mean batch size", "mean_batch_size", 2, [](const SessionSummary &s) { return s.meanBatchSize; }},
        {"padding efficiency", "padding_efficiency", 3,
         [](const SessionSummary &s) { return s.paddingEfficiency; }},
        {"dropped log rows", "dropped_rows", 0,
         [](const SessionSummary &s) { return double(s.droppedRows); }},
        {"shed by the client", "client_shed", 0,
         [](const SessionSummary &s) { return double(s.clientShed); }},
    };
    return list;
}

std::string number(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string change(double a, double b)
{
    if (a == 0)
        return b == 0 ? "" : "n/a";
    const double rel = (b / a - 1) * 100;
    if (std::fabs(rel) < 0.05)
        return "0.0%";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f%%", rel);
    return buf;
}

std::string pad(const std::string &s, std::size_t width)
{
    return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string table(const std::vector<const SessionSummary *> &columns)
{
    constexpr std::size_t kLabel = 22;
    std::vector<std::vector<std::string>> cells; // [row][column]
    std::vector<std::string> head;
    for (const SessionSummary *s : columns)
        head.push_back("session " + std::to_string(s->sessionId));
    std::vector<std::size_t> width(columns.size(), 12);
    for (const Metric &m : metrics()) {
        std::vector<std::string> row;
        for (const SessionSummary *s : columns)
            row.push_back(m.decimals < 0 ? m.text(*s) : number(m.value(*s), m.decimals));
        if (columns.size() == 2 && m.decimals >= 0)
            row.push_back(change(m.value(*columns[0]), m.value(*columns[1])));
        for (std::size_t c = 0; c < columns.size(); ++c)
            width[c] = std::max(width[c], row[c].size() + 2);
        cells.push_back(std::move(row));
    }
    std::ostringstream out;
    std::string header = pad("", kLabel);
    for (std::size_t c = 0; c < columns.size(); ++c)
        header += pad(head[c], width[c]);
    if (columns.size() == 2)
        header += "change";
    while (!header.empty() && header.back() == ' ')
        header.pop_back();
    out << header << "\n";
    for (std::size_t r = 0; r < cells.size(); ++r) {
        std::string line = pad(metrics()[r].label, kLabel);
        for (std::size_t c = 0; c < cells[r].size(); ++c)
            line += c < columns.size() ? pad(cells[r][c], width[c]) : cells[r][c];
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out << line << "\n";
    }
    return out.str();
}

} // namespace

nlohmann::json goodputSloJson(const GoodputConfig &slo)
{
    auto us = [](Duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); };
    return {{"ttft_us", us(slo.ttft)}, {"tpot_us", us(slo.tpot)}, {"e2e_us", us(slo.e2e)}};
}

GoodputConfig goodputSloFromJson(const nlohmann::json &j)
{
    GoodputConfig slo;
    if (!j.is_object())
        return slo;
    auto us = [&](const char *key) {
        return j.contains(key) && j[key].is_number()
                   ? Duration(std::chrono::microseconds(j[key].get<std::int64_t>()))
                   : Duration::zero();
    };
    slo.ttft = us("ttft_us");
    slo.tpot = us("tpot_us");
    slo.e2e = us("e2e_us");
    return slo;
}

bool remoteRequestRejected(const std::string &status)
{
    return status == "queue_full" || status == "invalid_argument" || status == "out_of_range" ||
           status == "not_found" || status == "shutting_down";
}

double nearestRank(const std::vector<std::int64_t> &sorted, double q)
{
    if (sorted.empty())
        return 0;
    const auto rank = std::size_t(std::ceil(q * double(sorted.size())));
    return double(sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1]);
}

nlohmann::json toJson(const SessionSummary &s)
{
    nlohmann::json j{{"session_id", s.sessionId}, {"kind", s.kind},     {"model", s.model},
                     {"device", s.device},        {"config", s.config}, {"config_changes", s.configChanges},
                     {"by_status", s.byStatus}};
    j["source_session_id"] = s.sourceSessionId ? nlohmann::json(s.sourceSessionId) : nlohmann::json(nullptr);
    j["source_trace_id"] = s.sourceTraceId ? nlohmann::json(s.sourceTraceId) : nlohmann::json(nullptr);
    // the SLO goodput was judged against, in ms (null = bound not set)
    auto bound = [](double ms) { return ms > 0 ? nlohmann::json(ms) : nlohmann::json(nullptr); };
    j["goodput_slo_ms"] = {
        {"ttft", bound(s.sloTtftMs)}, {"tpot", bound(s.sloTpotMs)}, {"e2e", bound(s.sloE2eMs)}};
    for (const Metric &m : metrics())
        if (m.decimals >= 0)
            j[m.key] = m.value(s);
    return j;
}

std::string formatComparison(const SessionSummary &a, const SessionSummary &b)
{
    return table({&a, &b});
}

std::string formatSummary(const SessionSummary &summary)
{
    return table({&summary});
}

std::vector<ComparisonRow> comparisonRows(const SessionSummary &a, const SessionSummary &b)
{
    std::vector<ComparisonRow> rows;
    for (const Metric &m : metrics()) {
        ComparisonRow row;
        row.label = m.label;
        row.key = m.key;
        row.numeric = m.decimals >= 0;
        if (row.numeric) {
            const double va = m.value(a), vb = m.value(b);
            row.a = number(va, m.decimals);
            row.b = number(vb, m.decimals);
            row.change = change(va, vb);
            row.relativeChange = va == 0 ? 0 : vb / va - 1;
        } else {
            row.a = m.text(a);
            row.b = m.text(b);
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

nlohmann::json comparisonJson(const SessionSummary &a, const SessionSummary &b)
{
    nlohmann::json delta = nlohmann::json::object();
    for (const Metric &m : metrics()) {
        if (m.decimals < 0)
            continue;
        const double va = m.value(a), vb = m.value(b);
        delta[m.key] = va == 0 ? nlohmann::json(nullptr) : nlohmann::json(vb / va - 1);
    }
    return {{"a", toJson(a)}, {"b", toJson(b)}, {"change", delta}};
}

} // namespace bp
