// Every table written and read back: sessions (start, end, notes, listing,
// delete), config history, requests, batches and metric samples (through
// the TraceSink, as live logging writes them), traces and their rows; and
// the session summary computed from the stored records.
#include "engine/config/config_json.h"
#include "engine/metrics/snapshot.h"
#include "engine/store/session_summary.h"
#include "engine/store/trace_sink.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <set>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    QTemporaryDir dir;
    std::string path = dir.filePath("t.sqlite").toStdString();
    std::shared_ptr<TraceStore> store;
    Fixture()
    {
        auto s = TraceStore::open(path);
        Q_ASSERT(s);
        store = std::move(s.value());
    }
};

RequestRecord request(std::uint64_t id, TimePoint epoch, Duration arrival, Duration total,
                      std::uint64_t batch, StatusCode status = StatusCode::Ok)
{
    RequestRecord r;
    r.id = id;
    r.arrival = epoch + arrival;
    r.queueWait = total / 4;
    r.compute = total / 2;
    r.total = total;
    r.timeToFirstToken = total / 3;
    r.inputTokens = int(10 + id);
    r.outputTokens = int(id);
    r.bucket = int(id % 3);
    r.batchId = batch;
    r.status = status;
    return r;
}

} // namespace

class TestStoreRoundTrip : public QObject {
    Q_OBJECT
private slots:
    // Statuses are stored by name: every code (Cancelled included) has a
    // distinct name that parses back to itself, so no stored row reads back
    // as `internal`.
    void statusNamesRoundTrip()
    {
        std::set<std::string_view> names;
        for (int c = 0; c < kStatusCodeCount; ++c) {
            const std::string_view name = statusCodeName(StatusCode(c));
            QVERIFY2(name != "unknown", std::to_string(c).c_str());
            QVERIFY(names.insert(name).second);
            QCOMPARE(parseStatusCode(name), std::optional<StatusCode>(StatusCode(c)));
        }
        QCOMPARE(parseStatusCode("cancelled"), std::optional<StatusCode>(StatusCode::Cancelled));
    }

    void sessions()
    {
        Fixture f;
        SessionStart start;
        start.kind = "live";
        start.model = "builtin:tiny-decoder";
        start.device = "cpu";
        start.host = {{"hostname", "box"}, {"logical_cores", 2}};
        start.notes = "first";
        start.startedAtUs = 1'700'000'000'000'000;
        auto a = f.store->startSession(start);
        QVERIFY(a);
        SessionStart replay;
        replay.kind = "replay";
        replay.sourceSessionId = *a;
        replay.replay = {{"speed", 2.0}};
        auto b = f.store->startSession(replay);
        QVERIFY(b);

        auto sa = f.store->session(*a);
        QVERIFY(sa);
        QCOMPARE(sa->kind, start.kind);
        QCOMPARE(sa->model, start.model);
        QCOMPARE(sa->device, start.device);
        QCOMPARE(sa->host, start.host);
        QCOMPARE(sa->notes, start.notes);
        QCOMPARE(sa->startedAtUs, start.startedAtUs);
        QVERIFY(!sa->endedAtUs);
        QVERIFY(sa->replay.is_null());

        SessionEnd end;
        end.endedAtUs = start.startedAtUs + 5'000'000;
        end.droppedRows = 42;
        end.loggingError = "disk full";
        QVERIFY(f.store->endSession(*a, end));
        QVERIFY(f.store->setSessionNotes(*a, "edited"));
        sa = f.store->session(*a);
        QCOMPARE(*sa->endedAtUs, end.endedAtUs);
        QCOMPARE(sa->droppedRows, std::uint64_t(42));
        QCOMPARE(sa->loggingError, std::string("disk full"));
        QCOMPARE(sa->notes, std::string("edited"));

        auto sb = f.store->session(*b);
        QCOMPARE(*sb->sourceSessionId, *a);
        QCOMPARE(sb->replay["speed"].get<double>(), 2.0);

        auto list = f.store->sessions();
        QVERIFY(list);
        QCOMPARE(list->size(), std::size_t(2));
        QCOMPARE(list->at(0).id, *b); // newest first
        QCOMPARE(f.store->endSession(999, {}).code(), StatusCode::NotFound);

        // Deleting the source keeps the replay, without the link.
        QVERIFY(f.store->deleteSession(*a));
        QCOMPARE(f.store->session(*a).status().code(), StatusCode::NotFound);
        QVERIFY(!f.store->session(*b)->sourceSessionId);
    }

    void recordsThroughTheSink()
    {
        Fixture f;
        const auto id = *f.store->startSession({});
        const TimePoint epoch = SteadyClock::now();
        auto sink = TraceSink::create(f.path, id, epoch);
        QVERIFY2(sink, sink.status().toString().c_str());

        ConfigChange initial{epoch, 1, "initial", "start", BatchingConfig{}};
        BatchingConfig changedConfig;
        changedConfig.policy = PolicyKind::Bucketed;
        changedConfig.maxBatchSize = 32;
        changedConfig.maxQueueDelay = 2ms;
        changedConfig.bucketEdges = {32, 64};
        ConfigChange changed{epoch + 1500ms, 2, describeChange(BatchingConfig{}, changedConfig), "rest",
                             changedConfig};

        BatchRecord batch;
        batch.id = 5;
        batch.dispatchedAt = epoch + 20ms;
        batch.intendedAt = epoch + 19ms;
        batch.size = 3;
        batch.paddedLength = 13;
        batch.realTokens = 36;
        batch.paddedTokens = 39;
        batch.compute = 4ms;
        batch.reason = DispatchReason::DelayExpired;
        batch.policy = PolicyKind::Bucketed;
        batch.bucket = 1;
        batch.executor = 2;
        batch.configVersion = 2;
        std::vector<RequestRecord> members = {request(1, epoch, 10ms, 14ms, 5),
                                              request(2, epoch, 11ms, 13ms, 5),
                                              request(3, epoch, 12ms, 12ms, 5)};
        RequestRecord rejected = request(4, epoch, 30ms, 0ms, 0, StatusCode::QueueFull);

        MetricSample sample;
        sample.at = 1s;
        sample.requestsPerS = 3;
        sample.inputTokensPerS = 36;
        sample.outputTokensPerS = 6;
        sample.totalP50Us = 13000;
        sample.totalP90Us = 14000;
        sample.totalP99Us = 14000;
        sample.queueWaitP99Us = 3500;
        sample.queueDepth = 2;
        sample.inFlight = 1;
        sample.meanBatchSize = 3;
        sample.paddingEfficiency = 36.0 / 39.0;
        sample.busyFraction = 0.25;
        sample.submitted = 4;
        sample.completed = 3;
        sample.failed = 1;
        sample.configVersion = 2;
        sample.droppedRows = 7;

        (*sink)->onConfigChanged(initial);
        (*sink)->onConfigChanged(changed);
        (*sink)->onBatchCompleted(batch, members);
        (*sink)->onRequestFailed(rejected);
        (*sink)->recordSample(sample);
        (*sink)->start();
        QVERIFY((*sink)->flush());
        QCOMPARE((*sink)->writtenRows(), std::uint64_t(2 + 1 + 3 + 1 + 1));
        QCOMPARE((*sink)->droppedRows(), std::uint64_t(0));

        auto history = f.store->configHistory(id);
        QVERIFY2(history, history.status().toString().c_str());
        QCOMPARE(history->size(), std::size_t(2));
        QCOMPARE(history->at(0).version, std::uint64_t(1));
        QCOMPARE(history->at(0).origin, std::string("start"));
        QVERIFY(history->at(0).config == BatchingConfig{});
        QCOMPARE(history->at(1).at, Duration(1500ms));
        QCOMPARE(history->at(1).summary, changed.summary);
        QCOMPARE(history->at(1).origin, std::string("rest"));
        QVERIFY(history->at(1).config == changedConfig);

        auto batches = f.store->batches(id);
        QVERIFY(batches);
        QCOMPARE(batches->size(), std::size_t(1));
        const StoredBatch &b = batches->front();
        QCOMPARE(b.batchId, batch.id);
        QCOMPARE(b.dispatched, Duration(20ms));
        QCOMPARE(b.intended, Duration(19ms));
        QCOMPARE(b.size, batch.size);
        QCOMPARE(b.paddedLength, batch.paddedLength);
        QCOMPARE(b.realTokens, batch.realTokens);
        QCOMPARE(b.paddedTokens, batch.paddedTokens);
        QCOMPARE(b.compute, batch.compute);
        QCOMPARE(b.reason, batch.reason);
        QCOMPARE(b.policy, batch.policy);
        QCOMPARE(b.bucket, batch.bucket);
        QCOMPARE(b.executor, batch.executor);
        QCOMPARE(b.configVersion, batch.configVersion);
        QCOMPARE(b.status, StatusCode::Ok);

        auto requests = f.store->requests(id);
        QVERIFY(requests);
        QCOMPARE(requests->size(), std::size_t(4));
        members.push_back(rejected);
        for (std::size_t i = 0; i < members.size(); ++i) {
            const RequestRecord &in = members[i];
            const StoredRequest &out = requests->at(i); // arrival order = id order here
            QCOMPARE(out.requestId, in.id);
            QCOMPARE(out.arrival, in.arrival - epoch);
            QCOMPARE(out.queueWait, in.queueWait);
            QCOMPARE(out.compute, in.compute);
            QCOMPARE(out.total, in.total);
            QCOMPARE(out.timeToFirstToken, in.timeToFirstToken);
            QCOMPARE(out.inputTokens, in.inputTokens);
            QCOMPARE(out.outputTokens, in.outputTokens);
            QCOMPARE(out.bucket, in.bucket);
            QCOMPARE(out.batchId, in.batchId);
            QCOMPARE(out.status, in.status);
            QCOMPARE(out.source, std::string("live"));
        }

        auto samples = f.store->metricSamples(id);
        QVERIFY(samples);
        QCOMPARE(samples->size(), std::size_t(1));
        QVERIFY(samples->front() == sample);

        // The session's arrivals as a trace (what replay re-drives).
        auto arrivals = f.store->sessionArrivals(id);
        QVERIFY(arrivals);
        QCOMPARE(arrivals->size(), std::size_t(4));
        QCOMPARE(arrivals->at(0).arrivalS, 0.0);
        QCOMPARE(arrivals->at(3).arrivalS, 0.020);
        QCOMPARE(arrivals->at(1).inputTokens, 12);
        QCOMPARE(f.store->sessionArrivals(id + 1).status().code(), StatusCode::NotFound);

        // Deleting a session takes its records with it.
        (*sink)->stop();
        QVERIFY(f.store->deleteSession(id));
        QCOMPARE(f.store->requests(id)->size(), std::size_t(0));
        QCOMPARE(f.store->batches(id)->size(), std::size_t(0));
        QCOMPARE(f.store->metricSamples(id)->size(), std::size_t(0));
        QCOMPARE(f.store->configHistory(id)->size(), std::size_t(0));
    }

    void remoteRequestsAndTargetSamplesThroughTheSink()
    {
        Fixture f;
        SessionStart start;
        start.kind = "remote";
        start.targetUrl = "http://127.0.0.1:9/";
        const auto id = *f.store->startSession(start);
        const TimePoint epoch = SteadyClock::now();
        TraceSinkOptions options;
        options.requestSource = "remote";
        auto sink = TraceSink::create(f.path, id, epoch, options);
        QVERIFY2(sink, sink.status().toString().c_str());
        RequestRecord ok = request(1, epoch, 10ms, 0ms, 0);
        ok.timeToFirstToken = 3ms;
        ok.outputTokens = 9;
        RequestRecord timedOut = request(2, epoch, 20ms, 0ms, 0, StatusCode::DeadlineExceeded);
        TargetSample scraped;
        scraped.at = 1500ms;
        scraped.server = "vllm";
        scraped.running = 12;
        scraped.waiting = 3;
        scraped.kvUsage = 0.5;
        TargetSample failed;
        failed.at = 2500ms;
        failed.error = "connection refused";
        (*sink)->recordRequest(ok);
        (*sink)->recordRequest(timedOut);
        (*sink)->recordTargetSample(scraped);
        (*sink)->recordTargetSample(failed);
        (*sink)->start();
        QVERIFY((*sink)->flush());
        QCOMPARE((*sink)->writtenRows(), std::uint64_t(4));

        auto requests = f.store->requests(id);
        QVERIFY(requests);
        QCOMPARE(requests->size(), std::size_t(2));
        QCOMPARE(requests->at(0).source, std::string("remote"));
        QCOMPARE(requests->at(0).timeToFirstToken, Duration(3ms));
        QCOMPARE(requests->at(0).outputTokens, 9);
        QCOMPARE(requests->at(1).status, StatusCode::DeadlineExceeded);
        auto samples = f.store->targetSamples(id);
        QVERIFY2(samples, samples.status().toString().c_str());
        QCOMPARE(samples->size(), std::size_t(2));
        QVERIFY(samples->at(0) == scraped); // NULL stays "not exposed", values round-trip
        QVERIFY(samples->at(1) == failed);
        QCOMPARE(f.store->session(id)->targetUrl, start.targetUrl);
    }

    void traces()
    {
        Fixture f;
        std::vector<TraceRow> rows = {{0.0, 10, 1}, {0.25, 20, 2}, {0.25, 30, 3}, {1.123456789, 40, 0}};
        auto t = f.store->addTrace("unit", "/tmp/unit.csv", TraceFormat::Azure, rows, 2);
        QVERIFY2(t, t.status().toString().c_str());
        QCOMPARE(t->name, std::string("unit"));
        QCOMPARE(t->sourcePath, std::string("/tmp/unit.csv"));
        QCOMPARE(t->format, TraceFormat::Azure);
        QCOMPARE(t->rows, std::uint64_t(4));
        QCOMPARE(t->skippedRows, std::uint64_t(2));
        QCOMPARE(t->durationS, 1.123456789);
        QVERIFY(t->importedAtUs > 0);
        auto back = f.store->traceRows(t->id);
        QVERIFY(back);
        QCOMPARE(back->size(), rows.size());
        for (std::size_t i = 0; i < rows.size(); ++i) {
            QVERIFY(std::abs(back->at(i).arrivalS - rows[i].arrivalS) < 1e-9); // stored in ns
            QCOMPARE(back->at(i).inputTokens, rows[i].inputTokens);
            QCOMPARE(back->at(i).outputTokens, rows[i].outputTokens);
        }
        auto second = f.store->addTrace("two", "", TraceFormat::Plain, {{0, 1, 1}});
        QVERIFY(second);
        auto list = f.store->traces();
        QCOMPARE(list->size(), std::size_t(2));
        QCOMPARE(list->front().id, second->id);
        QCOMPARE(f.store->trace(999).status().code(), StatusCode::NotFound);
        QCOMPARE(f.store->traceRows(999).status().code(), StatusCode::NotFound);
        QVERIFY(!f.store->addTrace("unsorted", "", TraceFormat::Plain, {{1, 1, 1}, {0, 1, 1}}));

        // A replay of a deleted trace keeps its rows, without the link.
        SessionStart replay;
        replay.kind = "replay";
        replay.sourceTraceId = t->id;
        const auto sessionId = *f.store->startSession(replay);
        QVERIFY(f.store->deleteTrace(t->id));
        QCOMPARE(f.store->trace(t->id).status().code(), StatusCode::NotFound);
        QVERIFY(!f.store->session(sessionId)->sourceTraceId);
        QCOMPARE(f.store->deleteTrace(t->id).code(), StatusCode::NotFound);
    }

    void summaryFromRecords()
    {
        Fixture f;
        const auto id = *f.store->startSession({});
        const TimePoint epoch = SteadyClock::now();
        auto sink = TraceSink::create(f.path, id, epoch);
        QVERIFY(sink);
        (*sink)->onConfigChanged({epoch, 1, "initial", "start", BatchingConfig{}});
        // 100 completed requests in 25 batches of 4: totals 1..100 ms,
        // arrivals 0..99 ms; padding 3 of 4 tokens real.
        for (int b = 0; b < 25; ++b) {
            BatchRecord br;
            br.id = std::uint64_t(b + 1);
            br.size = 4;
            br.paddedLength = 4;
            br.realTokens = 12;
            br.paddedTokens = 16;
            std::vector<RequestRecord> rs;
            for (int k = 0; k < 4; ++k) {
                const int i = b * 4 + k;
                rs.push_back(request(std::uint64_t(i + 1), epoch, std::chrono::milliseconds(i),
                                     std::chrono::milliseconds(i + 1), br.id));
                rs.back().outputTokens = 2;
            }
            (*sink)->onBatchCompleted(br, rs);
        }
        (*sink)->onRequestFailed(request(200, epoch, 5ms, 0ms, 0, StatusCode::QueueFull));
        (*sink)->onRequestFailed(request(201, epoch, 6ms, 1ms, 0, StatusCode::DeadlineExceeded));
        (*sink)->start();
        QVERIFY((*sink)->flush());

        auto s = f.store->summary(id);
        QVERIFY2(s, s.status().toString().c_str());
        QCOMPARE(s->requests, std::uint64_t(102));
        QCOMPARE(s->completed, std::uint64_t(100));
        QCOMPARE(s->rejected, std::uint64_t(2));
        QCOMPARE(s->failed, std::uint64_t(0));
        QCOMPARE(s->byStatus["queue_full"], std::uint64_t(1));
        // first arrival 0, last completion 99 + 100 ms
        QCOMPARE(s->durationS, 0.199);
        QCOMPARE(s->throughputRps, 100 / 0.199);
        QCOMPARE(s->outputTokensPerS, 200 / 0.199);
        QCOMPARE(s->latencyP50Ms, 50.0);
        QCOMPARE(s->latencyP90Ms, 90.0);
        QCOMPARE(s->latencyP99Ms, 99.0);
        QCOMPARE(s->latencyMeanMs, 50.5);
        QCOMPARE(s->batches, std::uint64_t(25));
        QCOMPARE(s->meanBatchSize, 4.0);
        QCOMPARE(s->paddingEfficiency, 0.75);
        QVERIFY(s->config.rfind("dynamic", 0) == 0);

        const std::string table = formatComparison(*s, *s);
        QVERIFY(table.find("latency p99 (ms)") != std::string::npos);
        QVERIFY(table.find("change") != std::string::npos);
        const auto j = comparisonJson(*s, *s);
        QCOMPARE(j["change"]["throughput_rps"].get<double>(), 0.0);
        QCOMPARE(j["a"]["completed"].get<double>(), 100.0);
        // The same comparison as rows (the console's compare view).
        SessionSummary slower = *s;
        slower.latencyP99Ms = 99.0 * 1.5;
        const auto rows = comparisonRows(*s, slower);
        const auto p99 = std::find_if(rows.begin(), rows.end(),
                                      [](const ComparisonRow &r) { return r.key == "latency_p99_ms"; });
        QVERIFY(p99 != rows.end());
        QCOMPARE(p99->a, std::string("99.000"));
        QCOMPARE(p99->change, std::string("+50.0%"));
        QCOMPARE(p99->relativeChange, 0.5);
        QVERIFY(!rows.front().numeric); // "kind" is a text row
        QCOMPARE(f.store->summary(id + 1).status().code(), StatusCode::NotFound);
    }

    // Schema 6: a request's TPOT and inter-token summary, a step's tokens
    // and state; the summary's TTFT/TPOT percentiles and goodput against the
    // session's goodput SLO.
    void tokenTimingAndGoodput()
    {
        Fixture f;
        const auto id = *f.store->startSession({});
        const TimePoint epoch = SteadyClock::now();
        auto sink = TraceSink::create(f.path, id, epoch);
        QVERIFY(sink);
        BatchingConfig config;
        config.policy = PolicyKind::Continuous;
        config.goodput.ttft = 30ms;
        config.goodput.tpot = 5ms;
        (*sink)->onConfigChanged({epoch, 1, "initial", "start", BatchingConfig{}});
        (*sink)->onConfigChanged({epoch + 1ms, 2, "goodput", "rest", config}); // the last config's SLO counts
        // 10 requests, one step each for simplicity: TTFT i*10 ms (i = 1..10),
        // TPOT i ms over 4 tokens (gaps: i-1, i, i, i+1 ms).
        for (int i = 1; i <= 10; ++i) {
            BatchRecord step;
            step.id = std::uint64_t(i);
            step.policy = PolicyKind::Continuous;
            step.size = 1;
            step.prefillTokens = 8;
            step.decodeTokens = i;
            step.joined = 1;
            step.running = 3;
            step.waiting = i % 4;
            step.kvTokens = 100 + i;
            step.preempted = i == 7 ? 2 : 0;
            RequestRecord r = request(std::uint64_t(i), epoch, std::chrono::milliseconds(i), 200ms, step.id);
            r.outputTokens = 5;
            r.timeToFirstToken = std::chrono::milliseconds(10 * i);
            r.timePerOutputToken = std::chrono::milliseconds(i);
            const Duration ms{std::chrono::milliseconds(1)};
            r.interTokenLatencies = {ms * (i - 1), ms * i, ms * i, ms * (i + 1)};
            (*sink)->onBatchCompleted(step, std::vector<RequestRecord>{r});
        }
        RequestRecord oneToken = request(11, epoch, 20ms, 20ms, 0); // a cache hit: TTFT = its 20 ms total
        oneToken.outputTokens = 1;
        oneToken.timeToFirstToken = {};
        (*sink)->onRequestServedFromCache(oneToken);
        (*sink)->start();
        QVERIFY((*sink)->flush());

        auto requests = f.store->requests(id);
        QVERIFY2(requests, requests.status().toString().c_str());
        QCOMPARE(requests->size(), std::size_t(11));
        QCOMPARE(requests->at(2).timePerOutputToken, Duration(3ms));
        QCOMPARE(requests->at(2).interTokenP50, Duration(3ms)); // median of 2, 3, 3, 4 (nearest rank)
        QCOMPARE(requests->at(2).interTokenMax, Duration(4ms));
        auto batches = f.store->batches(id);
        QVERIFY(batches);
        QCOMPARE(batches->size(), std::size_t(10));
        const StoredBatch &b7 = batches->at(6);
        QCOMPARE(b7.prefillTokens, 8);
        QCOMPARE(b7.decodeTokens, 7);
        QCOMPARE(b7.joined, 1);
        QCOMPARE(b7.running, 3);
        QCOMPARE(b7.waiting, 3);
        QCOMPARE(b7.kvTokens, std::int64_t(107));
        QCOMPARE(b7.preempted, 2);

        auto s = f.store->summary(id);
        QVERIFY2(s, s.status().toString().c_str());
        QCOMPARE(s->completed, std::uint64_t(11));
        QCOMPARE(s->ttftP50Ms, 50.0); // the ten generated TTFTs (the cache hit stores none)
        QCOMPARE(s->ttftP90Ms, 90.0);
        QCOMPARE(s->ttftP99Ms, 100.0);
        QCOMPARE(s->tpotP50Ms, 5.0);
        QCOMPARE(s->tpotP99Ms, 10.0);
        QCOMPARE(s->sloTtftMs, 30.0);
        QCOMPARE(s->sloTpotMs, 5.0);
        QCOMPARE(s->sloE2eMs, 0.0);
        // good: TTFT <= 30 ms and TPOT <= 5 ms -> i = 1, 2, 3, plus the cache hit
        QCOMPARE(s->goodCompleted, std::uint64_t(4));
        QCOMPARE(s->goodputRps, 4 / s->durationS);
        const std::string table = formatSummary(*s);
        QVERIFY2(table.find("ttft<=30ms tpot<=5ms") != std::string::npos, table.c_str());
        QVERIFY(table.find("TPOT p99 (ms)") != std::string::npos);
        const auto j = toJson(*s);
        QCOMPARE(j["goodput_slo_ms"]["ttft"].get<double>(), 30.0);
        QVERIFY(j["goodput_slo_ms"]["e2e"].is_null());
        QCOMPARE(j["good_completed"].get<double>(), 4.0);
        QCOMPARE(j["tpot_p90_ms"].get<double>(), 9.0);
    }

    void nearestRankPercentiles()
    {
        QCOMPARE(nearestRank({}, 0.5), 0.0);
        QCOMPARE(nearestRank({7}, 0.99), 7.0);
        QCOMPARE(nearestRank({1, 2, 3, 4}, 0.5), 2.0);
        QCOMPARE(nearestRank({1, 2, 3, 4}, 0.51), 3.0);
        QCOMPARE(nearestRank({1, 2, 3, 4}, 0.0), 1.0);
        QCOMPARE(nearestRank({1, 2, 3, 4}, 1.0), 4.0);
    }
};

QTEST_GUILESS_MAIN(TestStoreRoundTrip)
#include "test_store_roundtrip.moc"
