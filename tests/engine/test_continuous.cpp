// Policy `continuous` on a fake clock: the iteration-level
// scheduler driven step by step against a deterministic greedy StepModel.
#include "books_driver.h"
#include "engine/exec/engine.h"
#include "engine/model/backend.h"
#include "engine/sched/continuous_scheduler.h"
#include "engine/sched/decode_runs.h"
#include "engine/sched/outcome.h"

#include <QtTest>

#include <map>

using namespace bp;
using namespace bp::testing;
using namespace std::chrono_literals;

namespace {

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

// The books as ContinuousScheduler over the hash model, every step kept
// with the state after it (runningAfter, ...).
struct Driver : BooksDriver {
    std::vector<StepWork> steps;

    explicit Driver(const BatchingConfig &c)
    {
        scheduler = std::make_unique<ContinuousScheduler>(c, ModelLimits{4096, HashModel::kVocab}, model);
    }
    static int tokensOf(const StepWork &s) { return s.prefillTokens + s.decodeTokens; }

protected:
    void recordStep(const StepWork &step) override { steps.push_back(step); }
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

    void interTokenGapsAreTheStepGaps()
    {
        // 1 decodes at one token per 1 ms step; 2's long prompt joins and is
        // prefilled in chunks beside 1's decodes (decode first), so 1's gaps
        // stay 1 ms. Each gap is the time between two of its token events.
        Driver d(continuousConfig(4, 64, true, 8, 0));
        QVERIFY(d.submit(1, prompt(4, 1), 10).isOk());
        QVERIFY(d.stepOnce());
        QVERIFY(d.stepOnce());
        QVERIFY(d.submit(2, prompt(24, 2), 3).isOk());
        d.runAll();
        for (std::uint64_t id : {1, 2}) {
            const Response &r = d.responses[id];
            QVERIFY(r.status.isOk());
            const std::vector<TokenEvent> &ev = d.events[id];
            QCOMPARE(r.timing.interTokenLatencies.size(), r.tokens.size() - 1);
            Duration sum{};
            for (std::size_t k = 1; k < ev.size(); ++k) {
                QCOMPARE(r.timing.interTokenLatencies[k - 1], ev[k].at - ev[k - 1].at);
                sum += r.timing.interTokenLatencies[k - 1];
            }
            QCOMPARE(r.timing.timePerOutputToken, sum / std::int64_t(r.tokens.size() - 1));
            // completed with its last token: arrival = last event - total
            const TimePoint arrival = ev.back().at - r.timing.total;
            QCOMPARE(r.timing.timeToFirstToken, ev.front().at - arrival);
        }
        QCOMPARE(d.responses[1].timing.interTokenLatencies, std::vector<Duration>(9, 1ms));
        // the record carries the measured gaps, not copies of the mean
        const RequestRecord rec = completedRecord(Request{}, d.responses[2], 1);
        QCOMPARE(rec.interTokenLatencies, d.responses[2].timing.interTokenLatencies);
        QCOMPARE(rec.timePerOutputToken, d.responses[2].timing.timePerOutputToken);
    }

    void preemptedSequenceShowsItsStallInTheGaps()
    {
        Driver d(continuousConfig(4, 64, true, 8, /*kv=*/40));
        for (std::uint64_t id = 1; id <= 4; ++id)
            QVERIFY(d.submit(id, prompt(8, int(id)), 16).isOk());
        d.runAll();
        int preempted = 0;
        for (const StepWork &s : d.steps)
            preempted += s.preempted;
        QCOMPARE(std::uint64_t(preempted), d.scheduler->preemptions()); // every one reported by a step
        QVERIFY(preempted > 0);
        Duration longest{};
        for (std::uint64_t id = 1; id <= 4; ++id) {
            const Response &r = d.responses[id];
            QCOMPARE(r.timing.interTokenLatencies.size(), std::size_t(15));
            Duration sum{};
            for (Duration g : r.timing.interTokenLatencies) {
                sum += g;
                longest = std::max(longest, g);
            }
            QCOMPARE(sum, d.events[id].back().at - d.events[id].front().at);
        }
        QVERIFY(longest > 1ms); // a preempted sequence waited out steps between two tokens
    }

    void stepStateAfterEachStep()
    {
        Driver d(continuousConfig(2, 64, true, 8, 0));
        for (std::uint64_t id = 1; id <= 3; ++id)
            QVERIFY(d.submit(id, prompt(4, int(id)), 3).isOk());
        while (d.scheduler->size() > 0) {
            QVERIFY(d.stepOnce());
            const StepWork &s = d.steps.back();
            QCOMPARE(std::size_t(s.runningAfter), d.scheduler->running());
            QCOMPARE(std::size_t(s.waitingAfter), d.scheduler->waiting());
            QCOMPARE(s.kvTokensAfter, d.scheduler->kvTokens());
            const BatchRecord br = stepRecordOf(s, UnitRun{});
            QCOMPARE(br.prefillTokens, s.prefillTokens);
            QCOMPARE(br.decodeTokens, s.decodeTokens);
            QCOMPARE(br.joined, s.joined);
            QCOMPARE(br.running, s.runningAfter);
            QCOMPARE(br.waiting, s.waitingAfter);
            QCOMPARE(br.kvTokens, s.kvTokensAfter);
            QCOMPARE(br.preempted, s.preempted);
        }
        QCOMPARE(d.steps.front().runningAfter, 2);
        QCOMPARE(d.steps.front().waitingAfter, 1);
        QCOMPARE(d.steps.front().kvTokensAfter, std::int64_t(8));
        QCOMPARE(d.steps.back().runningAfter, 0);
        const IterationGauges g = d.scheduler->iterationGauges();
        QCOMPARE(g.running, std::size_t(0));
        QCOMPARE(g.kvTokens, std::int64_t(0));
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
        QVERIFY(e.update(
            ConfigPatch::fields(c, {"policy", "continuous.max_num_seqs", "continuous.max_num_batched_tokens"})
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

    // The snapshot's iteration-level gauges and token figures through the
    // Engine: running/waiting/KV mid-run, step and preemption counters under
    // a small KV budget, TPOT/ITL and goodput against the goodput SLO.
    void engineSnapshotHasGaugesAndTokenFigures()
    {
        FakeClock clock;
        auto backend = std::make_shared<HashBackend>(true);
        backend->model.stepClock = &clock; // each step takes 1 ms
        EngineOptions o;
        o.backend = backend;
        o.clock = &clock;
        o.manualScheduling = true;
        o.probeMemory = false;
        o.batching = continuousConfig(3, 64, true, 8, /*kv=*/40);
        o.batching.goodput.tpot = 1ms; // met only without a stall: every gap 1 ms
        auto engine = Engine::create(o);
        QVERIFY(engine.isOk());
        Engine &e = **engine;
        std::map<std::uint64_t, Response> got;
        for (std::uint64_t id = 1; id <= 5; ++id) {
            Request r;
            r.id = id;
            r.tokens = prompt(8, int(id));
            r.maxNewTokens = 12;
            QVERIFY(
                e.submit(std::move(r), [&got, id](Response &&resp) { got[id] = std::move(resp); }).isOk());
        }
        QVERIFY(e.runSchedulerOnce().dispatched);
        QVERIFY(e.runSchedulerOnce().dispatched);
        Snapshot s = e.snapshot();
        QCOMPARE(s.runningSequences, std::size_t(3)); // max_num_seqs
        QCOMPARE(s.waitingSequences, std::size_t(2));
        QCOMPARE(s.kvTokens, backend->model.cachedTokens());
        QVERIFY(s.kvTokens > 0);
        QCOMPARE(s.kvCapacityTokens, std::int64_t(40));
        QCOMPARE(s.kvUsageRatio, double(s.kvTokens) / 40.0);
        QCOMPARE(s.steps, std::uint64_t(2));
        QCOMPARE(s.stepTokens, std::uint64_t(24 + 3)); // 3 prompts, then 3 decodes
        QCOMPARE(s.tokensPerStep, 13.5);

        for (int i = 0; i < 500 && got.size() < 5; ++i)
            QVERIFY(e.runSchedulerOnce().dispatched);
        QCOMPARE(got.size(), std::size_t(5));
        s = e.snapshot();
        QCOMPARE(s.runningSequences, std::size_t(0));
        QCOMPARE(s.kvTokens, std::int64_t(0));
        QVERIFY(s.preemptions > 0); // 3 × (8 + 12) tokens do not fit 40
        std::uint64_t preempted = 0, stepTokens = 0;
        for (const BatchRecord &b : s.recentBatches) {
            preempted += std::uint64_t(b.preempted);
            stepTokens += std::uint64_t(b.prefillTokens + b.decodeTokens);
            QVERIFY(b.kvTokens <= 40);
            QVERIFY(b.running <= 3);
        }
        QCOMPARE(s.recentBatches.size(), std::size_t(s.steps));
        QCOMPARE(preempted, s.preemptions);
        QCOMPARE(stepTokens, s.stepTokens);
        QCOMPARE(s.timePerOutputTokenAll.count, std::uint64_t(5));
        QCOMPARE(s.interTokenLatencyAll.count, std::uint64_t(5 * 11));
        QCOMPARE(s.ttftHist.count(), std::uint64_t(5));
        // good = TPOT within 1 ms, i.e. no stall at all
        std::uint64_t good = 0;
        for (const auto &[id, r] : got) {
            QVERIFY(r.status.isOk());
            const bool noStall = r.timing.interTokenLatencies == std::vector<Duration>(11, 1ms);
            QCOMPARE(r.timing.timePerOutputToken <= 1ms, noStall);
            good += noStall ? 1 : 0;
        }
        QCOMPARE(s.goodCompleted, good);
        QVERIFY(good < 5); // the preempted ones missed it

        // Under a request-level policy the gauges are zero.
        QVERIFY(e.update(ConfigPatch::fields(BatchingConfig{}, {"policy"}).value(), "test"));
        s = e.snapshot();
        QCOMPARE(s.runningSequences, std::size_t(0));
        QCOMPARE(s.kvCapacityTokens, std::int64_t(0));
        QCOMPARE(s.kvUsageRatio, 0.0);
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
        auto update =
            (*engine)->update(ConfigPatch::fields(continuousConfig(4, 16), {"policy"}).value(), "test");
        QVERIFY(!update.isOk());
        QCOMPARE((*engine)->config().policy, PolicyKind::Dynamic);
    }

    // Decode runs are the simulator's, beside the Scheduler seam
    // (sched/decode_runs.h): BatchPilot's continuous policy offers them; a
    // request-level policy and the server models' decisions do not.
    void decodeRunsAreBesideTheSeam()
    {
        HashModel model;
        BatchingConfig c = continuousConfig(4, 16);
        QVERIFY(dynamic_cast<DecodeRunSource *>(makeScheduler(c, ModelLimits{}, &model).get()));
        for (ServerKind server :
             {ServerKind::Vllm, ServerKind::Tgi, ServerKind::Sglang, ServerKind::LlamaCpp}) {
            c.server.kind = server;
            QVERIFY(!dynamic_cast<DecodeRunSource *>(makeScheduler(c, ModelLimits{}, &model).get()));
        }
        c = continuousConfig(4, 16);
        c.policy = PolicyKind::Dynamic;
        QVERIFY(!dynamic_cast<DecodeRunSource *>(makeScheduler(c, ModelLimits{}, &model).get()));
    }

    // kv_cache_tokens lowered live below what a waiting
    // request needs. The front of the queue can never join; it must fail
    // with the reason, and the request behind it must be served (before the
    // fix both waited forever: waiting 2, running 0).
    void kvLoweredLiveFailsWhatCanNeverFitAndServesTheRest()
    {
        Driver d(continuousConfig(1, 512, true, 128, /*kv=*/300));
        QVERIFY(d.submit(1, prompt(100, 1), 20).isOk()); // runs
        QVERIFY(d.stepOnce());
        QVERIFY(d.submit(2, prompt(100, 2), 20).isOk()); // waits behind it (max_num_seqs 1)
        QVERIFY(d.stepOnce());
        QCOMPARE(d.scheduler->running(), std::size_t(1));
        QCOMPARE(d.scheduler->waiting(), std::size_t(1));
        d.scheduler->reconfigure(continuousConfig(1, 512, true, 128, /*kv=*/60), 2);
        QVERIFY(d.submit(3, prompt(4, 3), 4).isOk()); // fits the new budget
        d.runAll();
        QCOMPARE(d.scheduler->size(), std::size_t(0));
        for (std::uint64_t id : {1, 2}) {
            QVERIFY(d.responses.count(id));
            const Status &st = d.responses[id].status;
            QCOMPARE(st.code(), StatusCode::OutOfRange);
            QVERIFY2(st.message().find("needs 120 KV-cache tokens") != std::string::npos,
                     st.message().c_str());
            QVERIFY2(st.message().find("kv_cache_tokens is now 60") != std::string::npos,
                     st.message().c_str());
        }
        QVERIFY(d.responses[3].status.isOk());
        QCOMPARE(d.responses[3].tokens, HashModel::generate(prompt(4, 3), 4));
        QCOMPARE(d.model.cachedTokens(), std::int64_t(0));
    }

    // The same through the Engine, as it was found: a live PUT of
    // kv_cache_tokens while one request ran and another waited.
    void engineServesAfterKvBudgetIsLoweredLive()
    {
        FakeClock clock;
        auto backend = std::make_shared<HashBackend>(true);
        backend->model.stepClock = &clock;
        EngineOptions o;
        o.backend = backend;
        o.clock = &clock;
        o.manualScheduling = true;
        o.probeMemory = false;
        o.batching = continuousConfig(1, 512, true, 128, /*kv=*/300);
        std::map<std::uint64_t, Response> got; // outlives the engine: its shutdown completes what is left
        auto engine = Engine::create(o);
        QVERIFY(engine.isOk());
        Engine &e = **engine;
        auto submit = [&](std::uint64_t id, int length, int maxNew) {
            Request r;
            r.id = id;
            r.tokens = prompt(length, int(id));
            r.maxNewTokens = maxNew;
            return e.submit(std::move(r), [&got, id](Response &&resp) { got[id] = std::move(resp); });
        };
        QVERIFY(submit(1, 100, 30).isOk());
        QVERIFY(e.runSchedulerOnce().dispatched);
        QVERIFY(submit(2, 100, 30).isOk());
        QVERIFY(e.runSchedulerOnce().dispatched);
        BatchingConfig lowered = o.batching;
        lowered.continuous.kvCacheTokens = 60;
        QVERIFY(e.update(ConfigPatch::fields(lowered, {"continuous.kv_cache_tokens"}).value(), "test"));
        QVERIFY(submit(3, 4, 4).isOk());
        for (int i = 0; i < 100 && got.size() < 3; ++i)
            e.runSchedulerOnce();
        QCOMPARE(got.size(), std::size_t(3));
        QCOMPARE(got[1].status.code(), StatusCode::OutOfRange);
        QCOMPARE(got[2].status.code(), StatusCode::OutOfRange);
        QVERIFY2(got[3].status.isOk(), got[3].status.toString().c_str());
        QCOMPARE(got[3].tokens, HashModel::generate(prompt(4, 3), 4));
        const Snapshot s = e.snapshot();
        QCOMPARE(s.waitingSequences, std::size_t(0));
        QCOMPARE(s.runningSequences, std::size_t(0));
    }

    // With prefills first, a sequence preempted to make KV
    // room for the running decodes must not rejoin in the same decision
    // (taking that room back, then being preempted again at the next step).
    void preemptedSequenceDoesNotRejoinInTheSameDecision_data()
    {
        QTest::addColumn<bool>("decodeFirst");
        QTest::newRow("prefills first") << false;
        QTest::newRow("decodes first") << true;
    }
    void preemptedSequenceDoesNotRejoinInTheSameDecision()
    {
        QFETCH(bool, decodeFirst);
        BatchingConfig c = continuousConfig(4, 256, true, 256, /*kv=*/44);
        c.continuous.decodeFirst = decodeFirst;
        Driver d(c);
        for (std::uint64_t id = 1; id <= 3; ++id)
            QVERIFY(d.submit(id, prompt(8, int(id)), 16).isOk());
        d.runAll();
        QVERIFY(d.scheduler->preemptions() > 0);
        for (const StepWork &s : d.steps) {
            QVERIFY2(s.preempted == 0 || s.joined == 0,
                     qPrintable(QStringLiteral("step %1 preempted %2 and joined %3")
                                    .arg(s.id)
                                    .arg(s.preempted)
                                    .arg(s.joined)));
            // every sequence that stayed running decoded in that step
            if (s.preempted > 0)
                QCOMPARE(s.decodeTokens, int(s.items.size()));
        }
        for (std::uint64_t id = 1; id <= 3; ++id) {
            QVERIFY(d.responses[id].status.isOk());
            QCOMPARE(d.responses[id].tokens, HashModel::generate(prompt(8, int(id)), 16));
        }
    }
};

QTEST_APPLESS_MAIN(TestContinuous)
#include "test_continuous.moc"
