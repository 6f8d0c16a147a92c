// Policy `continuous` (issue 14 item 2) on a fake clock: the iteration-level
// scheduler driven step by step against a deterministic greedy StepModel.
#include "engine/backend.h"
#include "engine/continuous_scheduler.h"
#include "engine/engine.h"

#include <QtTest>

#include <map>

using namespace bp;
using namespace std::chrono_literals;

namespace {

// A deterministic greedy "model": the next token is a hash of the whole
// context, so any mistake in what the scheduler feeds (a lost, repeated or
// reordered token, a prefill that skips a recomputed token) changes every
// later token. Keeps each live sequence's context as its "KV cache".
class HashModel final : public StepModel {
public:
    static constexpr int kVocab = 97;
    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override
    {
        out.assign(items.size(), {});
        for (std::size_t i = 0; i < items.size(); ++i) {
            std::vector<TokenId> &ctx = m_live[items[i].sequence];
            ctx.insert(ctx.end(), items[i].tokens.begin(), items[i].tokens.end());
            if (items[i].sample)
                out[i].next = next(ctx);
        }
        return Status::ok();
    }
    void release(std::uint64_t sequence) override { m_live.erase(sequence); }
    std::int64_t cachedTokens() const override
    {
        std::int64_t n = 0;
        for (const auto &[id, ctx] : m_live)
            n += std::int64_t(ctx.size());
        return n;
    }
    // One-at-a-time greedy generation, the reference.
    static std::vector<TokenId> generate(std::vector<TokenId> ctx, int n)
    {
        std::vector<TokenId> out;
        for (int i = 0; i < n; ++i) {
            out.push_back(next(ctx));
            ctx.push_back(out.back());
        }
        return out;
    }

private:
    static TokenId next(const std::vector<TokenId> &ctx)
    {
        std::uint64_t h = 1469598103934665603ULL;
        for (TokenId t : ctx)
            h = (h ^ std::uint64_t(t)) * 1099511628211ULL;
        return TokenId(h % kVocab);
    }
    std::map<std::uint64_t, std::vector<TokenId>> m_live;
};

// The same model as a Backend: run() generates one request at a time
// (the reference), steps() gives the step-level interface.
class HashBackend final : public Backend {
public:
    HashBackend(bool withSteps) : m_withSteps(withSteps)
    {
        m_info.name = withSteps ? "test:hash" : "test:hash-without-steps";
        m_info.vocabSize = HashModel::kVocab;
        m_info.maxSequenceLength = 4096;
        m_info.generative = true;
        m_info.maxNewTokensLimit = 1024;
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        for (std::size_t i = 0; i < input.requests.size(); ++i)
            out[i].tokens = HashModel::generate(input.requests[i]->tokens, input.requests[i]->maxNewTokens);
        return Status::ok();
    }
    StepModel *steps() override { return m_withSteps ? &model : nullptr; }
    HashModel model;

private:
    ModelInfo m_info;
    bool m_withSteps;
};

BatchingConfig continuousConfig(int seqs, int budget, bool chunked = true, int chunk = 8, int kv = 0)
{
    BatchingConfig c;
    c.policy = PolicyKind::Continuous;
    c.continuous.maxNumSeqs = seqs;
    c.continuous.maxNumBatchedTokens = budget;
    c.continuous.chunkedPrefill = chunked;
    c.continuous.prefillChunk = chunk;
    c.continuous.kvCacheTokens = kv;
    return c;
}

std::vector<TokenId> prompt(int length, int seed)
{
    std::vector<TokenId> t;
    for (int i = 0; i < length; ++i)
        t.push_back(TokenId((seed * 7 + i * 3) % HashModel::kVocab));
    return t;
}

// Drives a scheduler like the engine's executor: poll, run the step on the
// model, advance the clock, hand the outcome back, complete.
struct Driver {
    FakeClock clock;
    HashModel model;
    std::unique_ptr<ContinuousScheduler> scheduler;
    std::map<std::uint64_t, Response> responses;
    std::map<std::uint64_t, std::vector<TokenEvent>> events;
    std::vector<StepWork> steps;

    explicit Driver(const BatchingConfig &c)
        : scheduler(std::make_unique<ContinuousScheduler>(c, ModelLimits{4096, HashModel::kVocab}, model))
    {
    }
    Status submit(std::uint64_t id, std::vector<TokenId> tokens, int maxNew,
                  std::shared_ptr<std::atomic<bool>> cancelled = nullptr)
    {
        Pending p;
        p.request.id = id;
        p.request.tokens = std::move(tokens);
        p.request.maxNewTokens = maxNew;
        p.request.arrival = clock.now();
        p.request.cancelled = std::move(cancelled);
        p.request.onToken = [this](const TokenEvent &e) {
            QVERIFY(!responses.count(e.requestId)); // every token before the completion
            events[e.requestId].push_back(e);
        };
        p.done = [this, id](Response &&r) { responses[id] = std::move(r); };
        return scheduler->admit(p, clock.now());
    }
    // One decision and its step; false when there was no step to run.
    bool stepOnce()
    {
        Scheduler::Poll poll = scheduler->poll(clock.now(), false);
        for (auto &f : poll.failed) {
            Response r;
            r.requestId = f.pending.request.id;
            r.status = f.status;
            f.pending.done(std::move(r));
        }
        if (!poll.step)
            return false;
        steps.push_back(*poll.step);
        std::vector<StepOutcome> out;
        const Status status = model.step(poll.step->items, out);
        clock.advance(1ms);
        StepDone done;
        scheduler->finished(*poll.step, status, out, clock.now(), done);
        for (std::size_t i = 0; i < done.done.size(); ++i)
            done.done[i].done(std::move(done.responses[i]));
        // the scheduler's KV books match the model's
        if (scheduler->kvTokens() != model.cachedTokens())
            qFatal("kv books %lld vs model %lld", (long long)scheduler->kvTokens(),
                   (long long)model.cachedTokens());
        return true;
    }
    void runAll(int maxSteps = 10000)
    {
        for (int i = 0; i < maxSteps && scheduler->size() > 0; ++i)
            if (!stepOnce())
                break;
    }
    static int tokensOf(const StepWork &s) { return s.prefillTokens + s.decodeTokens; }
};

} // namespace

class TestContinuous : public QObject {
    Q_OBJECT
private slots:
    void outputsEqualOneAtATimeGeneration()
    {
        Driver d(continuousConfig(4, 32));
        for (std::uint64_t id = 1; id <= 6; ++id)
            QVERIFY(d.submit(id, prompt(int(3 + id * 5), int(id)), int(2 + id)).isOk());
        d.runAll();
        QCOMPARE(d.responses.size(), std::size_t(6));
        for (std::uint64_t id = 1; id <= 6; ++id) {
            const Response &r = d.responses[id];
            QVERIFY2(r.status.isOk(), r.status.toString().c_str());
            QCOMPARE(r.tokens, HashModel::generate(prompt(int(3 + id * 5), int(id)), int(2 + id)));
            QCOMPARE(d.events[id].size(), r.tokens.size());
            for (std::size_t k = 0; k < r.tokens.size(); ++k) {
                QCOMPARE(d.events[id][k].token, r.tokens[k]);
                QCOMPARE(d.events[id][k].index, int(k));
            }
            QVERIFY(r.timing.timeToFirstToken > Duration::zero());
            if (r.tokens.size() > 1)
                QVERIFY(r.timing.timePerOutputToken > Duration::zero());
        }
        QCOMPARE(d.model.cachedTokens(), std::int64_t(0)); // every sequence released
    }

    void finishedSlotGoesToAWaitingRequestAtTheNextStep()
    {
        Driver d(continuousConfig(2, 64));
        QVERIFY(d.submit(1, prompt(4, 1), 2).isOk());
        QVERIFY(d.submit(2, prompt(4, 2), 6).isOk());
        QVERIFY(d.submit(3, prompt(4, 3), 3).isOk());
        QVERIFY(d.stepOnce()); // 1 and 2 prefill (and sample their first token)
        QCOMPARE(d.steps.back().joined, 2);
        QCOMPARE(d.scheduler->waiting(), std::size_t(1));
        QVERIFY(d.stepOnce()); // 1's second token: it is done
        QVERIFY(d.responses.count(1));
        QVERIFY(!d.responses.count(3));
        QVERIFY(d.stepOnce()); // the very next step: 3 joins beside 2's decode
        QCOMPARE(d.steps.back().joined, 1);
        QCOMPARE(d.steps.back().prefillTokens, 4);
        QCOMPARE(d.steps.back().decodeTokens, 1);
        d.runAll();
        QCOMPARE(d.responses.size(), std::size_t(3));
    }

    void tokenBudgetAndRunningSetAreNeverExceeded_data()
    {
        QTest::addColumn<bool>("chunked");
        QTest::addColumn<bool>("decodeFirst");
        QTest::newRow("chunked, decode first") << true << true;
        QTest::newRow("chunked, prefill first") << true << false;
        QTest::newRow("whole prefill, decode first") << false << true;
        QTest::newRow("whole prefill, prefill first") << false << false;
    }
    void tokenBudgetAndRunningSetAreNeverExceeded()
    {
        QFETCH(bool, chunked);
        QFETCH(bool, decodeFirst);
        BatchingConfig c = continuousConfig(3, 20, chunked, 6);
        c.continuous.decodeFirst = decodeFirst;
        Driver d(c);
        for (std::uint64_t id = 1; id <= 12; ++id)
            QVERIFY(d.submit(id, prompt(int(1 + (id * 7) % 19), int(id)), int(1 + (id * 5) % 9)).isOk());
        d.runAll();
        QCOMPARE(d.responses.size(), std::size_t(12));
        for (const StepWork &s : d.steps) {
            QVERIFY2(Driver::tokensOf(s) <= 20, qPrintable(QString::number(Driver::tokensOf(s))));
            QVERIFY(s.items.size() <= 3);
        }
        for (std::uint64_t id = 1; id <= 12; ++id)
            QCOMPARE(d.responses[id].tokens,
                     HashModel::generate(prompt(int(1 + (id * 7) % 19), int(id)), int(1 + (id * 5) % 9)));
    }

    void chunkedPrefillSpreadsALongPromptWhileDecodesRun()
    {
        Driver d(continuousConfig(4, 10, true, 8));
        QVERIFY(d.submit(1, prompt(3, 1), 30).isOk());
        QVERIFY(d.stepOnce()); // 1 prefilled; decoding from now on
        QVERIFY(d.submit(2, prompt(40, 2), 2).isOk());
        int prefillSteps = 0;
        while (!d.responses.count(2) || !d.responses.count(1)) {
            QVERIFY(d.stepOnce());
            const StepWork &s = d.steps.back();
            QVERIFY(Driver::tokensOf(s) <= 10);
            if (s.prefillTokens > 0) {
                ++prefillSteps;
                QVERIFY(s.prefillTokens <= 8);
                QCOMPARE(s.decodeTokens, 1); // 1 kept decoding in every step of 2's prefill
            }
        }
        QCOMPARE(prefillSteps, 5); // 40 tokens in chunks of 8
        QCOMPARE(d.responses[2].tokens, HashModel::generate(prompt(40, 2), 2));
        QCOMPARE(d.responses[1].tokens, HashModel::generate(prompt(3, 1), 30));
    }

    void preemptionUnderASmallKvBudgetKeepsOutputs()
    {
        Driver small(continuousConfig(4, 64, true, 8, /*kv=*/40));
        Driver ample(continuousConfig(4, 64, true, 8, /*kv=*/0));
        for (Driver *d : {&small, &ample})
            for (std::uint64_t id = 1; id <= 4; ++id)
                QVERIFY(d->submit(id, prompt(8, int(id)), 16).isOk());
        small.runAll();
        ample.runAll();
        QVERIFY(small.scheduler->preemptions() > 0);
        QCOMPARE(ample.scheduler->preemptions(), std::uint64_t(0));
        for (std::uint64_t id = 1; id <= 4; ++id) {
            QVERIFY(small.responses[id].status.isOk());
            QCOMPARE(small.responses[id].tokens, ample.responses[id].tokens);
            QCOMPARE(small.events[id].size(), std::size_t(16)); // no token reported twice
        }
        for (const StepWork &s : small.steps)
            QVERIFY(Driver::tokensOf(s) <= 64);
    }

    void liveChangesLoseNothing()
    {
        Driver d(continuousConfig(4, 32));
        for (std::uint64_t id = 1; id <= 8; ++id)
            QVERIFY(d.submit(id, prompt(int(5 + id), int(id)), 12).isOk());
        for (int i = 0; i < 3; ++i)
            QVERIFY(d.stepOnce());
        d.scheduler->reconfigure(continuousConfig(1, 3), 2); // fewer seqs, tiny budget, mid-generation
        for (int i = 0; i < 10; ++i) {
            QVERIFY(d.stepOnce());
            QVERIFY(Driver::tokensOf(d.steps.back()) <= 3);
        }
        d.scheduler->reconfigure(continuousConfig(6, 64, false), 3);
        d.runAll();
        QCOMPARE(d.responses.size(), std::size_t(8));
        for (std::uint64_t id = 1; id <= 8; ++id)
            QCOMPARE(d.responses[id].tokens, HashModel::generate(prompt(int(5 + id), int(id)), 12));
    }

    void cancelledRequestIsFreedAtTheNextStep()
    {
        Driver d(continuousConfig(4, 32));
        auto flag = std::make_shared<std::atomic<bool>>(false);
        QVERIFY(d.submit(1, prompt(6, 1), 50, flag).isOk());
        QVERIFY(d.submit(2, prompt(6, 2), 5).isOk());
        QVERIFY(d.stepOnce());
        QVERIFY(d.stepOnce());
        QVERIFY(d.model.cachedTokens() > 12);
        flag->store(true);
        QVERIFY(d.stepOnce());
        QCOMPARE(d.responses[1].status.code(), StatusCode::Cancelled);
        QCOMPARE(d.steps.back().items.size(), std::size_t(1)); // only 2 ran
        d.runAll();
        QVERIFY(d.responses[2].status.isOk());
        QCOMPARE(d.model.cachedTokens(), std::int64_t(0));
    }

    void admissionRefusesWhatCanNeverRun()
    {
        Driver d(continuousConfig(4, 16, false, 8, 32));
        QCOMPARE(d.submit(1, prompt(4, 1), 0).code(), StatusCode::InvalidArgument); // nothing to generate
        QCOMPARE(d.submit(2, prompt(20, 1), 4).code(), StatusCode::OutOfRange);     // whole prefill > budget
        QCOMPARE(d.submit(3, prompt(10, 1), 30).code(), StatusCode::OutOfRange);    // > kv_cache_tokens
        QVERIFY(d.submit(4, prompt(10, 1), 4).isOk());
    }

    void priorityOrderJoinsHigherFirst()
    {
        BatchingConfig c = continuousConfig(1, 64);
        c.continuous.priorityOrder = true;
        Driver d(c);
        QVERIFY(d.submit(1, prompt(4, 1), 2).isOk());
        QVERIFY(d.stepOnce()); // 1 runs
        Pending low, high;
        for (auto [p, id, prio] : {std::tuple{&low, 2, 0}, std::tuple{&high, 3, 5}}) {
            p->request.id = std::uint64_t(id);
            p->request.tokens = prompt(4, id);
            p->request.maxNewTokens = 1;
            p->request.priority = prio;
            p->request.arrival = d.clock.now();
            p->done = [&d, id](Response &&r) { d.responses[std::uint64_t(id)] = std::move(r); };
            QVERIFY(d.scheduler->admit(*p, d.clock.now()).isOk());
        }
        d.runAll();
        QVERIFY(d.responses[3].timing.total < d.responses[2].timing.total);
    }

    // Through the Engine (manual scheduling, fake clock): the seam runs
    // steps like batches; live changes and a policy switch lose nothing.
    void engineRunsContinuousThroughTheSeam()
    {
        FakeClock clock;
        auto backend = std::make_shared<HashBackend>(true);
        EngineOptions o;
        o.backend = backend;
        o.clock = &clock;
        o.manualScheduling = true;
        o.probeMemory = false;
        o.batching.policy = PolicyKind::Dynamic;
        o.batching.maxQueueDelay = 1ms;
        auto engine = Engine::create(o);
        QVERIFY(engine.isOk());
        Engine &e = **engine;
        std::map<std::uint64_t, Response> got;
        std::map<std::uint64_t, int> tokens;
        auto submit = [&](std::uint64_t id, int length, int maxNew) {
            Request r;
            r.id = id;
            r.tokens = prompt(length, int(id));
            r.maxNewTokens = maxNew;
            r.onToken = [&tokens](const TokenEvent &ev) { ++tokens[ev.requestId]; };
            return e.submit(std::move(r), [&got, id](Response &&resp) { got[id] = std::move(resp); });
        };
        for (std::uint64_t id = 1; id <= 4; ++id)
            QVERIFY(submit(id, 10 + int(id), 6).isOk());
        // queued under dynamic, switched to continuous: the queue moves over
        BatchingConfig c = continuousConfig(2, 16);
        QVERIFY(e.update(ConfigPatch::fields(c, {"policy", "continuous.max_num_seqs",
                                                 "continuous.max_num_batched_tokens"})
                             .value(),
                         "test"));
        QCOMPARE(e.queueDepth(), std::size_t(4));
        for (int i = 0; i < 3; ++i)
            QVERIFY(e.runSchedulerOnce().dispatched);
        c.continuous.maxNumSeqs = 4; // live, mid-generation
        QVERIFY(e.update(ConfigPatch::fields(c, {"continuous.max_num_seqs"}).value(), "test"));
        for (int i = 0; i < 200 && got.size() < 4; ++i)
            QVERIFY(e.runSchedulerOnce().dispatched);
        QCOMPARE(got.size(), std::size_t(4));
        for (std::uint64_t id = 1; id <= 4; ++id) {
            QVERIFY2(got[id].status.isOk(), got[id].status.toString().c_str());
            QCOMPARE(got[id].tokens, HashModel::generate(prompt(10 + int(id), int(id)), 6));
            QCOMPARE(tokens[id], 6);
        }
        QCOMPARE(backend->model.cachedTokens(), std::int64_t(0));
        const Snapshot s = e.snapshot();
        QCOMPARE(s.completed, std::uint64_t(4));
    }

    void continuousNeedsAStepModel()
    {
        EngineOptions o;
        o.backend = std::make_shared<HashBackend>(false);
        o.manualScheduling = true;
        o.batching = continuousConfig(4, 16);
        auto refused = Engine::create(o);
        QVERIFY(!refused.isOk());
        QVERIFY(refused.status().message().find("test:hash-without-steps") != std::string::npos);
        o.batching.policy = PolicyKind::Dynamic;
        auto engine = Engine::create(o);
        QVERIFY(engine.isOk());
        auto update = (*engine)->update(ConfigPatch::fields(continuousConfig(4, 16), {"policy"}).value(), "test");
        QVERIFY(!update.isOk());
        QCOMPARE((*engine)->config().policy, PolicyKind::Dynamic);
    }
};

QTEST_APPLESS_MAIN(TestContinuous)
#include "test_continuous.moc"
