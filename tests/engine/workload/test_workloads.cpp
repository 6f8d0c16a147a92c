// A trace's prefix structure and conversations reach the
// engine, the simulator and a remote target. Hash ids become the same token
// ids in every replay (shared leading blocks = an identical leading token
// run, different ids = different runs); a conversation's turn k+1 is
// released exactly its think time after turn k completed (virtual clock in
// the replayer, the simulator's clock), its prompt the previous prompt
// plus answer plus its own text; Mooncake and multi-turn files import with
// their blocks, block size and conversations; the reusable-prefix share of a
// trace whose reuse is known exactly; the generator's knobs.
#include "engine/replay/replayer.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/store/trace_store.h"
#include "engine/workload/arrival_plan.h"
#include "engine/workload/prefix_tokens.h"
#include "engine/workload/traffic_pacer.h"

#include <QtTest>

#include <mutex>

using namespace bp;
using namespace std::chrono_literals;

namespace {

std::string fixture(const char *name)
{
    return std::string(TRACE_FIXTURES) + "/" + name;
}

// A remote target that answers at once and keeps every request it was sent.
class CapturingTarget final : public RemoteTarget {
public:
    std::string url() const override { return "fake://capture"; }
    nlohmann::json describe() const override { return {{"kind", "capture"}}; }
    const ModelInfo &model() const override { return m_model; }
    Status begin(std::shared_ptr<TraceSink>, TimePoint) override { return Status::ok(); }
    Status submit(Request request, Completion done) override
    {
        Response r;
        r.requestId = request.id;
        {
            std::lock_guard lock(mutex);
            sent[request.id] = request.tokens;
        }
        done(std::move(r));
        return Status::ok();
    }
    MetricSample sample(TimePoint, std::uint64_t) const override { return {}; }
    nlohmann::json finish(bool) override { return nlohmann::json::object(); }

    std::mutex mutex;
    std::map<std::uint64_t, std::vector<TokenId>> sent; // by request id (= position + 1)
    ModelInfo m_model = [] {
        ModelInfo m;
        m.name = "capture";
        m.vocabSize = 32000;
        m.maxSequenceLength = 1 << 20;
        return m;
    }();
};

std::size_t commonPrefix(const std::vector<TokenId> &a, const std::vector<TokenId> &b)
{
    std::size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n])
        ++n;
    return n;
}

struct Fixture {
    QTemporaryDir dir;
    std::shared_ptr<TraceStore> store = TraceStore::open(dir.filePath("w.sqlite").toStdString()).value();
};

struct Collector final : EngineObserver {
    std::vector<RequestRecord> requests;
    void onBatchCompleted(const BatchRecord &, std::span<const RequestRecord> rs) override
    {
        requests.insert(requests.end(), rs.begin(), rs.end());
    }
    const RequestRecord &byId(std::uint64_t id) const
    {
        for (const RequestRecord &r : requests)
            if (r.id == id)
                return r;
        throw std::runtime_error("no request " + std::to_string(id));
    }
};

} // namespace

class TestWorkloads : public QObject {
    Q_OBJECT
private slots:
    void blocksBecomeTheSameTokenIds()
    {
        std::mt19937_64 a(1), b(2);
        // Same leading hash ids, different draws elsewhere: the same leading run, exactly.
        const auto p = promptTokens({7, 8, 9}, 16, 45, 1000, a);
        const auto q = promptTokens({7, 8, 10}, 16, 40, 1000, b);
        QCOMPARE(commonPrefix(p, q), std::size_t(32));
        // A partial last block is a prefix of the whole block.
        const auto whole = blockTokenIds(9, 16, 1000);
        QVERIFY(std::equal(p.begin() + 32, p.begin() + 45, whole.begin()));
        // No hash ids: today's draw, from the caller's generator.
        std::mt19937_64 c(3), d(3);
        std::uniform_int_distribution<TokenId> token(0, 999);
        const auto plain = promptTokens({}, 16, 10, 1000, c);
        for (TokenId t : plain)
            QCOMPARE(t, token(d));
    }

    void replayedTraceSharesLeadingRunsExactly()
    {
        // Rows 0, 1, 3 share blocks 0-1; row 3 also block 2 with row 0; row 2 shares nothing.
        Fixture f;
        std::vector<TraceRow> rows = {
            {0, 1536, 4}, {0.1, 1200, 4}, {0.2, 600, 4}, {0.3, 2000, 4}, {0.4, 700, 4}};
        std::vector<PrefixBlocks> ids = {{0, 1, 2}, {0, 1, 3}, {4, 5}, {0, 1, 2, 6}, {}};
        const auto trace = f.store->addTrace("known", "", TraceFormat::Mooncake, rows, 0, ids, 512);
        QVERIFY2(trace, trace.status().toString().c_str());
        QCOMPARE(trace->blockTokens, 512);
        std::map<std::uint64_t, std::vector<TokenId>> first;
        for (std::uint64_t seed : {1u, 99u}) {
            CapturingTarget target;
            ReplayOptions o;
            o.source = {ReplaySource::Kind::Trace, trace->id};
            o.speed = 1000;
            o.seed = seed;
            Replayer replayer(f.store);
            auto out = replayer.runRemote(o, target);
            QVERIFY2(out, out.status().toString().c_str());
            const auto &s = target.sent;
            QCOMPARE(s.size(), std::size_t(5));
            QCOMPARE(commonPrefix(s.at(1), s.at(2)), std::size_t(1024));
            QCOMPARE(commonPrefix(s.at(1), s.at(4)), std::size_t(1536));
            QCOMPARE(commonPrefix(s.at(2), s.at(4)), std::size_t(1024));
            QVERIFY(commonPrefix(s.at(1), s.at(3)) < 4); // different hash ids: different runs
            QVERIFY(commonPrefix(s.at(1), s.at(5)) < 4); // no hash ids: drawn
            if (first.empty()) {
                first = s;
                continue;
            }
            // Another replay (another seed): the blocks' ids are the same, the drawn tail is not.
            QCOMPARE(commonPrefix(first.at(4), s.at(4)), std::size_t(1536 + 464));
            QVERIFY(commonPrefix(first.at(5), s.at(5)) < 4);
        }
    }

    void replayedConversationIsClosedLoopOnTheVirtualClock()
    {
        Fixture f;
        // Conversation 1: three turns (think 2 s, then 1.5 s); conversation 2: two turns; one request alone.
        std::vector<TraceRow> rows = {
            {0.0, 300, 0, 1, 1, 0},  {0.5, 200, 0, 2, 1, 0},  {0.7, 90, 0, 0, 0, 0},
            {2.0, 50, 0, 1, 2, 2.0}, {3.5, 20, 0, 1, 3, 1.5}, {4.0, 80, 0, 2, 2, 1.0},
        };
        const auto trace = f.store->addTrace("chat", "", TraceFormat::MultiTurn, rows);
        QVERIFY2(trace, trace.status().toString().c_str());
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace->id};
        o.clock = ReplayClock::Virtual;
        BatchingConfig c;
        c.policy = PolicyKind::Dynamic;
        c.maxBatchSize = 8;
        c.maxQueueDelay = 30ms; // every request waits: completion = arrival + 30 ms
        o.config = c;
        Replayer replayer(f.store, makeEchoBackend(256, 4096));
        auto out = replayer.run(o);
        QVERIFY2(out, out.status().toString().c_str());
        QCOMPARE(out->completed, std::size_t(6));
        auto rs = f.store->requests(out->sessionId).value();
        QCOMPARE(rs.size(), std::size_t(6));
        std::map<std::uint64_t, StoredRequest> byId;
        for (const StoredRequest &r : rs)
            byId[r.requestId] = r;
        auto end = [&](std::uint64_t id) { return byId[id].arrival + byId[id].total; };
        // Turn k+1 arrives exactly its think time after turn k's completion.
        QVERIFY(byId[1].total > Duration::zero());
        QCOMPARE(byId[4].arrival, end(1) + 2s);
        QCOMPARE(byId[5].arrival, end(4) + 1500ms);
        QCOMPARE(byId[6].arrival, end(2) + 1s);
        // Open loop: the independent request at its own offset.
        QCOMPARE(byId[3].arrival - byId[1].arrival, Duration(700ms));
        // The prompt grows by the context (no answer from a non-generative echo).
        QCOMPARE(byId[4].inputTokens, 300 + 50);
        QCOMPARE(byId[5].inputTokens, 350 + 20);
        QCOMPARE(byId[6].inputTokens, 200 + 80);
        QCOMPARE(byId[5].conversation, std::int64_t(1));
        QCOMPARE(byId[5].turn, 3);
        QCOMPARE(byId[3].conversation, std::int64_t(0));
    }

    void remoteConversationCarriesPromptAndAnswer()
    {
        Fixture f;
        std::vector<TraceRow> rows = {{0.0, 30, 5, 1, 1, 0}, {0.1, 7, 3, 1, 2, 0.0}};
        const auto trace = f.store->addTrace("chat", "", TraceFormat::MultiTurn, rows);
        QVERIFY(trace);
        CapturingTarget target;
        target.m_model.generative = true;
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace->id};
        Replayer replayer(f.store);
        auto out = replayer.runRemote(o, target);
        QVERIFY2(out, out.status().toString().c_str());
        const auto &first = target.sent.at(1), &second = target.sent.at(2);
        // previous prompt (30) + a stand-in of the 5-token answer (a remote answer is text) + 7 new
        QCOMPARE(second.size(), std::size_t(30 + 5 + 7));
        QCOMPARE(commonPrefix(first, second), std::size_t(30));
    }

    void simulatorReleasesTurnsAtCompletionPlusThinkTime()
    {
        SimulatorOptions o;
        o.config.policy = PolicyKind::None;
        o.config.queueCapacity = 1000;
        o.cost.coef[0] = 0.25; // every batch takes 250 ms
        Collector records;
        o.observer = &records;
        std::vector<PlannedArrival> a(4);
        a[0].offset = 0ms;
        a[0].inputTokens = 100;
        a[0].conversation = 1;
        a[0].turn = 1;
        a[0].next = 2;
        a[1].offset = 100ms; // arrives while turn 1 runs: queued behind it
        a[1].inputTokens = 10;
        a[2].offset = 10s; // ignored: released by turn 1's completion
        a[2].inputTokens = 20;
        a[2].conversation = 1;
        a[2].turn = 2;
        a[2].previous = 0;
        a[2].next = 3;
        a[2].think = 3s;
        a[3].inputTokens = 5;
        a[3].conversation = 1;
        a[3].turn = 3;
        a[3].previous = 2;
        a[3].think = 500ms;
        const SimOutcome out = Simulator(o).run(a);
        QCOMPARE(out.completed, std::size_t(4));
        const RequestRecord &t1 = records.byId(1), &t2 = records.byId(3), &t3 = records.byId(4);
        QCOMPARE(t2.arrival, t1.arrival + t1.total + 3s);
        QCOMPARE(t3.arrival, t2.arrival + t2.total + 500ms);
        QCOMPARE(t1.arrival + t1.total, o.start + 250ms);
        QCOMPARE(t2.inputTokens, 100 + 20);
        QCOMPARE(t3.inputTokens, 120 + 5);
        QCOMPARE(t3.turn, 3);
    }

    void mooncakeImportKeepsBlocksAndBlockSize()
    {
        Fixture f;
        auto r = f.store->importTrace(fixture("synthetic_trace.jsonl"));
        QVERIFY2(r, r.status().toString().c_str());
        QCOMPARE(r->trace.format, TraceFormat::Mooncake);
        QCOMPARE(r->trace.rows, std::uint64_t(4));
        QCOMPARE(r->trace.blockTokens, 512);
        const auto ids = f.store->traceHashIds(r->trace.id).value();
        QCOMPARE(ids.at(3), (PrefixBlocks{0, 1, 2, 6}));
        // Known reuse: 1024 tokens of row 2 and 1536 of row 4 are in blocks seen before.
        QCOMPARE(r->share.promptTokens, std::uint64_t(1536 + 1200 + 600 + 2000));
        QCOMPARE(r->share.reusableTokens, std::uint64_t(1024 + 1536));
        // Another block size: stored with the trace, and the rows checked against it.
        ImportOptions io;
        io.blockTokens = 600;
        auto big = f.store->importTrace(fixture("synthetic_trace.jsonl"), io);
        QVERIFY2(big, big.status().toString().c_str());
        QCOMPARE(big->trace.blockTokens, 600);
        QCOMPARE(big->trace.rows, std::uint64_t(2)); // 3 blocks of 600 for 1200 tokens, 2 for 600: bad rows
        QCOMPARE(big->errors.size(), std::size_t(2));
        QCOMPARE(big->errors[0].line, std::size_t(2));
        io.blockTokens = 0;
        auto bad = f.store->importTrace(fixture("synthetic_trace.jsonl"), io);
        QVERIFY(!bad);
        QVERIFY2(bad.status().message().find("block size") != std::string::npos,
                 bad.status().message().c_str());
    }

    void multiTurnImport()
    {
        Fixture f;
        auto r = f.store->importTrace(fixture("multi_turn.jsonl"));
        QVERIFY2(r, r.status().toString().c_str());
        QCOMPARE(r->trace.format, TraceFormat::MultiTurn);
        QCOMPARE(r->errors.size(), std::size_t(0));
        const auto rows = f.store->traceRows(r->trace.id).value();
        QCOMPARE(rows.size(), std::size_t(5));
        // chat-a = 1, chat-b = 2 (first appearance); a turn without a timestamp: previous + think.
        QCOMPARE(rows[2].conversation, std::int64_t(1));
        QCOMPARE(rows[2].turn, 2);
        QCOMPARE(rows[2].arrivalS, 2.0);
        QCOMPARE(rows[2].thinkS, 2.0);
        QCOMPARE(rows[3].arrivalS, 3.5);
        QCOMPARE(rows[4].conversation, std::int64_t(2));
        QCOMPARE(rows[4].thinkS, 1.0);
        QCOMPARE(f.store->traceHashIds(r->trace.id).value().at(0), (PrefixBlocks{100}));

        TraceParseOptions reject;
        reject.badRows = BadRowPolicy::RejectFile;
        const std::pair<const char *, const char *> bad[] = {
            {R"({"conversation_id": "x", "turn": 2, "timestamp": 0, "input_length": 5, "output_length": 1})",
             "before its turn 1"},
            {R"({"conversation_id": "x", "turn": 1, "input_length": 5, "output_length": 1})", "on turn 1"},
            {R"({"conversation_id": true, "turn": 1, "timestamp": 0, "input_length": 5, "output_length": 1})",
             "conversation_id"},
            {R"({"conversation_id": "x", "turn": 1, "timestamp": 0, "think_time_ms": -1, "input_length": 5, "output_length": 1})",
             "think_time_ms"},
        };
        for (const auto &[line, why] : bad) {
            auto t = parseTraceText(line, reject);
            QVERIFY(!t);
            QVERIFY2(t.status().message().find(why) != std::string::npos, t.status().message().c_str());
        }
        auto gap = parseTraceText(
            "{\"conversation_id\": 1, \"turn\": 1, \"timestamp\": 0, \"input_length\": 5, \"output_length\": "
            "1}\n"
            "{\"conversation_id\": 1, \"turn\": 3, \"input_length\": 5, \"output_length\": 1}\n",
            reject);
        QVERIFY(!gap);
        QVERIFY2(gap.status().message().find("follows turn 1") != std::string::npos,
                 gap.status().message().c_str());
    }

    void reusablePrefixShareIsExact()
    {
        // Hash ids: blocks of 4 tokens; row 1 reuses 2 whole blocks, row 2 a partial one (3 tokens).
        std::vector<TraceRow> rows = {{0, 12, 0}, {1, 10, 0}, {2, 3, 0}};
        std::vector<PrefixBlocks> ids = {{1, 2, 3}, {1, 2, 4}, {1}};
        const PrefixShare s = prefixShare(rows, ids, 4);
        QCOMPARE(s.promptTokens, std::uint64_t(25));
        QCOMPARE(s.reusableTokens, std::uint64_t(8 + 3));
        // Conversations: turn 2's prompt is turn 1's (10) + answer (6) + 4; turn 1's 2 whole blocks are
        // reused.
        std::vector<TraceRow> chat = {{0, 10, 6, 5, 1, 0}, {1, 4, 2, 5, 2, 1}};
        const PrefixShare c = prefixShare(chat, {}, 4);
        QCOMPARE(c.promptTokens, std::uint64_t(10 + 20));
        QCOMPARE(c.reusableTokens, std::uint64_t(8));
        // Token runs: 2 of 3 whole blocks of the second prompt are the first's.
        std::vector<std::vector<TokenId>> prompts = {{1, 2, 3, 4, 5, 6, 7, 8},
                                                     {1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9}};
        const PrefixShare t = prefixShareOfTokens(prompts, 4);
        QCOMPARE(t.promptTokens, std::uint64_t(20));
        QCOMPARE(t.reusableTokens, std::uint64_t(8));
    }

    void generatorKnobsAreValidated()
    {
        const auto invalid = [](auto change, const char *why) {
            WorkloadSpec s;
            change(s);
            const Status st = s.validate();
            QVERIFY(!st.isOk());
            QVERIFY2(st.message().find(why) != std::string::npos, st.message().c_str());
        };
        invalid([](WorkloadSpec &s) { s.systemPromptTokens = -1; }, "system prompt's length");
        invalid([](WorkloadSpec &s) { s.systemPromptShare = 1.5; }, "share");
        invalid([](WorkloadSpec &s) { s.turnsPerConversation = 3; }, "conversations > 0");
        invalid(
            [](WorkloadSpec &s) {
                s.conversations = 2;
                s.turnsPerConversation = 0;
            },
            "turns per conversation");
        invalid([](WorkloadSpec &s) { s.thinkTimeS = -1; }, "think time");
    }

    void pacerSharesTheSystemPromptAndChainsTurns()
    {
        WorkloadSpec s;
        s.arrivals = ArrivalKind::Constant;
        s.rate = 10;
        s.fixedLength = 6;
        s.maxNewTokens = 3;
        s.systemPromptTokens = 16;
        s.systemPromptShare = 1;
        s.conversations = 2;
        s.turnsPerConversation = 2;
        s.thinkTimeS = 5;
        QVERIFY(s.validate().isOk());
        TrafficPacer pacer(s);
        const TimePoint start{};
        auto a = pacer.take(start), b = pacer.take(start);
        QVERIFY(a && b);
        QCOMPARE(a->tokens.size(), std::size_t(16 + 6));
        QCOMPARE(commonPrefix(a->tokens, b->tokens), std::size_t(16)); // the shared system prompt
        QVERIFY(!pacer.take(start));                                   // turn 2 waits for an answer
        QVERIFY(!pacer.nextDue(start));
        QVERIFY(!pacer.finished());
        // Conversation a's answer completes at 1 s: its turn 2 is due at 6 s, after prompt + answer.
        const std::vector<TokenId> answer = {7, 7, 7};
        pacer.completed(a->key, start + 1s, answer);
        QCOMPARE(*pacer.nextDue(start), start + 6s);
        auto c = pacer.take(start);
        QVERIFY(c);
        QCOMPARE(c->arrival.conversation, a->arrival.conversation);
        QCOMPARE(c->arrival.turn, 2);
        QCOMPARE(c->when, start + 6s);
        QCOMPARE(c->tokens.size(), std::size_t(22 + 3 + 6));
        QCOMPARE(commonPrefix(c->tokens, a->tokens), std::size_t(22));
        QVERIFY(std::equal(answer.begin(), answer.end(), c->tokens.begin() + 22));
        pacer.completed(b->key, start + 2s, {});
        pacer.completed(c->key, start + 7s, {}); // the last turn: nothing follows
        auto d = pacer.take(start);
        QVERIFY(d);
        QCOMPARE(d->when, start + 7s);
        QCOMPARE(d->tokens.size(), std::size_t(22 + 3 + 6)); // a stand-in of the 3-token answer
        pacer.completed(d->key, start + 8s, {});
        QVERIFY(pacer.finished());

        // A context past the longest input the target takes is cut to it, the prefix kept.
        s.lengthCap = 25;
        s.conversations = 1;
        TrafficPacer capped(s);
        auto first = capped.take(start);
        QVERIFY(first);
        capped.completed(first->key, start, answer);
        auto second = capped.take(start);
        QVERIFY(second);
        QCOMPARE(second->tokens.size(), std::size_t(25));
        QCOMPARE(commonPrefix(second->tokens, first->tokens), std::size_t(22));
    }

    // One tie rule for the live pacer and a replay's plan: at equal times the
    // lower plan position first. A turn's follow-up takes its position when
    // the turn goes out, so a turn released just as the next conversation
    // starts goes before it (the pacer used to send the open-loop one first).
    void pacerBreaksTiesAsThePlanDoes()
    {
        WorkloadSpec s;
        s.arrivals = ArrivalKind::Constant;
        s.rate = 10;
        s.fixedLength = 4;
        s.maxNewTokens = 2;
        s.conversations = 2;
        s.turnsPerConversation = 2;
        s.thinkTimeS = 0;
        TrafficPacer pacer(s);
        const TimePoint start{};
        auto a = pacer.take(start);
        QVERIFY(a);
        const TimePoint second = *pacer.nextDue(start); // conversation 2 starts
        QVERIFY(second > start);
        pacer.completed(a->key, second, {}); // conversation 1's turn 2 is due then too
        auto b = pacer.take(start), c = pacer.take(start);
        QVERIFY(b && c);
        QCOMPARE(b->when, second);
        QCOMPARE(c->when, second);
        QCOMPARE(b->arrival.conversation, std::int64_t(1));
        QCOMPARE(b->arrival.turn, 2);
        QCOMPARE(c->arrival.conversation, std::int64_t(2));
        QCOMPARE(c->arrival.turn, 1);

        // The same arrivals as a replay's plan: the same order.
        std::vector<PlannedArrival> planned(3);
        planned[0].next = 1;
        planned[1].previous = 0;
        planned[2].offset = second - start;
        ArrivalPlan plan(planned, start, 256);
        auto first = plan.next();
        QVERIFY(first);
        QCOMPARE(first->index, std::size_t(0));
        plan.take(*first);
        plan.sent(0, {1, 2});
        plan.ended(0, second, {});
        auto tie = plan.next();
        QVERIFY(tie);
        QCOMPARE(tie->at, second);
        QCOMPARE(tie->index, std::size_t(1));
        plan.take(*tie);
        tie = plan.next();
        QVERIFY(tie);
        QCOMPARE(tie->index, std::size_t(2));
    }

    // A live plan forgets what its caller is done with: positions go on
    // counting and each follow-up still finds its turn and its context.
    void livePlanKeepsAWindow()
    {
        const TimePoint start{};
        ArrivalPlan plan(start, 256);
        for (int i = 0; i < 1000; ++i) {
            PlannedArrival a;
            a.offset = std::chrono::milliseconds(i);
            a.maxNewTokens = 1;
            const std::size_t position = plan.add(a);
            QCOMPARE(position, std::size_t(2 * i));
            PlannedArrival followUp;
            followUp.previous = std::ptrdiff_t(position);
            followUp.think = std::chrono::milliseconds(1);
            QCOMPARE(plan.add(followUp), position + 1);
            QCOMPARE(plan[position].next, std::ptrdiff_t(position + 1));
            const auto due = plan.next();
            QVERIFY(due);
            QCOMPARE(due->index, position);
            plan.take(*due);
            plan.sent(position, {TokenId(i)});
            plan.ended(position, start + std::chrono::milliseconds(i), {7});
            const auto turn = plan.next();
            QVERIFY(turn);
            QCOMPARE(turn->index, position + 1);
            QCOMPARE(turn->at, start + std::chrono::milliseconds(i + 1));
            plan.take(*turn);
            QCOMPARE(plan.prompt(position + 1, {9}).size(), std::size_t(3)); // turn, answer, new text
            plan.forgetBefore(position + 2);
        }
        QCOMPARE(plan.size(), std::size_t(2000));
        QVERIFY(!plan.more());
    }
};

QTEST_GUILESS_MAIN(TestWorkloads)
#include "test_workloads.moc"
