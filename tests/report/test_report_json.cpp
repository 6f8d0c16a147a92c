// The JSON report's figures equal the trace store's: the headline is
// TraceStore::summary() key for key, the extra percentiles match the stored
// request records (recomputed here by hand), TPOT and goodput with the SLO
// used match the records too, the series are the metric
// samples, the timeline is the config history, and a replay carries the
// comparison with its source. Sessions come from a real engine + TraceSink
// (report_fixture.h).
#include "report_fixture.h"

#include "app/report/report_builder.h"
#include "app/report/report_json.h"
#include "engine/config/config_json.h"
#include "engine/store/session_summary.h"

#include <QtTest>

#include <cmath>

using namespace bp;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Nearest rank, written out independently of bp::nearestRank.
double rankMs(std::vector<std::int64_t> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    std::size_t rank = std::size_t(std::ceil(q * double(v.size())));
    rank = std::clamp<std::size_t>(rank, 1, v.size());
    return double(v[rank - 1]) / 1e6;
}

json reportOf(const TraceStore &store, std::int64_t id)
{
    auto bytes = report::renderReport(store, id, QStringLiteral("json"));
    if (!bytes)
        return json();
    return json::parse(bytes->toStdString());
}

} // namespace

class TestReportJson : public QObject {
    Q_OBJECT
    std::unique_ptr<test::ReportFixture> f;

private slots:
    void initTestCase()
    {
        f = test::buildReportFixture();
        QVERIFY2(f->error.isEmpty(), qPrintable(f->error));
    }

    void headlineIsTheStoreSummary()
    {
        const json j = reportOf(*f->store, f->live);
        QVERIFY(j.is_object());
        const json summary = toJson(f->store->summary(f->live).value());
        for (const auto &[key, value] : summary.items())
            QVERIFY2(j["headline"][key] == value, key.c_str());
        // and the session is what the fixture sent
        QCOMPARE(j["headline"]["requests"].get<std::uint64_t>(), std::uint64_t(f->submitted));
        QVERIFY(j["headline"]["rejected"].get<std::uint64_t>() > 0);
        QVERIFY(j["headline"]["by_status"]["out_of_range"].get<std::uint64_t>() > 0);
        QVERIFY(j["headline"]["latency_p99_ms"].get<double>() > 0);
        QVERIFY(j["headline"]["padding_efficiency"].get<double>() < 1);
    }

    void extraFiguresMatchTheRecords()
    {
        const json h = reportOf(*f->store, f->live)["headline"];
        std::vector<std::int64_t> wait, compute, ttft;
        std::uint64_t timeouts = 0, generated = 0;
        const auto requests = f->store->requests(f->live).value();
        for (const StoredRequest &r : requests) {
            timeouts += r.status == StatusCode::DeadlineExceeded;
            if (r.status != StatusCode::Ok)
                continue;
            wait.push_back(r.queueWait.count());
            compute.push_back(r.compute.count());
            generated += std::uint64_t(r.outputTokens);
            if (r.outputTokens > 0)
                ttft.push_back(r.timeToFirstToken.count());
        }
        QVERIFY(timeouts > 0);
        QVERIFY(!ttft.empty());
        QCOMPARE(h["timeouts"].get<std::uint64_t>(), timeouts);
        QCOMPARE(h["timeouts"].get<std::uint64_t>(),
                 h["by_status"]["deadline_exceeded"].get<std::uint64_t>());
        QCOMPARE(h["generated_tokens"].get<std::uint64_t>(), generated);
        QCOMPARE(h["queue_wait_p90_ms"].get<double>(), rankMs(wait, 0.90));
        QCOMPARE(h["queue_wait_p50_ms"].get<double>(), rankMs(wait, 0.50)); // the store's, same definition
        QCOMPARE(h["compute_p50_ms"].get<double>(), rankMs(compute, 0.50));
        QCOMPARE(h["compute_p90_ms"].get<double>(), rankMs(compute, 0.90));
        QCOMPARE(h["compute_p99_ms"].get<double>(), rankMs(compute, 0.99));
        QVERIFY(h["compute_p50_ms"].get<double>() >= 0.4); // the fixture's batches take >= 400 µs
        QCOMPARE(h["ttft_requests"].get<std::size_t>(), ttft.size());
        QCOMPARE(h["ttft_p50_ms"].get<double>(), rankMs(ttft, 0.50));
        QCOMPARE(h["ttft_p99_ms"].get<double>(), rankMs(ttft, 0.99));
    }

    // TPOT percentiles and goodput, with the SLO used,
    // recomputed from the stored records.
    void generationFiguresAndGoodput()
    {
        const json h = reportOf(*f->store, f->live)["headline"];
        std::vector<std::int64_t> tpot;
        std::uint64_t good = 0, completed = 0;
        const std::vector<StoredRequest> requests = f->store->requests(f->live).value();
        for (const StoredRequest &r : requests) {
            if (r.status != StatusCode::Ok)
                continue;
            ++completed;
            if (r.outputTokens >= 2)
                tpot.push_back(r.timePerOutputToken.count());
            // vLLM / DistServe: OK and within every set bound; no token = TTFT not met
            if (r.outputTokens > 0 && r.timeToFirstToken <= Duration(5ms) &&
                r.timePerOutputToken <= Duration(1ms))
                ++good;
        }
        QVERIFY(!tpot.empty());
        QVERIFY2(
            good > 0 && good < completed,
            qPrintable(
                QStringLiteral("good %1 of %2").arg(good).arg(completed))); // the SLO separates the requests
        QCOMPARE(h["tpot_p50_ms"].get<double>(), rankMs(tpot, 0.50));
        QCOMPARE(h["tpot_p90_ms"].get<double>(), rankMs(tpot, 0.90));
        QCOMPARE(h["tpot_p99_ms"].get<double>(), rankMs(tpot, 0.99));
        QCOMPARE(h["tpot_p50_ms"].get<double>(), 0.05); // the paced backend's 50 µs
        QCOMPARE(h["tpot_requests"].get<std::size_t>(), tpot.size());
        QCOMPARE(h["good_completed"].get<std::uint64_t>(), good);
        QCOMPARE(h["goodput_rps"].get<double>(), double(good) / h["duration_s"].get<double>());
        QCOMPARE(h["goodput_slo_ms"]["ttft"].get<double>(), 5.0);
        QCOMPARE(h["goodput_slo_ms"]["tpot"].get<double>(), 1.0);
        QVERIFY(h["goodput_slo_ms"]["e2e"].is_null());
    }

    void seriesAreTheMetricSamples()
    {
        const json j = reportOf(*f->store, f->live);
        const auto samples = f->store->metricSamples(f->live).value();
        QVERIFY(samples.size() >= 6);
        const json &s = j["series"];
        QCOMPARE(s["t_s"].size(), samples.size());
        for (std::size_t i = 0; i < samples.size(); ++i) {
            QCOMPARE(s["t_s"][i].get<double>(), toSeconds(samples[i].at));
            QCOMPARE(s["requests_per_s"][i].get<double>(), samples[i].requestsPerS);
            QCOMPARE(s["latency_p99_ms"][i].get<double>(), samples[i].totalP99Us / 1000);
            QCOMPARE(s["busy_fraction"][i].get<double>(), samples[i].busyFraction);
            QCOMPARE(s["mean_batch_size"][i].get<double>(), samples[i].meanBatchSize);
            QCOMPARE(s["config_version"][i].get<std::uint64_t>(), samples[i].configVersion);
            QVERIFY(s["max_batch_size"][i].get<int>() >= 0 && s["max_batch_size"][i].get<int>() <= 16);
        }
        // after the change at 3 s, batches of up to 16 appear
        int largest = 0;
        for (const auto &v : s["max_batch_size"])
            largest = std::max(largest, v.get<int>());
        QVERIFY(largest > 8);
    }

    void timelineAndMarkersAreTheConfigHistory()
    {
        const json j = reportOf(*f->store, f->live);
        const auto history = f->store->configHistory(f->live).value();
        QCOMPARE(history.size(), std::size_t(2));
        QCOMPARE(j["config_timeline"].size(), history.size());
        for (std::size_t i = 0; i < history.size(); ++i) {
            QCOMPARE(j["config_timeline"][i]["version"].get<std::uint64_t>(), history[i].version);
            QCOMPARE(j["config_timeline"][i]["summary"].get<std::string>(), history[i].summary);
            QCOMPARE(j["config_timeline"][i]["origin"].get<std::string>(), history[i].origin);
            QVERIFY(j["config_timeline"][i]["config"] == toJson(history[i].config));
        }
        QCOMPARE(j["config_markers"].size(), std::size_t(1));
        QCOMPARE(j["config_markers"][0]["at_s"].get<double>(), toSeconds(history[1].at));
        QVERIFY(std::abs(j["config_markers"][0]["at_s"].get<double>() - 3.0) < 0.05);
        QCOMPARE(j["config_timeline"][1]["config"]["max_batch_size"].get<int>(), 16);
    }

    void sessionFactsAndTimeSpan()
    {
        const json j = reportOf(*f->store, f->live);
        const SessionInfo s = f->store->session(f->live).value();
        QCOMPARE(j["session"]["id"].get<std::int64_t>(), f->live);
        QCOMPARE(j["session"]["model"].get<std::string>(), s.model);
        QCOMPARE(j["session"]["device"].get<std::string>(), s.device);
        QVERIFY(j["session"]["host"] == s.host);
        QVERIFY(j["session"]["host"].contains("hostname"));
        QCOMPARE(j["time_span"]["started_at_us"].get<std::int64_t>(), s.startedAtUs);
        QCOMPARE(j["time_span"]["ended_at_us"].get<std::int64_t>(), *s.endedAtUs);
        QCOMPARE(j["time_span"]["traffic_s"].get<double>(), j["headline"]["duration_s"].get<double>());
        QCOMPARE(j["report"]["version"].get<int>(), report::kReportJsonVersion);
        QVERIFY(j["comparison"].is_null());
        QVERIFY(j["source"].is_null());
    }

    void replayCarriesTheComparison()
    {
        const json j = reportOf(*f->store, f->replay);
        const SessionSummary source = f->store->summary(f->live).value();
        const SessionSummary replay = f->store->summary(f->replay).value();
        QCOMPARE(j["source"]["kind"].get<std::string>(), std::string("session"));
        QCOMPARE(j["source"]["id"].get<std::int64_t>(), f->live);
        QVERIFY(j["comparison"]["a"] == toJson(source));
        QVERIFY(j["comparison"]["b"] == toJson(replay));
        QVERIFY(j["comparison"]["change"] == comparisonJson(source, replay)["change"]);
        const auto rows = comparisonRows(source, replay);
        QCOMPARE(j["comparison"]["rows"].size(), rows.size());
        QCOMPARE(j["comparison"]["rows"][8]["replay"].get<std::string>(), rows[8].b);
        QCOMPARE(j["session"]["source_session_id"].get<std::int64_t>(), f->live);
    }

    void errors()
    {
        auto missing = report::renderReport(*f->store, 999, QStringLiteral("json"));
        QVERIFY(!missing);
        QCOMPARE(missing.status().code(), StatusCode::NotFound);
        QVERIFY(missing.status().message().find("999") != std::string::npos);
        auto format = report::renderReport(*f->store, f->live, QStringLiteral("docx"));
        QVERIFY(!format);
        QCOMPARE(format.status().code(), StatusCode::InvalidArgument);
        QString error;
        QVERIFY(report::renderReport(*f->store, 999, QStringLiteral("html"), &error).isEmpty());
        QVERIFY(error.contains("999"));
        QCOMPARE(report::formatFromPath("a/b.PDF"), std::optional(report::ReportFormat::Pdf));
        QCOMPARE(report::formatFromPath("report.htm"), std::optional(report::ReportFormat::Html));
        QVERIFY(!report::formatFromPath("report"));
        QVERIFY(!report::formatFromPath("report.txt"));
    }
};

QTEST_GUILESS_MAIN(TestReportJson)
#include "test_report_json.moc"
