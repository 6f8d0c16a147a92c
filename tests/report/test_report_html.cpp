// The HTML report is one self-contained file: no URL of any kind (no
// http(s)://, no protocol-relative //host, no url() in CSS, no src/href to
// anything), no script; its charts are inline SVG that parse as XML, with
// the config marker; user text is escaped; a replay shows its comparison.
#include "report_fixture.h"

#include "app/report/report_builder.h"
#include "app/report/report_html.h"
#include "engine/store/tuning_store.h"

#include <QRegularExpression>
#include <QXmlStreamReader>
#include <QtTest>

using namespace bp;

namespace {

QString htmlOf(const TraceStore &store, std::int64_t id)
{
    auto bytes = report::renderReport(store, id, QStringLiteral("html"));
    return bytes ? QString::fromUtf8(*bytes) : QString();
}

QStringList svgBlocks(const QString &html)
{
    QStringList out;
    static const QRegularExpression svg(QStringLiteral("<svg[\\s\\S]*?</svg>"));
    for (auto it = svg.globalMatch(html); it.hasNext();)
        out << it.next().captured(0);
    return out;
}

} // namespace

class TestReportHtml : public QObject {
    Q_OBJECT
    std::unique_ptr<test::ReportFixture> f;

private slots:
    void initTestCase()
    {
        f = test::buildReportFixture();
        QVERIFY2(f->error.isEmpty(), qPrintable(f->error));
    }

    void hasNoExternalReference_data()
    {
        QTest::addColumn<bool>("replay");
        QTest::newRow("live") << false;
        QTest::newRow("replay") << true;
    }
    void hasNoExternalReference()
    {
        QFETCH(bool, replay);
        const QString html = htmlOf(*f->store, replay ? f->replay : f->live);
        QVERIFY(html.startsWith("<!DOCTYPE html>"));
        QVERIFY(html.size() > 5000);
        const QString lower = html.toLower();
        for (const char *needle :
             {"http://", "https://", "//cdn", "url(", "@import", "<script", "<link", "<iframe", "<object",
              "<embed", "<img", "src=", "href=", "xlink:", "file:", "data:"})
            QVERIFY2(!lower.contains(QLatin1String(needle)), needle);
        // any scheme followed by "//" (ftp://, ws://, ...) or a protocol-relative URL in an attribute
        static const QRegularExpression scheme(QStringLiteral("[a-z][a-z0-9+.-]*://"));
        QVERIFY2(!scheme.match(lower).hasMatch(), qPrintable(scheme.match(lower).captured(0)));
        static const QRegularExpression relative(QStringLiteral("=\\s*[\"']?//"));
        QVERIFY(!relative.match(lower).hasMatch());
    }

    void chartsAreInlineSvgWithMarkers()
    {
        const QString html = htmlOf(*f->store, f->live);
        const QStringList svgs = svgBlocks(html);
        QCOMPARE(svgs.size(), 4); // latency, throughput, utilization, batch sizes
        for (const QString &svg : svgs) {
            QXmlStreamReader xml(svg);
            while (!xml.atEnd())
                xml.readNext();
            QVERIFY2(!xml.hasError(), qPrintable(xml.errorString() + "\n" + svg.left(400)));
            QVERIFY(svg.contains("<path d=\"M"));              // a data line
            QVERIFY(svg.contains("stroke-dasharray=\"4 3\"")); // the config marker
            QVERIFY(svg.contains(">v2</text>"));
            QVERIFY(svg.contains("max_batch_size 8→16"));
        }
        for (const char *title : {"Latency percentiles", "Throughput", "Utilization", "Batch sizes"})
            QVERIFY2(html.contains(QLatin1String(title)), title);
    }

    void containsTheHeadlineAndTimeline()
    {
        const QString html = htmlOf(*f->store, f->live);
        const SessionSummary s = f->store->summary(f->live).value();
        QVERIFY(html.contains(QStringLiteral("<td class=\"num\">%1</td>").arg(s.requests)));
        for (const char *label :
             {"Time to first token", "Queue wait", "Compute", "Padding efficiency", "Mean batch size",
              "Timeouts", "Rejected", "Dropped trace rows", "Config timeline", "builtin:echo"})
            QVERIFY2(html.contains(QLatin1String(label)), label);
        QVERIFY(html.contains("max_batch_size 8→16")); // the timeline's change
        // generation: TPOT and goodput with the SLO it was judged against
        QVERIFY(html.contains("Time per output token"));
        QVERIFY(
            html.contains(QStringLiteral("<td class=\"num\">%1 req/s</td>").arg(s.goodputRps, 0, 'f', 2)));
        QVERIFY(
            html.contains(QStringLiteral("completed OK within TTFT ≤ 5 ms, TPOT ≤ 1 ms: %1 of %2 completed")
                              .arg(s.goodCompleted)
                              .arg(s.completed)));
        // user text is escaped, never markup
        QVERIFY(html.contains("report fixture &lt;b&gt;not bold&lt;/b&gt;"));
        QVERIFY(!html.contains("<b>not bold</b>"));
        QVERIFY(!html.contains("Replay versus its source"));
    }

    void replayShowsTheComparison()
    {
        const QString html = htmlOf(*f->store, f->replay);
        QVERIFY(html.contains("Replay versus its source"));
        QVERIFY(html.contains(QStringLiteral("source: session %1").arg(f->live)));
        QVERIFY(html.contains("throughput (req/s)"));
        QVERIFY(html.contains("virtual clock")); // says why its latencies are so low
        QVERIFY(html.contains("class=\"num better\"") || html.contains("class=\"num worse\""));
    }

    void qtFlavourUsesPlaceholders()
    {
        auto data = report::loadReportData(*f->store, f->live);
        QVERIFY(data);
        const QString html = QString::fromUtf8(report::renderHtml(*data, report::HtmlFlavor::QtTextDocument));
        for (int i = 0; i < 4; ++i)
            QVERIFY(html.contains(QStringLiteral("src=\"%1\"").arg(report::chartImageName(i))));
        QVERIFY(!html.contains("<svg"));
    }

    // Last: it adds a tuning verified by the replay session.
    void recommendationShowsPredictedAgainstMeasuredForAVerification()
    {
        StoredTuning t;
        t.verifySessionId = f->replay;
        t.slo = "ttft_p99 <= 500ms";
        t.objective = "goodput";
        const nlohmann::json predicted = {
            {"throughput_rps", 20.0}, {"goodput_rps", 18.0},  {"p50_ms", 100.0},    {"p99_ms", 300.0},
            {"ttft_p50_ms", 40.0},    {"ttft_p99_ms", 120.0}, {"tpot_p50_ms", 8.0}, {"tpot_p99_ms", 12.0},
            {"mean_batch", 4.0},      {"slo_met", true}};
        nlohmann::json measured = predicted;
        measured["ttft_p50_ms"] = 50.0; // predicted 20% low
        measured["tpot_p50_ms"] = 10.0; // predicted 20% low
        measured["goodput_rps"] = 20.0; // predicted 10% low
        t.result = {{"recommended", {{"label", "vllm max_num_seqs=64"}, {"predicted", predicted}}},
                    {"verification", {{"session_id", f->replay}, {"measured", measured}}}};
        auto id = saveTuning(*f->store, t);
        QVERIFY2(id, id.status().message().c_str());
        const QString html = htmlOf(*f->store, f->replay);
        QVERIFY(html.contains("<h2>Recommendation</h2>"));
        QVERIFY(html.contains("This session is the real-clock replay that verified it."));
        QVERIFY(html.contains("<th>predicted</th><th>measured</th><th>error</th>"));
        for (const char *row :
             {"TTFT p50 (ms)</td><td class=\"num\">40.00</td><td class=\"num\">50.00</td>"
              "<td class=\"num\">-20%</td>",
              "TPOT p50 (ms)</td><td class=\"num\">8.00</td><td class=\"num\">10.00</td>"
              "<td class=\"num\">-20%</td>",
              "TTFT p99 (ms)</td><td class=\"num\">120.00</td><td class=\"num\">120.00</td>",
              "TPOT p99 (ms)</td><td class=\"num\">12.00</td>",
              "goodput (req/s)</td><td class=\"num\">18.0</td><td class=\"num\">20.0</td>"
              "<td class=\"num\">-10%</td>",
              "throughput (req/s)</td><td class=\"num\">20.0</td><td class=\"num\">20.0</td>"})
            QVERIFY2(html.contains(QString::fromUtf8(row)), row);
    }
};

QTEST_GUILESS_MAIN(TestReportHtml)
#include "test_report_html.moc"
