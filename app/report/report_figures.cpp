#include "report_figures.h"
#include "app/cli_text.h"

#include "engine/config/config_rules.h"

#include <QDateTime>
#include <QLocale>
#include <QStringList>
#include <QTimeZone>

#include <cmath>

namespace bp::report {

namespace {

QString sourceText(const ReportData &d)
{
    QString source;
    if (d.session.sourceSessionId)
        source = QStringLiteral("replay of session %1%2")
                     .arg(*d.session.sourceSessionId)
                     .arg(d.sourceSummary ? QString() : QStringLiteral(" (deleted since)"));
    else if (d.session.sourceTraceId)
        source = d.sourceTrace
                     ? QStringLiteral("replay of trace %1 '%2' (%3 requests)")
                           .arg(d.sourceTrace->id)
                           .arg(q(d.sourceTrace->name))
                           .arg(d.sourceTrace->rows)
                     : QStringLiteral("replay of trace %1 (deleted since)").arg(*d.session.sourceTraceId);
    const nlohmann::json &replay = d.session.replay;
    if (replay.is_object() && replay.value("clock", std::string()) == "virtual")
        source += QStringLiteral("; virtual clock: batching and queueing only, compute took no time");
    return source;
}

QString hostText(const nlohmann::json &host)
{
    auto field = [&](const char *key) {
        const auto it = host.find(key);
        if (it == host.end() || it->is_null())
            return QString();
        return it->is_string() ? q(it->get<std::string>()) : q(it->dump());
    };
    QStringList parts;
    if (const QString name = field("hostname"); !name.isEmpty())
        parts << name;
    if (const QString cpu = field("cpu"); !cpu.isEmpty())
        parts << cpu;
    if (const QString cores = field("logical_cores"); !cores.isEmpty())
        parts << QStringLiteral("%1 logical cores").arg(cores);
    if (auto it = host.find("memory_bytes"); it != host.end() && it->is_number())
        parts << QStringLiteral("%1 GiB RAM").arg(it->get<double>() / double(1 << 30), 0, 'f', 1);
    if (const QString os = field("os"); !os.isEmpty())
        parts << os + (field("kernel").isEmpty() ? QString() : " (" + field("kernel") + ")");
    return parts.isEmpty() ? QStringLiteral("not recorded") : parts.join(QStringLiteral(", "));
}

// "Qwen2ForCausalLM, bfloat16, 494,032,768 parameters, 12,288 bytes of KV
// cache per token";
// empty when the session recorded none of them.
QString modelText(const ModelFacts &m)
{
    QLocale c = QLocale::c(); // the same digit groups, whatever the machine's locale
    c.setNumberOptions(QLocale::DefaultNumberOptions);
    QStringList parts;
    if (m.architecture)
        parts << q(*m.architecture);
    if (m.dtype)
        parts << q(*m.dtype);
    if (m.parameters && *m.parameters > 0)
        parts << QStringLiteral("%1 parameters").arg(c.toString(qlonglong(*m.parameters)));
    if (m.kvBytesPerToken)
        parts << (*m.kvBytesPerToken > 0 ? QStringLiteral("%1 bytes of KV cache per token")
                                               .arg(c.toString(qlonglong(*m.kvBytesPerToken)))
                                         : QStringLiteral("no KV cache"));
    return parts.join(QStringLiteral(", "));
}

QString byStatusText(const SessionSummary &s, bool includeOk)
{
    QStringList parts;
    for (const auto &[status, n] : s.byStatus)
        if (includeOk || status != "ok")
            parts << QStringLiteral("%1 %2").arg(q(status)).arg(n);
    return parts.join(QStringLiteral(", "));
}

double nan()
{
    return std::nan("");
}

} // namespace

QString displayTime(std::int64_t us)
{
    return QDateTime::fromMSecsSinceEpoch(us / 1000, QTimeZone::utc())
               .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")) +
           QStringLiteral(" UTC");
}

QString isoTime(std::int64_t us)
{
    return QDateTime::fromMSecsSinceEpoch(us / 1000, QTimeZone::utc()).toString(Qt::ISODateWithMs);
}

QString formatNumber(double v, int decimals)
{
    return QString::number(v, 'f', decimals);
}

QString formatMs(double ms)
{
    const double a = std::fabs(ms);
    return QString::number(ms, 'f', a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : 3);
}

QString reportTitle(const ReportData &d)
{
    return QStringLiteral("Session %1 — %2, %3 on %4")
        .arg(d.session.id)
        .arg(q(d.session.kind), q(d.session.model), q(d.session.device));
}

std::vector<FigureRow> sessionFacts(const ReportData &d)
{
    const SessionInfo &s = d.session;
    std::vector<FigureRow> rows = {
        {QStringLiteral("Session"), QStringLiteral("%1 (%2)").arg(s.id).arg(q(s.kind)), sourceText(d)},
        {QStringLiteral("Model"), q(s.model), modelText(modelFacts(s))},
        {QStringLiteral("Device"), q(s.device), {}},
        {QStringLiteral("Host"), hostText(s.host), {}},
        {QStringLiteral("Started"), displayTime(s.startedAtUs), {}},
        {QStringLiteral("Ended"), s.endedAtUs ? displayTime(*s.endedAtUs) : QStringLiteral("not ended"),
         s.endedAtUs ? QStringLiteral("%1 s of wall-clock time")
                           .arg(double(*s.endedAtUs - s.startedAtUs) / 1e6, 0, 'f', 1)
                     : QStringLiteral("still recording, or the process stopped without ending it")},
        {QStringLiteral("Traffic span"), QStringLiteral("%1 s").arg(formatNumber(d.summary.durationS, 2)),
         d.summary.requests
             ? QStringLiteral("first arrival at %1 s, last completion at %2 s after the session start")
                   .arg(formatNumber(d.firstArrivalS, 2), formatNumber(d.lastCompletionS, 2))
             : QStringLiteral("no requests")},
        {QStringLiteral("Config at the end"), q(d.summary.config),
         QStringLiteral("%1 change(s) after the initial config").arg(d.summary.configChanges)},
    };
    if (!s.notes.empty())
        rows.push_back({QStringLiteral("Notes"), q(s.notes), {}});
    if (!s.loggingError.empty())
        rows.push_back({QStringLiteral("Logging stopped"), q(s.loggingError),
                        QStringLiteral("later records are missing")});
    return rows;
}

namespace {
bool generated(const ReportData &d)
{
    return d.extra.generatedTokens > 0;
}

bool sloSet(const SessionSummary &s)
{
    return s.sloTtftMs > 0 || s.sloTpotMs > 0 || s.sloE2eMs > 0;
}

QString describeSlo(const SessionSummary &s)
{
    QStringList bounds;
    if (s.sloTtftMs > 0)
        bounds << QStringLiteral("TTFT ≤ %1 ms").arg(s.sloTtftMs);
    if (s.sloTpotMs > 0)
        bounds << QStringLiteral("TPOT ≤ %1 ms").arg(s.sloTpotMs);
    if (s.sloE2eMs > 0)
        bounds << QStringLiteral("end-to-end ≤ %1 ms").arg(s.sloE2eMs);
    return bounds.join(QStringLiteral(", "));
}

// Goodput with the SLO it was judged against (the session's last config).
FigureRow goodputRow(const ReportData &d)
{
    const SessionSummary &s = d.summary;
    if (!sloSet(s))
        return {QStringLiteral("Goodput"), QStringLiteral("%1 req/s").arg(formatNumber(s.goodputRps, 2)),
                QStringLiteral("no goodput SLO set (goodput.* knobs): every completed request counts")};
    const double share = s.completed ? 100.0 * double(s.goodCompleted) / double(s.completed) : 0.0;
    return {QStringLiteral("Goodput"), QStringLiteral("%1 req/s").arg(formatNumber(s.goodputRps, 2)),
            QStringLiteral("completed OK within %1: %2 of %3 completed (%4 %)")
                .arg(describeSlo(s))
                .arg(s.goodCompleted)
                .arg(s.completed)
                .arg(formatNumber(share, 1))};
}
} // namespace

std::vector<FigureRow> headlineFigures(const ReportData &d)
{
    const SessionSummary &s = d.summary;
    const ExtraFigures &x = d.extra;
    std::vector<FigureRow> rows = {
        {QStringLiteral("Requests"), QString::number(s.requests), byStatusText(s, true)},
        {QStringLiteral("Completed"), QString::number(s.completed), QStringLiteral("status ok")},
        {QStringLiteral("Rejected"), QString::number(s.rejected),
         QStringLiteral("never ran: turned away at submit, expired in the queue, failed on shutdown")},
        {QStringLiteral("Timeouts"), QString::number(x.timeouts), QStringLiteral("deadline_exceeded")},
        {QStringLiteral("Failed"), QString::number(s.failed), QStringLiteral("ran, but not ok")},
        {QStringLiteral("Throughput"), QStringLiteral("%1 req/s").arg(formatNumber(s.throughputRps, 2)),
         QStringLiteral("completed requests / traffic span")},
        {QStringLiteral("Output tokens"), QStringLiteral("%1 tok/s").arg(formatNumber(s.outputTokensPerS, 1)),
         QStringLiteral("%1 tokens generated").arg(x.generatedTokens)},
        {QStringLiteral("Batches"), QString::number(s.batches), {}},
        {QStringLiteral("Mean batch size"), formatNumber(s.meanBatchSize, 2),
         QStringLiteral("requests per batch")},
        {QStringLiteral("Padding efficiency"),
         QStringLiteral("%1 %").arg(formatNumber(s.paddingEfficiency * 100, 1)),
         QStringLiteral("real tokens / padded tokens")},
        {QStringLiteral("Dropped trace rows"), QString::number(s.droppedRows),
         s.droppedRows ? QStringLiteral("the logger could not keep up: figures miss these rows")
                       : QStringLiteral("every record was logged")},
    };
    if (generated(d) || sloSet(s)) // an encoder's report stays as it was, unless it set an e2e SLO
        rows.insert(rows.begin() + 7, goodputRow(d));
    return rows;
}

std::vector<LatencyRow> latencyRows(const ReportData &d)
{
    const SessionSummary &s = d.summary;
    const ExtraFigures &x = d.extra;
    std::vector<LatencyRow> rows = {
        {QStringLiteral("Total (arrival → completion)"), s.latencyP50Ms, s.latencyP90Ms, s.latencyP99Ms,
         QStringLiteral("mean %1 ms").arg(formatMs(s.latencyMeanMs))},
        {QStringLiteral("Queue wait"), s.queueWaitP50Ms, x.queueWaitP90Ms, s.queueWaitP99Ms, {}},
        {QStringLiteral("Compute"), x.compute.p50Ms, x.compute.p90Ms, x.compute.p99Ms,
         QStringLiteral("the batch's run time")},
    };
    if (x.ttft)
        rows.push_back(
            {QStringLiteral("Time to first token"), x.ttft->p50Ms, x.ttft->p90Ms, x.ttft->p99Ms,
             s.prefixCacheHitRate > 0
                 ? QStringLiteral("%1 generating requests; prefix cache hit rate %2% of prompt tokens")
                       .arg(x.ttft->count)
                       .arg(100 * s.prefixCacheHitRate, 0, 'f', 1)
                 : QStringLiteral("%1 generating requests").arg(x.ttft->count)});
    else
        rows.push_back(
            {QStringLiteral("Time to first token"), {}, {}, {}, QStringLiteral("nothing was generated")});
    if (x.tpotRequests > 0)
        rows.push_back({QStringLiteral("Time per output token"), s.tpotP50Ms, s.tpotP90Ms, s.tpotP99Ms,
                        QStringLiteral("(last − first token) / (n − 1); %1 requests with 2+ tokens")
                            .arg(x.tpotRequests)});
    else if (generated(d))
        rows.push_back({QStringLiteral("Time per output token"),
                        {},
                        {},
                        {},
                        QStringLiteral("no request generated 2+ tokens")});
    return rows;
}

std::vector<TimelineRow> configTimeline(const ReportData &d)
{
    std::vector<TimelineRow> rows;
    for (const StoredConfigChange &c : d.configHistory) {
        // The initial config is stamped when the engine starts, a moment
        // before the recording's epoch: shown as the start, kept exact in JSON.
        const bool initial = c.version == 1 && c.at <= Duration::zero();
        rows.push_back(
            {QStringLiteral("v%1").arg(c.version),
             initial ? QStringLiteral("start") : QStringLiteral("%1 s").arg(formatNumber(toSeconds(c.at), 2)),
             q(c.origin), q(c.summary), q(bp::describeConfig(c.config))});
    }
    return rows;
}

std::vector<LineChart> reportCharts(const ReportData &d)
{
    std::vector<double> t;
    for (const MetricSample &m : d.samples)
        t.push_back(toSeconds(m.at));
    auto column = [&](auto f) {
        std::vector<double> v;
        for (std::size_t i = 0; i < d.samples.size(); ++i)
            v.push_back(f(d.samples[i], i));
        return v;
    };
    // Markers: every change after the initial config.
    std::vector<ChartMarker> markers;
    for (const StoredConfigChange &c : d.configHistory)
        if (c.version > 1)
            markers.push_back({toSeconds(c.at), QStringLiteral("v%1").arg(c.version),
                               QStringLiteral("%1 s (%2): %3")
                                   .arg(formatNumber(toSeconds(c.at), 1), q(c.origin), q(c.summary))});
    // A window with no completed request has no latency: leave a gap.
    auto latency = [](double us, const MetricSample &m) { return m.requestsPerS > 0 ? us / 1000.0 : nan(); };

    LineChart lat{QStringLiteral("Latency percentiles (2 s window)"), QStringLiteral("ms")};
    lat.series = {
        {QStringLiteral("total p50"), QStringLiteral("#1f77b4"),
         column([&](const MetricSample &m, std::size_t) { return latency(m.totalP50Us, m); })},
        {QStringLiteral("total p90"), QStringLiteral("#ff7f0e"),
         column([&](const MetricSample &m, std::size_t) { return latency(m.totalP90Us, m); })},
        {QStringLiteral("total p99"), QStringLiteral("#d62728"),
         column([&](const MetricSample &m, std::size_t) { return latency(m.totalP99Us, m); })},
        {QStringLiteral("queue wait p99"), QStringLiteral("#7f7f7f"),
         column([&](const MetricSample &m, std::size_t) { return latency(m.queueWaitP99Us, m); }), true},
    };
    LineChart thr{QStringLiteral("Throughput (2 s window)"), QStringLiteral("requests/s")};
    thr.series = {{QStringLiteral("completed requests/s"), QStringLiteral("#2ca02c"),
                   column([](const MetricSample &m, std::size_t) { return m.requestsPerS; })}};
    LineChart util{QStringLiteral("Utilization"), QStringLiteral("%")};
    util.yMax = 100;
    util.series = {
        {QStringLiteral("engine busy"), QStringLiteral("#9467bd"),
         column([](const MetricSample &m, std::size_t) { return m.busyFraction * 100; })},
        {QStringLiteral("padding efficiency"), QStringLiteral("#8c564b"),
         column([](const MetricSample &m, std::size_t) {
             return m.meanBatchSize > 0 ? m.paddingEfficiency * 100 : nan();
         }),
         true},
    };
    LineChart size{QStringLiteral("Batch sizes"), QStringLiteral("requests per batch")};
    size.series = {
        {QStringLiteral("mean (2 s window)"), QStringLiteral("#1f77b4"),
         column([](const MetricSample &m, std::size_t) {
             return m.meanBatchSize > 0 ? m.meanBatchSize : nan();
         })},
        {QStringLiteral("largest since the previous sample"), QStringLiteral("#ff7f0e"),
         column([&](const MetricSample &, std::size_t i) {
             return d.maxBatchSize[i] > 0 ? double(d.maxBatchSize[i]) : nan();
         }),
         true},
    };
    std::vector<LineChart> charts = {lat, thr, util, size};
    for (LineChart &c : charts) {
        c.x = t;
        c.markers = markers;
    }
    return charts;
}

} // namespace bp::report
