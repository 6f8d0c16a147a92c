// The KV prefix cache: the cache object on a fake
// clock (references, LRU eviction), and the continuous scheduler with it on
// builtin:echo's StepModel (identical outputs with the cache on and off, a
// hand-built trace's exact hit rate, a preempted sequence that loses its
// blocks, a live block-size change), and the figures through the Engine
// (snapshot, RequestRecord.cachedTokens).
#include "engine/exec/engine.h"
#include "engine/model/backend.h"
#include "engine/sched/prefix_cache.h"
#include "tests/engine/prefix_driver.h"

#include <QtTest>

using namespace bp;
using namespace bp::testing;
using namespace std::chrono_literals;

namespace {

constexpr int kVocab = 256;

std::vector<TokenId> seq(int length, int seed)
{
    std::vector<TokenId> t;
    for (int i = 0; i < length; ++i)
        t.push_back(TokenId((seed * 31 + i * 7 + 3) % 251));
    return t;
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId> &b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// The reference: builtin:echo's Backend::run, one request alone.
std::vector<TokenId> reference(Backend &echo, const std::vector<TokenId> &prompt, int maxNew)
{
    Request r;
    r.tokens = prompt;
    r.maxNewTokens = maxNew;
    BatchInput in;
    in.requests = {&r};
    in.paddedLength = int(prompt.size());
    std::vector<SequenceResult> out(1);
    if (!echo.run(in, out))
        return {};
    return out[0].tokens;
}

} // namespace

class TestPrefixCache : public QObject {
    Q_OBJECT
private slots:
    // References and LRU eviction on a fake clock: a block in use is never
    // evicted; unreferenced ones go least recently released first, a chain
    // tail first.
    void referencesAndLruEvictionOnAFakeClock()
    {
        FakeClock clock;
        PrefixCache cache(2);
        const std::vector<TokenId> a = {1, 2, 3, 4}, b = {1, 2, 5, 6};
        const std::uint64_t a0 = PrefixCache::blockHash(0, std::span(a).subspan(0, 2));
        const std::uint64_t a1 = PrefixCache::blockHash(a0, std::span(a).subspan(2, 2));
        const std::uint64_t b1 = PrefixCache::blockHash(a0, std::span(b).subspan(2, 2));
        QVERIFY(a1 != b1 && a0 != a1);
        QCOMPARE(PrefixCache::blockHash(0, std::span(b).subspan(0, 2)), a0); // same tokens, same parent

        QVERIFY(cache.insert(a0, 0, std::span(a).subspan(0, 2), clock.now()) == PrefixCache::Inserted::New);
        QVERIFY(cache.insert(a1, a0, std::span(a).subspan(2, 2), clock.now()) == PrefixCache::Inserted::New);
        clock.advance(1ms);
        // b starts from a's first block
        const PrefixCache::Match m = cache.lookup(b, 2);
        QCOMPARE(m.blocks, std::vector<std::uint64_t>{a0});
        QCOMPARE(m.unreferenced, 0);
        cache.acquire(m.blocks, clock.now());
        QVERIFY(cache.insert(b1, a0, std::span(b).subspan(2, 2), clock.now()) == PrefixCache::Inserted::New);
        QCOMPARE(cache.references(a0), 2);
        QCOMPARE(cache.tokens(), std::int64_t(6));
        QVERIFY(!cache.evictOne()); // everything in use

        clock.advance(1ms);
        const TimePoint t2 = clock.now();
        cache.release({a0, a1}, t2); // a ends
        QCOMPARE(cache.references(a0), 1);
        QCOMPARE(cache.unreferencedBlocks(), std::size_t(1));
        QCOMPARE(*cache.lastUsed(a1), t2);
        QCOMPARE(cache.lookup(a, 2).unreferenced, 1);
        clock.advance(1ms);
        const TimePoint t3 = clock.now();
        cache.release({a0, b1}, t3); // b ends: its tail before its head
        QCOMPARE(*cache.lastUsed(a0), t3);
        QCOMPARE(cache.unreferencedTokens(), std::int64_t(6));

        QCOMPARE(*cache.evictOne(), a1); // released first
        QCOMPARE(cache.lookup(a, 2).blocks.size(), std::size_t(1));
        QCOMPARE(*cache.evictOne(), b1); // b's tail before the shared head
        QCOMPARE(cache.lookup(b, 2).blocks, std::vector<std::uint64_t>{a0});
        // re-acquired: no longer evictable
        cache.acquire({a0}, clock.now());
        QVERIFY(!cache.evictOne());
        cache.release({a0}, clock.now());
        QCOMPARE(*cache.evictOne(), a0);
        QVERIFY(!cache.evictOne());
        QCOMPARE(cache.blocks(), std::size_t(0));
        QCOMPARE(cache.evictions(), std::uint64_t(3));
        // a collision (the same hash, other tokens) is refused, not shared
        QVERIFY(cache.insert(a0, 0, std::span(a).subspan(0, 2), clock.now()) == PrefixCache::Inserted::New);
        QVERIFY(cache.insert(a0, 0, std::span(b).subspan(2, 2), clock.now()) ==
                PrefixCache::Inserted::Collision);
        QVERIFY(cache.insert(a0, 0, std::span(a).subspan(0, 2), clock.now()) ==
                PrefixCache::Inserted::Existing);
        QCOMPARE(cache.references(a0), 2);
    }

    // The same requests with the cache on and off: token for token the same
    // answers; with it on the shared system prompt is prefilled once.
    void identicalOutputsWithTheCacheOnAndOff()
    {
        const std::vector<TokenId> system = seq(40, 1);
        std::map<bool, std::map<std::uint64_t, Response>> got;
        std::map<bool, std::int64_t> prefill;
        for (bool on : {false, true}) {
            auto echo = makeEchoBackend(kVocab, 4096);
            PrefixDriver d(prefixConfig(on, 8, 0, 3, 48, 16), echo->info().limits(), *echo->steps());
            for (std::uint64_t id = 1; id <= 8; ++id)
                QVERIFY(d.submit(id, concat(system, seq(int(3 + id), int(id) + 10)), int(2 + id % 4)).isOk());
            d.runAll();
            QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
            QCOMPARE(d.responses.size(), std::size_t(8));
            got[on] = d.responses;
            prefill[on] = d.prefillTokens();
            for (std::uint64_t id = 1; id <= 8; ++id)
                QCOMPARE(d.responses[id].tokens,
                         reference(*echo, concat(system, seq(int(3 + id), int(id) + 10)), int(2 + id % 4)));
        }
        for (std::uint64_t id = 1; id <= 8; ++id) {
            QVERIFY(got[false][id].status.isOk() && got[true][id].status.isOk());
            QCOMPARE(got[true][id].tokens, got[false][id].tokens);
            QCOMPARE(got[false][id].cachedTokens, 0);
        }
        // the first three join together (nothing cached yet); the other five
        // start from the system prompt's 5 whole blocks
        QVERIFY2(prefill[true] <= prefill[false] - 5 * 40, qPrintable(QString::number(prefill[true])));
        int served = 0;
        for (std::uint64_t id = 1; id <= 8; ++id)
            served += got[true][id].cachedTokens;
        QCOMPARE(served, 5 * 40);
    }

    // A hand-built trace whose reuse is known exactly (one sequence at a
    // time, block 4): every hit and query, per request and in total.
    void hitRateOfAHandBuiltTrace()
    {
        auto echo = makeEchoBackend(kVocab, 4096);
        PrefixDriver d(prefixConfig(true, 4, 0, /*seqs=*/1), echo->info().limits(), *echo->steps());
        const std::vector<TokenId> s = seq(16, 2);
        const std::vector<TokenId> r1 = concat(s, seq(3, 5)); // nothing cached: 0 of 19
        const std::vector<TokenId> r2 = concat(s, seq(3, 6)); // S's 4 blocks: 16 of 19
        const std::vector<TokenId> r3 = concat(std::vector<TokenId>(s.begin(), s.begin() + 9), seq(10, 7));
        const std::vector<TokenId> r4 = r1;        // 4 blocks; never the last token: 16 of 19
        const std::vector<TokenId> r5 = seq(4, 9); // 4 tokens: at most 3 could match, 0
        struct Want {
            std::vector<TokenId> prompt;
            int cached;
        };
        const std::vector<Want> trace = {{r1, 0}, {r2, 16}, {r3, 8}, {r4, 16}, {r5, 0}};
        std::int64_t queries = 0, hits = 0;
        for (std::size_t i = 0; i < trace.size(); ++i) {
            QVERIFY(d.submit(i + 1, trace[i].prompt, 2).isOk());
            queries += std::int64_t(trace[i].prompt.size());
            hits += trace[i].cached;
        }
        d.runAll();
        QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
        for (std::size_t i = 0; i < trace.size(); ++i) {
            QCOMPARE(d.responses[i + 1].cachedTokens, trace[i].cached);
            QCOMPARE(d.responses[i + 1].tokens, reference(*echo, trace[i].prompt, 2));
        }
        QCOMPARE(d.queries(), queries); // 19 + 19 + 19 + 19 + 4
        QCOMPARE(d.hits(), hits);       // 0 + 16 + 8 + 16 + 0 = 40 of 80
        QCOMPARE(double(d.hits()) / double(d.queries()), 0.5);
    }

    // A small KV budget: the second sequence is preempted, its blocks lose
    // their last reference and are evicted for the first one's room; it
    // rejoins, finds less (or nothing) cached, recomputes, and its answer is
    // the reference's token for token.
    void preemptedSequenceThatLosesItsBlocksIsRecomputed()
    {
        auto echo = makeEchoBackend(kVocab, 4096);
        PrefixDriver d(prefixConfig(true, 4, /*kv=*/48, 2, 64, 16), echo->info().limits(), *echo->steps());
        const std::vector<TokenId> p1 = seq(20, 3), p2 = seq(20, 4);
        QVERIFY(d.submit(1, p1, 24).isOk());
        QVERIFY(d.submit(2, p2, 24).isOk());
        d.runAll();
        QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
        QCOMPARE(d.responses[1].tokens, reference(*echo, p1, 24));
        QCOMPARE(d.responses[2].tokens, reference(*echo, p2, 24));
        int preempted = 0;
        for (const StepWork &s : d.steps)
            preempted += s.preempted;
        QVERIFY(preempted > 0);
        QVERIFY(d.scheduler->prefixCache()->evictions() > 0);
        // the rejoin looked its context up again: more queries than prompts
        QVERIFY(d.queries() > 40);
        // it lost blocks: it did not get its whole context back from the cache
        QVERIFY(d.hits() < d.queries() - 40);
        QCOMPARE(d.responses[2].cachedTokens, 0); // its first join found nothing
    }

    // A live block-size change drops the cache at the next decision; the
    // new size caches from then on. Turning it off drops it too.
    void liveBlockSizeChangeDropsTheCache()
    {
        auto echo = makeEchoBackend(kVocab, 4096);
        BatchingConfig c = prefixConfig(true, 4, 0, 1);
        PrefixDriver d(c, echo->info().limits(), *echo->steps());
        const std::vector<TokenId> s = seq(24, 8);
        QVERIFY(d.submit(1, concat(s, {1}), 1).isOk());
        d.runAll();
        QCOMPARE(d.scheduler->prefixCache()->blockTokens(), 4);
        QVERIFY(d.scheduler->prefixCache()->blocks() >= 6);
        c.prefixCache.blockTokens = 8;
        d.scheduler->reconfigure(c, 2);
        QVERIFY(d.submit(2, concat(s, {2}), 1).isOk());
        d.runAll();
        QCOMPARE(d.responses[2].cachedTokens, 0); // hashed at the old size: dropped
        QCOMPARE(d.scheduler->prefixCache()->blockTokens(), 8);
        QVERIFY(d.submit(3, concat(s, {3}), 1).isOk());
        d.runAll();
        QCOMPARE(d.responses[3].cachedTokens, 24);
        QCOMPARE(d.responses[3].tokens, reference(*echo, concat(s, {3}), 1));
        c.prefixCache.enabled = false;
        d.scheduler->reconfigure(c, 3);
        QVERIFY(d.submit(4, concat(s, {4}), 1).isOk());
        d.runAll();
        QVERIFY(d.scheduler->prefixCache() == nullptr);
        QCOMPARE(d.responses[4].cachedTokens, 0);
        QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
    }

    // Through the Engine: the snapshot's queries, hits and hit rates, the
    // KV gauge with the cached blocks, and each request's cachedTokens in
    // its RequestRecord.
    void engineCountsQueriesHitsAndCachedTokens()
    {
        struct Records final : EngineObserver {
            std::map<std::uint64_t, RequestRecord> requests;
            void onBatchCompleted(const BatchRecord &, std::span<const RequestRecord> rs) override
            {
                for (const RequestRecord &r : rs)
                    requests[r.id] = r;
            }
        };
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend(kVocab, 4096);
        o.clock = &clock;
        o.manualScheduling = true;
        o.probeMemory = false;
        o.batching = prefixConfig(true, 4, 0, 1);
        auto engine = Engine::create(o);
        QVERIFY(engine.isOk());
        Engine &e = **engine;
        auto records = std::make_shared<Records>();
        e.addObserver(records);
        std::map<std::uint64_t, Response> got;
        const std::vector<TokenId> s = seq(16, 2);
        for (std::uint64_t id = 1; id <= 3; ++id) {
            Request r;
            r.id = id;
            r.tokens = concat(s, seq(3, int(id) + 20));
            r.maxNewTokens = 2;
            QVERIFY(
                e.submit(std::move(r), [&got, id](Response &&resp) { got[id] = std::move(resp); }).isOk());
        }
        for (int i = 0; i < 100 && got.size() < 3; ++i) {
            e.runSchedulerOnce();
            clock.advance(1ms);
        }
        QCOMPARE(got.size(), std::size_t(3));
        const Snapshot snap = e.snapshot();
        QCOMPARE(snap.prefixCacheQueriesTokens, std::uint64_t(3 * 19));
        QCOMPARE(snap.prefixCacheHitsTokens, std::uint64_t(2 * 16));
        QCOMPARE(snap.prefixCacheHitRateAll, 32.0 / 57.0);
        QCOMPARE(snap.prefixCacheHitRate, 32.0 / 57.0); // all within the window
        QVERIFY(snap.prefixCacheTokens >= 16);
        QCOMPARE(snap.kvTokens, snap.prefixCacheTokens); // nothing running: only cached blocks
        QCOMPARE(records->requests[1].cachedTokens, 0);
        QCOMPARE(records->requests[2].cachedTokens, 16);
        QCOMPARE(records->requests[3].cachedTokens, 16);
    }
};

QTEST_GUILESS_MAIN(TestPrefixCache)
#include "test_prefix_cache.moc"
