// The prefix cache in the simulator and the tuner.
//  - A hand-built trace whose reuse is known exactly: the simulated hit rate
//    is the known one, and the engine's (builtin:echo on the virtual clock)
//    request for request; with a KV budget that evicts, the two still agree
//    (the eviction is the engine's own, run by the simulator).
//  - The cost backend charges only the uncached prompt tokens.
//  - A calibration fitted from a session recorded with the cache on prices
//    a prompt chunk on top of a cached prefix as the model ran it.
//  - The tuner searches the cache on/off and its block size: on a
//    prefix-heavy trace it picks the cache on; on one without reuse the two
//    tie and the default (off) stays.
#include "engine/replay/replayer.h"
#include "engine/sim/calibration/calibration.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/sim/tune/tuner.h"
#include "engine/store/session_summary.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <map>
#include <set>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    QTemporaryDir dir;
    std::shared_ptr<TraceStore> store = TraceStore::open(dir.filePath("p.sqlite").toStdString()).value();
};

struct Collector final : EngineObserver {
    std::vector<BatchRecord> batches;
    std::vector<RequestRecord> requests;
    void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord> rs) override
    {
        batches.push_back(b);
        requests.insert(requests.end(), rs.begin(), rs.end());
    }
};

// Blocks of 16 tokens, one request a second (each ends before the next
// arrives), 2 new tokens each. With room for everything, a request's
// cached tokens are its leading whole blocks seen before, never its last
// prompt token (it is fed so that the next one can be sampled):
//   1: 48 tokens, blocks 1 2 3   -> 0 (nothing cached yet)
//   2: 48,        blocks 1 2 4   -> 32 (1 2; block 4 holds the last token)
//   3: 40,        blocks 1 2 3   -> 32 (block 3 is cut to 8 tokens: not whole)
//   4: 20,        block 5        -> 0
//   5: 64,        blocks 1 2 3 6 -> 48 (1 2 3, whole in request 1)
//   6: 30,        none           -> 0
//   7: 33,        blocks 5 7     -> 16 (5, whole in request 4; 7 is new)
constexpr int kBlock = 16;
const std::vector<TraceRow> kRows = {{0, 48, 2}, {1, 48, 2}, {2, 40, 2}, {3, 20, 2},
                                     {4, 64, 2}, {5, 30, 2}, {6, 33, 2}};
const std::vector<PrefixBlocks> kIds = {{1, 2, 3}, {1, 2, 4}, {1, 2, 3}, {5}, {1, 2, 3, 6}, {}, {5, 7}};
const std::vector<int> kKnownCached = {0, 32, 32, 0, 48, 0, 16};

BatchingConfig prefixConfig(bool enabled, int kv)
{
    BatchingConfig c;
    c.policy = PolicyKind::Continuous;
    c.queueCapacity = 1000;
    c.continuous.maxNumSeqs = 4;
    c.continuous.maxNumBatchedTokens = 128;
    c.continuous.prefillChunk = 16;
    c.continuous.kvCacheTokens = kv;
    c.prefixCache.enabled = enabled;
    c.prefixCache.blockTokens = kBlock;
    return c;
}

std::map<std::uint64_t, int> cachedById(const std::vector<StoredRequest> &rs)
{
    std::map<std::uint64_t, int> out;
    for (const StoredRequest &r : rs)
        out[r.requestId] = r.cachedTokens;
    return out;
}

// The arrivals of kRows for the Simulator directly.
std::vector<PlannedArrival> knownArrivals()
{
    std::vector<PlannedArrival> out;
    for (std::size_t i = 0; i < kRows.size(); ++i) {
        PlannedArrival a;
        a.offset = std::chrono::seconds(std::int64_t(kRows[i].arrivalS));
        a.inputTokens = kRows[i].inputTokens;
        a.maxNewTokens = kRows[i].outputTokens;
        a.blocks = kIds[i];
        a.blockTokens = kBlock;
        out.push_back(a);
    }
    return out;
}

// A decoder whose step costs s0 + s1·items + s2·tokens + s3·attention.
Calibration stepCalibration(double s0, double s1, double s2, double s3)
{
    Calibration c;
    c.model = "test:decoder";
    c.generative = true;
    c.vocabSize = 256;
    c.maxSequenceLength = 4096;
    c.cost.generative = true;
    c.cost.coef[CostModel::kIterationStart] = s0;
    c.cost.coef[CostModel::kIterationStart + 1] = s1;
    c.cost.coef[CostModel::kIterationStart + 2] = s2;
    c.cost.coef[CostModel::kIterationStart + 3] = s3;
    return c;
}

// Requests that share a system prompt of `shared` blocks (hash ids 1..)
// and then one block of their own; `n` of them `gapS` apart.
void sharedPrompt(int n, int shared, double gapS, int outputTokens, std::vector<TraceRow> &rows,
                  std::vector<PrefixBlocks> &ids)
{
    for (int i = 0; i < n; ++i) {
        PrefixBlocks b;
        for (int k = 1; k <= shared; ++k)
            b.push_back(k);
        b.push_back(1000 + i);
        rows.push_back({i * gapS, (shared + 1) * kBlock, outputTokens});
        ids.push_back(b);
    }
}

} // namespace

class TestPrefixSim : public QObject {
    Q_OBJECT
private slots:
    void simulatedHitRateIsTheKnownAndTheEngines_data()
    {
        QTest::addColumn<int>("kv");
        QTest::newRow("room for all") << 0;
        QTest::newRow("evicting") << 80; // the longest request (66) fits; the cache does not
    }
    void simulatedHitRateIsTheKnownAndTheEngines()
    {
        QFETCH(int, kv);
        Fixture f;
        const auto trace = f.store->addTrace("known", "", TraceFormat::Mooncake, kRows, 0, kIds, kBlock);
        QVERIFY2(trace, trace.status().toString().c_str());
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace->id};
        o.config = prefixConfig(true, kv);
        o.clock = ReplayClock::Virtual;
        auto echo = makeEchoBackend(256, 2048);
        auto live = Replayer(f.store, echo).run(o);
        QVERIFY2(live, live.status().toString().c_str());
        SimulatedReplay sim(f.store, Calibration::forModel(echo->info(), "", 1));
        sim.setCostNoise(CostNoise::None);
        auto simulated = sim.run(o);
        QVERIFY2(simulated, simulated.status().toString().c_str());
        QCOMPARE(live->completed, kRows.size());
        QCOMPARE(simulated->completed, kRows.size());

        const auto liveCached = cachedById(f.store->requests(live->sessionId).value());
        const auto simCached = cachedById(f.store->requests(simulated->sessionId).value());
        QCOMPARE(simCached, liveCached); // request for request: the engine's cache, the engine's eviction
        const SessionSummary ls = f.store->summary(live->sessionId).value();
        const SessionSummary ss = f.store->summary(simulated->sessionId).value();
        QCOMPARE(ss.prefixCacheHitRate, ls.prefixCacheHitRate);
        int prompt = 0, known = 0;
        for (std::size_t i = 0; i < kRows.size(); ++i) {
            prompt += kRows[i].inputTokens;
            known += kKnownCached[i];
        }
        if (kv == 0) {
            for (std::size_t i = 0; i < kRows.size(); ++i)
                QCOMPARE(simCached.at(i + 1), kKnownCached[i]);
            QCOMPARE(ss.prefixCacheHitRate, double(known) / double(prompt)); // 128 / 283
        } else {
            int hits = 0;
            for (const auto &[id, c] : simCached)
                hits += c;
            QVERIFY2(hits > 0 && hits < known, std::to_string(hits).c_str()); // some blocks were evicted
        }
    }

    // Each step costs 1 ms per token fed: the cache saves exactly its hit
    // tokens' prefill, and nothing else changes.
    void costBackendChargesOnlyUncachedTokens()
    {
        auto run = [](bool enabled, Collector &records) {
            SimulatorOptions so;
            so.config = prefixConfig(enabled, 0);
            so.limits.maxSequenceLength = 2048;
            so.limits.vocabSize = 256;
            so.cost.generative = true;
            so.cost.coef[CostModel::kIterationStart + 2] = 0.001;
            so.output = OutputKind::Generated;
            so.observer = &records;
            return Simulator(so).run(knownArrivals());
        };
        Collector on, off;
        const SimOutcome a = run(true, on), b = run(false, off);
        QCOMPARE(a.completed, kRows.size());
        QCOMPARE(b.completed, kRows.size());
        Duration onCompute{}, offCompute{};
        std::int64_t onFed = 0, offFed = 0, hits = 0;
        for (const BatchRecord &r : on.batches) {
            onCompute += r.compute;
            onFed += r.prefillTokens + r.decodeTokens;
            hits += r.prefixHitTokens;
        }
        for (const BatchRecord &r : off.batches) {
            offCompute += r.compute;
            offFed += r.prefillTokens + r.decodeTokens;
        }
        QCOMPARE(hits, std::int64_t(128));
        QCOMPARE(a.last.prefixCacheHitsTokens, std::uint64_t(128));
        QCOMPARE(offFed - onFed, std::int64_t(128));
        // 1 ms a token fed, to the microsecond
        QVERIFY2(
            std::llabs(std::chrono::duration_cast<std::chrono::microseconds>(offCompute - onCompute).count() -
                       128'000) <= 2,
            std::to_string(toSeconds(offCompute - onCompute)).c_str());
        QVERIFY(std::llabs(std::chrono::duration_cast<std::chrono::microseconds>(onCompute).count() -
                           onFed * 1000) <= std::int64_t(on.batches.size()));
    }

    // A session recorded with the cache on (the simulator, from a known
    // step cost) refitted: its step rows count only the tokens fed, and a
    // prompt chunk joining on top of a cached prefix attends to it, so the
    // fit prices such a step as the model ran it.
    void calibrationFitsUncachedPrefill()
    {
        Fixture f;
        std::vector<TraceRow> rows;
        std::vector<PrefixBlocks> ids;
        // Three system prompts of 4, 8 and 16 blocks, each request with a block of its own.
        for (int shared : {4, 8, 16}) {
            std::vector<TraceRow> r;
            std::vector<PrefixBlocks> b;
            sharedPrompt(12, shared, 1.0, 3, r, b);
            for (std::size_t i = 0; i < r.size(); ++i) {
                r[i].arrivalS += 100.0 * shared;
                for (auto &id : b[i])
                    id += id < 1000 ? 100 * shared : 10000 * shared;
            }
            rows.insert(rows.end(), r.begin(), r.end());
            ids.insert(ids.end(), b.begin(), b.end());
        }
        const auto trace = f.store->addTrace("shared", "", TraceFormat::Mooncake, rows, 0, ids, kBlock);
        QVERIFY2(trace, trace.status().toString().c_str());
        const Calibration truth = stepCalibration(1e-3, 1e-4, 2e-5, 1e-7);
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace->id};
        o.config = prefixConfig(true, 0);
        o.config->continuous.prefillChunk = 512; // a prompt in one chunk
        o.config->continuous.maxNumBatchedTokens = 1024;
        SimulatedReplay sim(f.store, truth);
        sim.setCostNoise(CostNoise::None);
        auto recorded = sim.run(o);
        QVERIFY2(recorded, recorded.status().toString().c_str());
        QCOMPARE(recorded->completed, rows.size());
        QVERIFY(f.store->summary(recorded->sessionId).value().prefixCacheHitRate > 0.5);

        auto obs = sessionObservations(*f.store, recorded->sessionId, true);
        QVERIFY2(obs, obs.status().toString().c_str());
        // The token term of the step rows: the tokens fed, not the cached ones.
        double tokens = 0;
        std::int64_t fed = 0;
        for (const CostObservation &ob : obs->batches)
            tokens += ob.terms[std::size_t(CostModel::kIterationStart + 2)];
        const std::vector<StoredBatch> steps = f.store->batches(recorded->sessionId).value();
        const std::vector<StoredRequest> requests = f.store->requests(recorded->sessionId).value();
        for (const StoredBatch &b : steps)
            fed += b.prefillTokens + b.decodeTokens;
        QCOMPARE(std::llround(tokens), fed);
        std::int64_t prompt = 0, cached = 0, generated = 0;
        for (const StoredRequest &r : requests) {
            prompt += r.inputTokens;
            cached += r.cachedTokens;
            generated += r.outputTokens;
        }
        QCOMPARE(fed, prompt - cached + generated - std::int64_t(rows.size())); // the last token is not fed

        auto fitted = calibrate(truth, obs->batches);
        QVERIFY2(fitted, fitted.status().toString().c_str());
        // A new request's block on top of each cached system prompt, and a
        // fresh prompt, priced by the fit as by the truth (within 3%).
        for (int cachedBlocks : {0, 4, 8, 16}) {
            StepShape shape;
            shape.add(std::int64_t(cachedBlocks) * kBlock, cachedBlocks ? kBlock : 5 * kBlock);
            const double want = truth.cost.iterationSeconds(shape),
                         got = fitted->cost.iterationSeconds(shape);
            QVERIFY2(std::abs(got - want) <= 0.03 * want,
                     (std::to_string(cachedBlocks) + " blocks: " + std::to_string(got) + " s, truth " +
                      std::to_string(want) + " s")
                         .c_str());
        }
    }

    void tunerPicksTheCacheWhereItPays_data()
    {
        QTest::addColumn<bool>("reuse");
        QTest::newRow("shared system prompt") << true;
        QTest::newRow("no reuse") << false;
    }
    // A shared system prompt of 32 blocks (512 tokens) ahead of one block
    // of each request's own, at a load where recomputing it costs latency.
    void tunerPicksTheCacheWhereItPays()
    {
        QFETCH(bool, reuse);
        TuneWorkload w;
        for (int i = 0; i < 400; ++i) {
            PlannedArrival a;
            a.offset = std::chrono::milliseconds(20 * i);
            a.inputTokens = 33 * kBlock;
            a.maxNewTokens = 8;
            for (int k = 0; k < 33; ++k)
                a.blocks.push_back(reuse && k < 32 ? k + 1 : 1'000'000 + 100 * i + k);
            a.blockTokens = kBlock;
            w.arrivals.push_back(a);
        }
        // Steps as stepCalibration; a request-level batch as a pass over it
        // and decode steps of the same per-token price.
        Calibration c = stepCalibration(1e-3, 1e-4, 2e-5, 0);
        c.cost.coef[0] = 1e-3;
        c.cost.coef[2] = 2e-5;
        c.cost.coef[4] = 1e-3;
        c.cost.coef[5] = 1e-4;
        w.model.limits.maxSequenceLength = 4096;
        w.model.limits.vocabSize = 256;
        w.model.cost = c.cost;
        w.model.output = OutputKind::Generated;
        TuneSlo slo;
        slo.ttftP99 = 50ms;
        TuneOptions o;
        o.slo = slo;
        o.budget = 120;
        o.maxInstances = 1;
        o.generative = true;
        o.prefixBlockTokens = kBlock;
        o.threads = 2;
        for (const PlannedArrival &a : w.arrivals)
            o.inputLengths.push_back(a.inputTokens);
        auto r = tune(simulationEvaluator(w, slo), o);
        QVERIFY2(r, r.status().toString().c_str());
        QVERIFY(r->recommended);
        // Searched: continuous with the cache off and on; with reuse (the
        // continuous family refined), at more than one block size.
        std::set<int> blocks;
        bool off = false;
        std::optional<std::size_t> bestContinuous;
        for (std::size_t i = 0; i < r->candidates.size(); ++i) {
            const TuneCandidate &cand = r->candidates[i];
            if (cand.config.policy != PolicyKind::Continuous)
                continue;
            if (cand.config.prefixCache.enabled)
                blocks.insert(cand.config.prefixCache.blockTokens);
            else
                off = true;
            if (!bestContinuous || better(cand.figures, cand.config, r->candidates[*bestContinuous].figures,
                                          r->candidates[*bestContinuous].config, o.objective))
                bestContinuous = i;
        }
        QVERIFY(off);
        QVERIFY(!blocks.empty());
        QVERIFY(bestContinuous);
        const TuneCandidate &pick = r->candidates[*r->recommended];
        const TuneCandidate &cont = r->candidates[*bestContinuous];
        BatchingConfig other = cont.config;
        other.prefixCache.enabled = !other.prefixCache.enabled;
        const TuneFigures twin = simulationEvaluator(w, slo)(other, 1);
        if (reuse) {
            QVERIFY2(blocks.size() >= 2, std::to_string(blocks.size()).c_str());
            QVERIFY2(pick.config.policy == PolicyKind::Continuous && pick.config.prefixCache.enabled,
                     pick.label.c_str());
            // the cache off: the system prompt is prefilled again every time
            QVERIFY2(twin.ttftP99S > pick.figures.ttftP99S, pick.label.c_str());
        } else {
            // Nothing to reuse: the cache changes nothing, so the two tie and the default (off) stays.
            QVERIFY2(!pick.config.prefixCache.enabled, pick.label.c_str());
            QVERIFY2(!cont.config.prefixCache.enabled, cont.label.c_str());
            QCOMPARE(twin.ttftP99S, cont.figures.ttftP99S);
            QCOMPARE(twin.p99S, cont.figures.p99S);
            QCOMPARE(twin.goodputPerS, cont.figures.goodputPerS);
            QVERIFY(better(cont.figures, cont.config, twin, other, o.objective)); // the tie goes to off
            QVERIFY(!better(twin, other, cont.figures, cont.config, o.objective));
        }
    }
};

QTEST_GUILESS_MAIN(TestPrefixSim)
#include "test_prefix_sim.moc"
