// The server models behind the scheduler seam on a fake
// clock: hand-built arrivals whose step-by-step decisions are known from
// the servers' own schedulers (vLLM V1, TGI's batching task, SGLang's
// prefill adder, Triton's dynamic batcher).
#include "tests/engine/books_driver.h"
#include "engine/config/config_rules.h"
#include "engine/sched/batcher.h"
#include "engine/sched/server_models/sglang_scheduler.h"
#include "engine/sched/server_models/tgi_scheduler.h"
#include "engine/sched/server_models/vllm_scheduler.h"

#include <QtTest>

#include <map>

using namespace bp;
using namespace bp::testing;
using namespace std::chrono_literals;

namespace {

BatchingConfig serverConfig(ServerKind kind)
{
    BatchingConfig c;
    c.policy = PolicyKind::Continuous;
    c.server.kind = kind;
    return c;
}

// One step as the test reads it: request id -> tokens fed.
using StepView = std::map<std::uint64_t, int>;

// The books as a server model over the hash model; a step is kept as the
// tokens each sequence fed.
struct Driver : BooksDriver {
    std::vector<StepView> steps;
    std::map<std::uint64_t, int> lastTokenOf;

    explicit Driver(const BatchingConfig &c)
    {
        const ModelLimits limits{4096, HashModel::kVocab};
        switch (c.server.kind) {
        case ServerKind::Vllm: scheduler = std::make_unique<VllmScheduler>(c, limits, model); break;
        case ServerKind::Tgi: scheduler = std::make_unique<TgiScheduler>(c, limits, model); break;
        default: scheduler = std::make_unique<SglangScheduler>(c, limits, model); break;
        }
    }
    Status submit(std::uint64_t id, int length, int maxNew)
    {
        return BooksDriver::submit(id, prompt(length, int(id)), maxNew);
    }
    // Tokens fed per step, summed, and item counts: what a test compares.
    static int tokens(const StepView &v)
    {
        int n = 0;
        for (const auto &[id, t] : v)
            n += t;
        return n;
    }
    static std::vector<int> sizes(const StepView &v)
    {
        std::vector<int> out;
        for (const auto &[id, t] : v)
            out.push_back(t);
        return out;
    }
    void verifyOutputs(const std::map<std::uint64_t, std::pair<int, int>> &requests)
    {
        for (const auto &[id, shape] : requests) {
            QVERIFY2(responses.count(id), qPrintable(QString("request %1 never completed").arg(id)));
            QVERIFY2(responses[id].status.isOk(), responses[id].status.toString().c_str());
            QCOMPARE(responses[id].tokens, HashModel::generate(prompt(shape.first, int(id)), shape.second));
        }
        QCOMPARE(model.cachedTokens(), std::int64_t(0));
    }

protected:
    void recordStep(const StepWork &step) override
    {
        StepView view;
        for (const StepItem &item : step.items)
            view[item.sequence] = int(item.tokens.size());
        steps.push_back(view);
    }
    void tokenArrived(const TokenEvent &e) override { lastTokenOf[e.requestId] = e.index; }
};

Pending pendingAt(std::uint64_t id, TimePoint arrival)
{
    Pending p;
    p.request.id = id;
    p.request.tokens = {1, 2, 3};
    p.request.arrival = arrival;
    p.done = [](Response &&) {};
    return p;
}

} // namespace

class TestServerModels : public QObject {
    Q_OBJECT
private slots:
    void vllmChunksALongPromptAcrossStepsWithinTheTokenBudget()
    {
        BatchingConfig c = serverConfig(ServerKind::Vllm);
        c.server.vllm.maxNumBatchedTokens = 16;
        Driver d(c);
        QVERIFY(d.submit(1, 4, 8).isOk());
        QVERIFY(d.stepOnce()); // 1 prefills its 4 tokens, samples its first
        QCOMPARE(Driver::tokens(d.steps.back()), 4);
        QVERIFY(d.submit(2, 40, 2).isOk());
        // Running first (1 decodes), then 2 takes the 15 tokens left of the budget.
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 15}));
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 15}));
        QVERIFY(d.stepOnce()); // the last 10 of 40, and 2's first token
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 10}));
        QCOMPARE(d.lastTokenOf[2], 0);
        d.runAll();
        d.verifyOutputs({{1, {4, 8}}, {2, {40, 2}}});
    }

    void vllmWithoutChunkedPrefillWaitsForAStepWithRoom()
    {
        BatchingConfig c = serverConfig(ServerKind::Vllm);
        c.server.vllm.maxNumBatchedTokens = 16;
        c.server.vllm.chunkedPrefill = false;
        Driver d(c);
        QCOMPARE(d.submit(9, 17, 2).code(), StatusCode::OutOfRange); // can never fit a step
        QVERIFY(d.submit(1, 10, 4).isOk());
        QVERIFY(d.submit(2, 10, 4).isOk());
        QVERIFY(d.stepOnce()); // 1 whole; 2's 10 do not fit the 6 left: FCFS, it waits
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{10}));
        QVERIFY(d.stepOnce()); // 1 decodes, 2 joins whole
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 10}));
        d.runAll();
        d.verifyOutputs({{1, {10, 4}}, {2, {10, 4}}});
    }

    void vllmPreemptsTheLastJoinedByRecomputeWhenKvBlocksRunOut()
    {
        BatchingConfig c = serverConfig(ServerKind::Vllm);
        c.server.vllm.blockSize = 4;
        c.server.vllm.kvCacheTokens = 16; // 4 blocks
        Driver d(c);
        QVERIFY(d.submit(1, 6, 6).isOk());
        QVERIFY(d.submit(2, 6, 6).isOk());
        QVERIFY(d.stepOnce()); // both prefill: 2 blocks each, all 4 used
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{6, 6}));
        QVERIFY(d.stepOnce()); // 7th token of each: still 2 blocks
        QVERIFY(d.stepOnce()); // 8th: still 2 blocks
        QCOMPARE(d.scheduler->preemptions(), std::uint64_t(0));
        QCOMPARE(d.scheduler->running(), std::size_t(2));
        // The 9th token of 1 needs a 3rd block: 2 (the last to join) is
        // preempted, its blocks freed; nobody joins in that step.
        QVERIFY(d.stepOnce());
        QCOMPARE(d.scheduler->preemptions(), std::uint64_t(1));
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1}));
        QCOMPARE(d.scheduler->waiting(), std::size_t(1));
        d.runAll();
        // 2 recomputed its prompt and output: the same tokens as without preemption.
        d.verifyOutputs({{1, {6, 6}}, {2, {6, 6}}});
    }

    void vllmCapsTheRunningSetAtMaxNumSeqs()
    {
        BatchingConfig c = serverConfig(ServerKind::Vllm);
        c.server.vllm.maxNumSeqs = 2;
        Driver d(c);
        for (std::uint64_t id = 1; id <= 3; ++id)
            QVERIFY(d.submit(id, 5, 3).isOk());
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back().size(), std::size_t(2));
        QCOMPARE(d.scheduler->waiting(), std::size_t(1));
        d.runAll();
        d.verifyOutputs({{1, {5, 3}}, {2, {5, 3}}, {3, {5, 3}}});
    }

    void tgiWaitingServedRatioHoldsPrefillsBackUntilMaxWaitingTokens()
    {
        BatchingConfig c = serverConfig(ServerKind::Tgi);
        c.server.tgi.waitingServedRatio = 1.0; // a new batch needs >= as many as run
        c.server.tgi.maxWaitingTokens = 3;
        Driver d(c);
        QVERIFY(d.submit(1, 8, 10).isOk());
        QVERIFY(d.submit(2, 8, 10).isOk());
        QVERIFY(d.stepOnce()); // the first batch: prefilled alone
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{8, 8}));
        QVERIFY(d.submit(3, 5, 4).isOk());
        // 1 waiting < floor(2 × 1.0): the running batch decodes (waiting_tokens 2, 3).
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 1}));
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 1}));
        QCOMPARE(d.scheduler->waiting(), std::size_t(1));
        // waiting_tokens reached max_waiting_tokens: 3 is prefilled alone...
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{5}));
        // ...then everyone decodes together.
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 1, 1}));
        d.runAll();
        d.verifyOutputs({{1, {8, 10}}, {2, {8, 10}}, {3, {5, 4}}});
    }

    void tgiLowRatioPrefillsAtTheNextDecision()
    {
        BatchingConfig c = serverConfig(ServerKind::Tgi);
        c.server.tgi.waitingServedRatio = 0.3; // floor(2 × 0.3) = 0: any new batch goes
        Driver d(c);
        QVERIFY(d.submit(1, 8, 10).isOk());
        QVERIFY(d.submit(2, 8, 10).isOk());
        QVERIFY(d.stepOnce());
        QVERIFY(d.submit(3, 5, 4).isOk());
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{5}));
        d.runAll();
        d.verifyOutputs({{1, {8, 10}}, {2, {8, 10}}, {3, {5, 4}}});
    }

    void tgiTokenBudgetsBoundTheBatchAndConcurrencyIsCapped()
    {
        BatchingConfig c = serverConfig(ServerKind::Tgi);
        c.server.tgi.maxBatchPrefillTokens = 20;
        c.server.tgi.maxBatchTotalTokens = 40;
        c.server.tgi.maxConcurrentRequests = 4;
        Driver d(c);
        QCOMPARE(d.submit(9, 21, 2).code(), StatusCode::OutOfRange);  // prompt > prefill budget
        QCOMPARE(d.submit(9, 10, 31).code(), StatusCode::OutOfRange); // > total budget
        for (std::uint64_t id = 1; id <= 4; ++id)
            QVERIFY(d.submit(id, 8, 6).isOk());                    // 14 tokens each reserved
        QCOMPARE(d.submit(5, 8, 6).code(), StatusCode::QueueFull); // max_concurrent_requests
        QVERIFY(d.stepOnce());                                     // prefill 8 + 8 (a third: 24 > 20)
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{8, 8}));
        // 28 of 40 held: 3 needs 14 more, over the total budget: decodes only.
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 1}));
        d.runAll();
        d.verifyOutputs({{1, {8, 6}}, {2, {8, 6}}, {3, {8, 6}}, {4, {8, 6}}});
    }

    void sglangChunksAPromptAcrossPrefillBatchesBeforeDecoding()
    {
        BatchingConfig c = serverConfig(ServerKind::Sglang);
        c.server.sglang.chunkedPrefillSize = 16;
        c.server.sglang.maxRunningRequests = 2;
        Driver d(c);
        QVERIFY(d.submit(1, 4, 6).isOk());
        QVERIFY(d.stepOnce()); // prefill 1
        QVERIFY(d.submit(2, 40, 2).isOk());
        QVERIFY(d.submit(3, 4, 2).isOk());
        // Prefill has priority: 2's prompt in chunks of 16, alone, while 1 waits.
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{16}));
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{16}));
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{8}));
        // max_running_requests 2: 3 cannot join; the two decode.
        QVERIFY(d.stepOnce());
        QCOMPARE(Driver::sizes(d.steps.back()), (std::vector<int>{1, 1}));
        QCOMPARE(d.scheduler->waiting(), std::size_t(1));
        d.runAll();
        d.verifyOutputs({{1, {4, 6}}, {2, {40, 2}}, {3, {4, 2}}});
    }

    void sglangRetractsWhenADecodeRunsOutOfKv()
    {
        BatchingConfig c = serverConfig(ServerKind::Sglang);
        c.server.sglang.maxTotalTokens = 20;
        c.server.sglang.scheduleConservativeness = 0.1; // optimistic: admits both
        Driver d(c);
        QVERIFY(d.submit(1, 4, 8).isOk());
        QVERIFY(d.submit(2, 4, 8).isOk());
        d.runAll();
        QVERIFY(d.scheduler->preemptions() > 0);
        d.verifyOutputs({{1, {4, 8}}, {2, {4, 8}}});
    }

    void tritonSendsThePreferredSizeAtOnceAndTheRestAfterTheDelay()
    {
        BatchingConfig c;
        c.policy = PolicyKind::Dynamic;
        c.maxBatchSize = 8;
        c.maxQueueDelay = 10ms;
        c.server.kind = ServerKind::Triton;
        c.server.triton.preferredBatchSize = {2, 4};
        QVERIFY(validate(c).isOk());
        const TimePoint t0{std::chrono::seconds(10)};
        Batcher b(c, ModelLimits{});
        for (std::uint64_t id = 1; id <= 5; ++id) {
            Pending p = pendingAt(id, t0);
            QVERIFY(b.admit(p, t0).isOk());
        }
        auto poll = b.poll(t0, false); // 5 queued >= 4, the largest preferred: 4 go
        QVERIFY(poll.batch());
        QCOMPARE(poll.batch()->items.size(), std::size_t(4));
        poll = b.poll(t0 + 1ms, false); // 1 left, no preferred size reached: wait
        QVERIFY(!poll.batch());
        QVERIFY(poll.wakeAt && *poll.wakeAt == t0 + 10ms);
        for (std::uint64_t id = 6; id <= 7; ++id) {
            Pending p = pendingAt(id, t0 + 2ms);
            QVERIFY(b.admit(p, t0 + 2ms).isOk());
        }
        poll = b.poll(t0 + 2ms, false); // 3 queued: preferred 2 reached, it leaves now
        QVERIFY(poll.batch());
        QCOMPARE(poll.batch()->items.size(), std::size_t(2));
        poll = b.poll(t0 + 3ms, false);
        QVERIFY(!poll.batch());
        poll = b.poll(t0 + 12ms, false); // the delay of the last one (from t0 + 2ms)
        QVERIFY(poll.batch());
        QCOMPARE(poll.batch()->items.size(), std::size_t(1));

        c.server.triton.preferredBatchSize = {9}; // beyond max_batch_size
        QCOMPARE(validate(c).code(), StatusCode::InvalidArgument);
    }

    void serverModelsRunUnderTheirOwnPolicyAndAreDescribedByTheirKnobs()
    {
        BatchingConfig c = serverConfig(ServerKind::Tgi);
        QVERIFY(validate(c).isOk());
        QVERIFY(describeConfig(c).rfind("tgi max_batch_total_tokens=16384", 0) == 0);
        c.policy = PolicyKind::Dynamic;
        QCOMPARE(validate(c).code(), StatusCode::InvalidArgument);
        c = serverConfig(ServerKind::Vllm);
        c.server.vllm.maxNumSeqs = 0;
        QCOMPARE(validate(c).code(), StatusCode::InvalidArgument);
        HashModel model;
        auto s = makeScheduler(serverConfig(ServerKind::Vllm), ModelLimits{64, 97}, &model);
        QVERIFY(dynamic_cast<VllmScheduler *>(s.get()));
        s = makeScheduler(serverConfig(ServerKind::Sglang), ModelLimits{64, 97}, &model);
        QVERIFY(dynamic_cast<SglangScheduler *>(s.get()));
    }
};

QTEST_APPLESS_MAIN(TestServerModels)
#include "test_server_models.moc"
