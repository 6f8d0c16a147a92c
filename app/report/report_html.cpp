#include "report_html.h"
#include "app/cli_text.h"

#include "report_figures.h"
#include "report_fleet.h"
#include "report_recommendation.h"

#include <QSet>

#include <cmath>

#ifndef BATCHPILOT_VERSION
#define BATCHPILOT_VERSION "dev"
#endif

namespace bp::report {

namespace {

QString e(const QString &s)
{
    return s.toHtmlEscaped();
}
// Only local fonts, no url(): the file must render identically offline.
const char *kBrowserCss = R"(
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; color: #222; background: #f4f5f7;
       margin: 0; font-size: 14px; line-height: 1.4; }
main { max-width: 1000px; margin: 0 auto; padding: 24px 28px 32px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 2px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #3b6ea5; color: #1d3f66; }
p.sub { margin: 0; color: #555; font-size: 15px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e3e3e3; vertical-align: top; }
th { background: #eef2f7; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.label { font-weight: 600; white-space: nowrap; width: 1%; }
td.note { color: #666; font-size: 12.5px; }
.grid { display: flex; flex-wrap: wrap; gap: 24px; }
.grid > div { flex: 1 1 420px; }
figure { margin: 14px 0 6px; }
svg { width: 100%; height: auto; border: 1px solid #e3e3e3; }
.better { color: #1a7f37; } .worse { color: #b42318; }
code { font-family: "DejaVu Sans Mono", Consolas, monospace; font-size: 12.5px; }
footer { margin-top: 28px; color: #777; font-size: 12px; }
)";

const char *kQtCss = R"(
body { font-family: "DejaVu Sans"; color: #222222; font-size: 9pt; }
h1 { font-size: 16pt; margin-bottom: 2px; }
h2 { font-size: 12pt; color: #1d3f66; margin-top: 16px; margin-bottom: 6px; }
p.sub { color: #555555; font-size: 11pt; margin-top: 0px; }
th { background-color: #eef2f7; font-weight: bold; text-align: left; }
td.num { text-align: right; }
td.label { font-weight: bold; }
td.note { color: #666666; font-size: 8pt; }
.better { color: #1a7f37; } .worse { color: #b42318; }
p.footer { color: #777777; font-size: 7.5pt; margin-top: 16px; }
)";

// Qt's rich text puts the next heading right under a table: a spacer.
QString tableClose(HtmlFlavor flavor)
{
    return flavor == HtmlFlavor::Browser ? QStringLiteral("</table>\n")
                                         : QStringLiteral("</table>\n<p></p>\n");
}

QString tableOpen(HtmlFlavor flavor)
{
    return flavor == HtmlFlavor::Browser
               ? QStringLiteral("<table>\n")
               : QStringLiteral(
                     "<table width=\"100%\" cellspacing=\"0\" cellpadding=\"3\" border=\"1\" "
                     "style=\"border-collapse: collapse; border-color: #d0d0d0; border-style: solid;\">\n");
}

QString factsTable(const std::vector<FigureRow> &rows, HtmlFlavor flavor, bool numeric)
{
    QString h = tableOpen(flavor);
    for (const FigureRow &r : rows)
        h += QStringLiteral("<tr><td class=\"label\">%1</td><td%2>%3</td><td class=\"note\">%4</td></tr>\n")
                 .arg(e(r.label), numeric ? QStringLiteral(" class=\"num\"") : QString(), e(r.value),
                      e(r.note));
    return h + tableClose(flavor);
}

QString latencyTable(const std::vector<LatencyRow> &rows, HtmlFlavor flavor)
{
    auto cell = [](const std::optional<double> &v) {
        return QStringLiteral("<td class=\"num\">%1</td>").arg(v ? formatMs(*v) : QStringLiteral("–"));
    };
    QString h =
        tableOpen(flavor) + QStringLiteral("<tr><th>latency (ms)</th><th>p50</th><th>p90</th><th>p99</th>"
                                           "<th></th></tr>\n");
    for (const LatencyRow &r : rows)
        h += QStringLiteral("<tr><td class=\"label\">%1</td>%2%3%4<td class=\"note\">%5</td></tr>\n")
                 .arg(e(r.label), cell(r.p50), cell(r.p90), cell(r.p99), e(r.note));
    return h + tableClose(flavor);
}

QString timelineTable(const ReportData &d, HtmlFlavor flavor)
{
    const auto rows = configTimeline(d);
    if (rows.empty())
        return QStringLiteral("<p>No config was recorded for this session.</p>\n");
    QString h = tableOpen(flavor) + QStringLiteral("<tr><th>version</th><th>at</th><th>by</th><th>change</th>"
                                                   "<th>config from then on</th></tr>\n");
    for (const TimelineRow &r : rows)
        h +=
            QStringLiteral("<tr><td>%1</td><td class=\"num\">%2</td><td>%3</td><td>%4</td><td>%5</td></tr>\n")
                .arg(e(r.version), e(r.at), e(r.origin), e(r.summary),
                     // no monospace font in the PDF: one embedded font fewer
                     flavor == HtmlFlavor::Browser ? "<code>" + e(r.config) + "</code>" : e(r.config));
    return h + tableClose(flavor);
}

// Whether a larger value of a comparison key is an improvement.
std::optional<bool> higherIsBetter(const std::string &key)
{
    // Batch counts and sizes are means, not ends: no colour for them.
    static const QSet<QString> higher = {"completed", "throughput_rps", "output_tokens_per_s",
                                         "padding_efficiency"};
    static const QSet<QString> lower = {
        "rejected",       "failed",         "latency_mean_ms",   "latency_p50_ms",
        "latency_p90_ms", "latency_p99_ms", "queue_wait_p50_ms", "queue_wait_p99_ms",
        "dropped_rows"};
    const QString k = q(key);
    if (higher.contains(k))
        return true;
    if (lower.contains(k))
        return false;
    return std::nullopt;
}

QString comparisonSection(const ReportData &d, HtmlFlavor flavor)
{
    if (!d.sourceSummary) {
        if (d.sourceTrace)
            return QStringLiteral(
                       "<h2>Source</h2>\n<p>This session replayed the imported trace %1 '%2': %3 requests "
                       "over "
                       "%4 s (%5 format). A trace has no measured latencies to compare with.</p>\n")
                .arg(d.sourceTrace->id)
                .arg(e(q(d.sourceTrace->name)))
                .arg(d.sourceTrace->rows)
                .arg(formatNumber(d.sourceTrace->durationS, 1),
                     e(q(std::string(traceFormatName(d.sourceTrace->format)))));
        return {};
    }
    QString h = QStringLiteral(
                    "<h2>Replay versus its source</h2>\n<p>The same arrivals as session %1, re-driven under "
                    "this session's config. Change = replay / source − 1.</p>\n")
                    .arg(d.sourceSummary->sessionId);
    h += tableOpen(flavor) +
         QStringLiteral("<tr><th></th><th>source: session %1</th><th>this replay: session %2</th>"
                        "<th>change</th></tr>\n")
             .arg(d.sourceSummary->sessionId)
             .arg(d.summary.sessionId);
    for (const ComparisonRow &r : comparisonRows(*d.sourceSummary, d.summary)) {
        QString cls;
        if (const auto better = higherIsBetter(r.key); better && std::fabs(r.relativeChange) >= 0.0005)
            cls = (r.relativeChange > 0) == *better ? QStringLiteral(" better") : QStringLiteral(" worse");
        const QString numClass = r.numeric ? QStringLiteral(" class=\"num\"") : QString();
        h +=
            QStringLiteral(
                "<tr><td class=\"label\">%1</td><td%2>%3</td><td%2>%4</td><td class=\"num%5\">%6</td></tr>\n")
                .arg(e(q(r.label)), numClass, e(q(r.a)), e(q(r.b)), cls, e(q(r.change)));
    }
    return h + tableClose(flavor);
}

QString chartsSection(const ReportData &d, HtmlFlavor flavor)
{
    // In the PDF the charts start a page of their own, under their heading.
    QString h =
        QStringLiteral("<h2%1>Over time</h2>\n<p>From the metric samples (about one a second); dashed purple "
                       "lines mark config changes.</p>\n")
            .arg(flavor == HtmlFlavor::Browser ? QString()
                                               : QStringLiteral(" style=\"page-break-before: always\""));
    const auto charts = reportCharts(d);
    for (std::size_t i = 0; i < charts.size(); ++i) {
        if (flavor == HtmlFlavor::Browser)
            h += QStringLiteral("<figure>\n") + renderSvgChart(charts[i]) + QStringLiteral("</figure>\n");
        else
            h += QStringLiteral("<p><img src=\"%1\" width=\"%2\" height=\"%3\"></p>\n")
                     .arg(chartImageName(int(i)))
                     .arg(charts[i].width)
                     .arg(chartHeight(charts[i]));
    }
    return h;
}

} // namespace

QString chartImageName(int index)
{
    return QStringLiteral("bpchart:%1").arg(index);
}

QByteArray renderHtml(const ReportData &d, HtmlFlavor flavor)
{
    const bool browser = flavor == HtmlFlavor::Browser;
    QString h = QStringLiteral("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    if (browser)
        h += QStringLiteral("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                            "<meta name=\"generator\" content=\"BatchPilot %1\">\n")
                 .arg(QStringLiteral(BATCHPILOT_VERSION));
    h += QStringLiteral("<title>BatchPilot report: session %1</title>\n<style>%2</style>\n</head>\n<body>\n")
             .arg(d.session.id)
             .arg(QString::fromUtf8(browser ? kBrowserCss : kQtCss));
    if (browser)
        h += QStringLiteral("<main>\n");
    h += QStringLiteral("<h1>BatchPilot session report</h1>\n<p class=\"sub\">%1</p>\n")
             .arg(e(reportTitle(d)));
    h += QStringLiteral("<h2>Session</h2>\n") + factsTable(sessionFacts(d), flavor, false);
    h += QStringLiteral("<h2>Headline</h2>\n");
    if (browser)
        h += QStringLiteral("<div class=\"grid\"><div>\n") + factsTable(headlineFigures(d), flavor, true) +
             QStringLiteral("</div><div>\n") + latencyTable(latencyRows(d), flavor) +
             QStringLiteral("</div></div>\n");
    else
        h += factsTable(headlineFigures(d), flavor, true) + latencyTable(latencyRows(d), flavor);
    h += QStringLiteral(
        "<p class=\"note\">Latency percentiles are exact (nearest rank) over completed requests.</p>\n");
    h += QStringLiteral("<h2>Config timeline</h2>\n") + timelineTable(d, flavor);
    h += chartsSection(d, flavor);
    h += comparisonSection(d, flavor);
    h += recommendationHtml(d, tableOpen(flavor), tableClose(flavor));
    h += fleetHtml(d, tableOpen(flavor), tableClose(flavor));
    const QString footer =
        QStringLiteral(
            "Generated by BatchPilot %1 at %2 from the trace store: %3 request records, %4 batch records, "
            "%5 metric samples, %6 config version(s).")
            .arg(QStringLiteral(BATCHPILOT_VERSION), displayTime(d.generatedAtUs))
            .arg(d.session.requestCount)
            .arg(d.session.batchCount)
            .arg(d.samples.size())
            .arg(d.configHistory.size());
    h += browser ? QStringLiteral("<footer>%1</footer>\n</main>\n").arg(e(footer))
                 : QStringLiteral("<p class=\"footer\">%1</p>\n").arg(e(footer));
    h += QStringLiteral("</body>\n</html>\n");
    return h.toUtf8();
}

} // namespace bp::report
