// Replay: re-driving an imported trace or a recorded session reproduces the
// source's arrival gaps (exactly on the virtual clock, and as scheduled on
// an accelerated real clock), honours speed and length scaling, the request
// limit, the chosen config, progress and cancellation, and links the new
// session to its source. The virtual clock makes batching deterministic.
#include "engine/replay/replayer.h"
#include "engine/store/session_summary.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <algorithm>
#include <random>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    QTemporaryDir dir;
    std::string path = dir.filePath("t.sqlite").toStdString();
    std::shared_ptr<TraceStore> store = TraceStore::open(path).value();
    std::shared_ptr<Backend> backend = makeEchoBackend(256, 2048);

    // Bursty arrivals (gamma-like: clusters and long gaps, some exactly
    // simultaneous) with varied lengths, as real traces have.
    std::int64_t addTrace(std::size_t n, double spanS)
    {
        std::mt19937_64 rng(42);
        std::exponential_distribution<double> gap(double(n) / spanS);
        std::uniform_int_distribution<int> len(1, 600), out(0, 50);
        std::vector<TraceRow> rows;
        double t = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (i % 7 != 3) // every 7th arrives together with its predecessor
                t += gap(rng);
            rows.push_back({t, len(rng), out(rng)});
        }
        rows.front().arrivalS = 0;
        return f().addTrace("synthetic", "", TraceFormat::Plain, rows).value().id;
    }
    TraceStore &f() { return *store; }
};

std::vector<double> offsets(const std::vector<StoredRequest> &rs)
{
    std::vector<double> out;
    for (const StoredRequest &r : rs)
        out.push_back(toSeconds(r.arrival - rs.front().arrival));
    return out;
}

} // namespace

class TestReplay : public QObject {
    Q_OBJECT
private slots:
    void virtualClockReproducesTraceGaps()
    {
        Fixture f;
        const auto traceId = f.addTrace(500, 60.0);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Virtual;
        Replayer replayer(f.store, f.backend);
        auto out = replayer.run(o);
        QVERIFY2(out, out.status().toString().c_str());
        QCOMPARE(out->total, std::size_t(500));
        QCOMPARE(out->completed, std::size_t(500));
        QVERIFY(!out->cancelled);

        auto source = f.store->traceRows(traceId).value();
        auto replayed = f.store->requests(out->sessionId).value();
        QCOMPARE(replayed.size(), source.size());
        const auto got = offsets(replayed);
        for (std::size_t i = 0; i < source.size(); ++i) {
            QVERIFY2(std::abs(got[i] - source[i].arrivalS) < 1e-6, qPrintable(QString::number(i)));
            QCOMPARE(replayed[i].inputTokens, source[i].inputTokens);
            QCOMPARE(replayed[i].requestId, std::uint64_t(i + 1)); // the position in the source
            QCOMPARE(replayed[i].source, std::string("replay"));
        }
        auto session = f.store->session(out->sessionId).value();
        QCOMPARE(session.kind, std::string("replay"));
        QCOMPARE(*session.sourceTraceId, traceId);
        QVERIFY(!session.sourceSessionId);
        QCOMPARE(session.replay["clock"].get<std::string>(), std::string("virtual"));
        QVERIFY(session.endedAtUs);
        // a sample per virtual second, plus the final one
        const auto samples = f.store->metricSamples(out->sessionId).value();
        const auto seconds = std::size_t(source.back().arrivalS);
        QVERIFY2(samples.size() >= seconds + 1 && samples.size() <= seconds + 2,
                 qPrintable(QString("%1 samples over %2 s").arg(samples.size()).arg(source.back().arrivalS)));
        for (std::size_t i = 0; i + 1 < samples.size(); ++i)
            QCOMPARE(samples[i].at, Duration(std::chrono::seconds(i + 1)));
    }

    void speedLengthScaleAndLimit()
    {
        Fixture f;
        const auto traceId = f.addTrace(300, 10.0);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Virtual;
        o.speed = 4;
        o.lengthScale = 0.5;
        o.limit = 120;
        auto out = Replayer(f.store, f.backend).run(o);
        QVERIFY2(out, out.status().toString().c_str());
        QCOMPARE(out->total, std::size_t(120));
        auto source = f.store->traceRows(traceId).value();
        auto replayed = f.store->requests(out->sessionId).value();
        QCOMPARE(replayed.size(), std::size_t(120));
        const auto got = offsets(replayed);
        for (std::size_t i = 0; i < replayed.size(); ++i) {
            QVERIFY(std::abs(got[i] - source[i].arrivalS / 4) < 1e-6);
            QCOMPARE(replayed[i].inputTokens, std::max(1, int(std::lround(source[i].inputTokens * 0.5))));
        }
        QCOMPARE(f.store->session(out->sessionId)->replay["speed"].get<double>(), 4.0);
    }

    void clampsToTheModel()
    {
        Fixture f;
        auto small = makeEchoBackend(256, 64);
        const auto traceId =
            f.store->addTrace("long", "", TraceFormat::Plain, {{0, 10, 1}, {0.1, 500, 1}})->id;
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Virtual;
        auto clamped = Replayer(f.store, small).run(o);
        QVERIFY(clamped);
        QCOMPARE(clamped->clamped, std::size_t(1));
        QCOMPARE(clamped->completed, std::size_t(2));
        o.clampToModel = false;
        auto strict = Replayer(f.store, small).run(o);
        QVERIFY(strict);
        QCOMPARE(strict->rejected, std::size_t(1));
        QCOMPARE(f.store->summary(strict->sessionId)->byStatus["out_of_range"], std::uint64_t(1));
    }

    // The one length rule (engine/core/length_rule.h): an output that
    // scales below one token asks for 1, and a request whose prompt +
    // output exceeds the model is clamped with room for its output; the
    // replay counts both, and every request completes.
    void theLengthRuleRaisesAndClampsTogether()
    {
        Fixture f;
        auto small = makeEchoBackend(256, 64);
        const auto traceId =
            f.store
                ->addTrace("rule", "", TraceFormat::Plain, {{0, 200, 4}, {0.1, 1200, 400}, {0.2, 400, 100}})
                ->id;
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Virtual;
        o.lengthScale = 0.1; // (20, 0.4 -> 1), (120, 40 -> 24 + 40), (40, 10 -> 40 + 10)
        BatchingConfig c;
        c.policy = PolicyKind::Continuous;
        o.config = c;
        auto out = Replayer(f.store, small).run(o);
        QVERIFY2(out, out.status().toString().c_str());
        QCOMPARE(out->raised, std::size_t(1));
        QCOMPARE(out->clamped, std::size_t(1));
        QCOMPARE(out->completed, std::size_t(3));
        QCOMPARE(out->rejected, std::size_t(0));
        auto rows = f.store->requests(out->sessionId).value();
        std::sort(rows.begin(), rows.end(),
                  [](const auto &a, const auto &b) { return a.requestId < b.requestId; });
        QCOMPARE(rows.size(), std::size_t(3));
        QCOMPARE(rows[0].inputTokens, 20);
        QCOMPARE(rows[0].outputTokens, 1);
        QCOMPARE(rows[1].inputTokens, 24);
        QCOMPARE(rows[1].outputTokens, 40);
        QCOMPARE(rows[2].inputTokens, 40);
        QCOMPARE(rows[2].outputTokens, 10);
    }

    // Arrivals at 0, 1, 2 and 10 ms; max batch 2, delay 5 ms: {0,1} leaves
    // full at 1 ms, {2} when its delay expires at 7 ms, {10} at 15 ms.
    void virtualClockBatchingIsExact()
    {
        Fixture f;
        const auto traceId = f.store
                                 ->addTrace("tiny", "", TraceFormat::Plain,
                                            {{0, 8, 0}, {0.001, 8, 0}, {0.002, 8, 0}, {0.010, 8, 0}})
                                 ->id;
        BatchingConfig config;
        config.maxBatchSize = 2;
        config.maxQueueDelay = 5ms;
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Virtual;
        o.config = config;
        auto out = Replayer(f.store, f.backend).run(o);
        QVERIFY(out);
        auto batches = f.store->batches(out->sessionId).value();
        QCOMPARE(batches.size(), std::size_t(3));
        QCOMPARE(batches[0].size, 2);
        QCOMPARE(batches[0].reason, DispatchReason::Full);
        QCOMPARE(batches[1].reason, DispatchReason::DelayExpired);
        QCOMPARE(batches[1].dispatched - batches[0].dispatched, Duration(6ms));
        QCOMPARE(batches[2].dispatched - batches[0].dispatched, Duration(14ms));
        auto requests = f.store->requests(out->sessionId).value();
        QCOMPARE(requests[0].queueWait, Duration(1ms));
        QCOMPARE(requests[1].queueWait, Duration(0ms));
        QCOMPARE(requests[2].queueWait, Duration(5ms));
        QCOMPARE(requests[3].queueWait, Duration(5ms));
        QCOMPARE(requests[3].compute, Duration(0)); // no virtual time passes while a batch runs
    }

    void sessionReplayUnderAnotherConfigIsLinkedAndCompared()
    {
        Fixture f;
        const auto traceId = f.addTrace(400, 20.0);
        ReplayOptions first;
        first.source = {ReplaySource::Kind::Trace, traceId};
        first.clock = ReplayClock::Virtual;
        BatchingConfig baseline;
        baseline.policy = PolicyKind::None;
        first.config = baseline;
        auto a = Replayer(f.store, f.backend).run(first);
        QVERIFY(a);

        // Re-drive session A under a batching config.
        BatchingConfig batching;
        batching.maxBatchSize = 16;
        batching.maxQueueDelay = 20ms;
        ReplayOptions second;
        second.source = {ReplaySource::Kind::Session, a->sessionId};
        second.clock = ReplayClock::Virtual;
        second.config = batching;
        auto b = Replayer(f.store, f.backend).run(second);
        QVERIFY2(b, b.status().toString().c_str());
        QCOMPARE(*f.store->session(b->sessionId)->sourceSessionId, a->sessionId);
        const auto ra = f.store->requests(a->sessionId).value();
        const auto rb = f.store->requests(b->sessionId).value();
        QCOMPARE(ra.size(), rb.size());
        const auto oa = offsets(ra), ob = offsets(rb);
        for (std::size_t i = 0; i < ra.size(); ++i) {
            QVERIFY(std::abs(oa[i] - ob[i]) < 1e-6);
            QCOMPARE(ra[i].inputTokens, rb[i].inputTokens);
        }
        // Without a config, a session replays under its own last config.
        ReplayOptions same;
        same.source = {ReplaySource::Kind::Session, b->sessionId};
        same.clock = ReplayClock::Virtual;
        auto c = Replayer(f.store, f.backend).run(same);
        QVERIFY(c);
        QVERIFY(c->config == batching);

        auto sa = f.store->summary(a->sessionId).value();
        auto sb = f.store->summary(b->sessionId).value();
        QCOMPARE(sa.meanBatchSize, 1.0);
        QVERIFY(sb.meanBatchSize > 1.0);
        QCOMPARE(sa.completed, sb.completed);
        const std::string table = formatComparison(sa, sb);
        QVERIFY(table.find("replay of session " + std::to_string(a->sessionId)) != std::string::npos);
        QVERIFY(table.find("mean batch size") != std::string::npos);
    }

    void acceleratedRealClockKeepsScheduledGaps()
    {
        Fixture f;
        const auto traceId = f.addTrace(100, 2.0);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Real;
        o.speed = 40; // ~50 ms of wall time
        o.recorder.samplePeriod = Duration::zero();
        auto out = Replayer(f.store, f.backend).run(o);
        QVERIFY2(out, out.status().toString().c_str());
        QCOMPARE(out->completed, std::size_t(100));
        auto source = f.store->traceRows(traceId).value();
        auto replayed = f.store->requests(out->sessionId).value();
        const auto got = offsets(replayed);
        // Arrivals are the scheduled times (no coordinated omission): the
        // gaps match the scaled source whatever the machine's load.
        for (std::size_t i = 0; i < replayed.size(); ++i)
            QVERIFY(std::abs(got[i] - source[i].arrivalS / 40) < 1e-6);
        QCOMPARE(f.store->session(out->sessionId)->replay["clock"].get<std::string>(), std::string("real"));
    }

    // A real-clock replay under `static` whose request count is not a
    // multiple of the batch size ends: the partial batch is flushed (or, with
    // flush-on-drain off, failed) by the drain after the last submission.
    // It used to wait for its completions forever.
    void realClockStaticPartialBatchEnds()
    {
        for (const bool flush : {true, false}) {
            Fixture f;
            std::vector<TraceRow> rows;
            for (int i = 0; i < 10; ++i)
                rows.push_back({0.01 * i, 8, 0}); // within the static padded length
            const auto traceId = f.store->addTrace("ten", "", TraceFormat::Plain, rows)->id;
            ReplayOptions o;
            o.source = {ReplaySource::Kind::Trace, traceId};
            o.clock = ReplayClock::Real;
            o.recorder.samplePeriod = Duration::zero();
            BatchingConfig c;
            c.policy = PolicyKind::Static;
            c.staticBatchSize = 4; // 10 = 4 + 4 + 2
            c.staticFlushOnDrain = flush;
            o.config = c;
            auto out = Replayer(f.store, f.backend).run(o);
            QVERIFY2(out, out.status().toString().c_str());
            QCOMPARE(out->rejected, std::size_t(0));
            QCOMPARE(out->completed + out->failed, std::size_t(10));
            QCOMPARE(out->completed, std::size_t(flush ? 10 : 8));
        }
    }

    void progressAndCancel()
    {
        Fixture f;
        const auto traceId = f.addTrace(200, 10.0);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Virtual;
        o.progressInterval = Duration::zero();
        std::atomic<bool> cancel{false};
        std::vector<ReplayProgress> seen;
        auto out = Replayer(f.store, f.backend)
                       .run(
                           o,
                           [&](const ReplayProgress &p) {
                               seen.push_back(p);
                               if (p.submitted >= 25)
                                   cancel = true;
                           },
                           &cancel);
        QVERIFY(out);
        QVERIFY(out->cancelled);
        QCOMPARE(out->submitted, std::size_t(25));
        QVERIFY(!seen.empty());
        QCOMPARE(seen.front().total, std::size_t(200));
        for (std::size_t i = 1; i < seen.size(); ++i)
            QVERIFY(seen[i].submitted >= seen[i - 1].submitted);
        QCOMPARE(seen.back().finished, std::size_t(25));
        auto s = f.store->session(out->sessionId).value();
        QVERIFY(s.notes.find("cancelled after 25 of 200") != std::string::npos);
        QVERIFY(s.endedAtUs);
    }

    void badSourcesAndOptions()
    {
        Fixture f;
        Replayer replayer(f.store, f.backend);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Session, 77};
        QCOMPARE(replayer.run(o).status().code(), StatusCode::NotFound);
        o.source = {ReplaySource::Kind::Trace, 77};
        QCOMPARE(replayer.run(o).status().code(), StatusCode::NotFound);
        const auto empty = *f.store->startSession({});
        o.source = {ReplaySource::Kind::Session, empty};
        QCOMPARE(replayer.run(o).status().code(), StatusCode::InvalidArgument);
        o.speed = 0;
        QCOMPARE(replayer.run(o).status().code(), StatusCode::InvalidArgument);
        o.speed = 1;
        o.lengthScale = -1;
        QCOMPARE(replayer.run(o).status().code(), StatusCode::InvalidArgument);
        o.lengthScale = 1;
        BatchingConfig bad;
        bad.maxBatchSize = 0;
        o.config = bad;
        o.source = {ReplaySource::Kind::Trace, f.addTrace(5, 1.0)};
        QCOMPARE(replayer.run(o).status().code(), StatusCode::InvalidArgument);
    }
};

QTEST_GUILESS_MAIN(TestReplay)
#include "test_replay.moc"
