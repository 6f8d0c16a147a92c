// llama.cpp's llama-server as a server kind: its scheduler model
// (engine/sched/server_models/llamacpp_scheduler.h) on a fake clock with the
// hash model, its /metrics series, its /props settings and its launch flags.
#include "engine/config/config_rules.h"
#include "engine/config/server_command.h"
#include "engine/sched/server_models/llamacpp_scheduler.h"
#include "engine/sim/calibration/llamacpp_settings.h"
#include "engine/sim/calibration/remote_calibration.h"
#include "engine/sim/simulation/cost_backend.h"
#include "engine/telemetry/target_metrics.h"
#include "tests/engine/books_driver.h"
#include "tests/engine/probe_requests.h"

#include <QtTest>

#include <map>

using namespace bp;
using namespace bp::testing;

namespace {

BatchingConfig llamaConfig(int slotCount, int ctx, int batch, bool unified = false)
{
    BatchingConfig c;
    c.policy = PolicyKind::Continuous;
    c.server.kind = ServerKind::LlamaCpp;
    c.server.llamacpp.nParallel = slotCount;
    c.server.llamacpp.nCtx = ctx;
    c.server.llamacpp.nBatch = batch;
    c.server.llamacpp.nUbatch = std::min(batch, 512);
    c.server.llamacpp.kvUnified = unified;
    return c;
}

// One step as the test reads it: tokens fed per sequence, in feed order,
// and its forward passes (the distinct StepItem::passes indices).
struct Driver : BooksDriver {
    std::vector<std::vector<int>> steps;
    std::vector<int> passCounts;
    std::vector<StepItem> lastItems;
    explicit Driver(const BatchingConfig &c)
    {
        scheduler = std::make_unique<LlamaCppScheduler>(c, ModelLimits{4096, HashModel::kVocab}, model);
    }
    Status submit(std::uint64_t id, int length, int maxNew)
    {
        return BooksDriver::submit(id, prompt(length, int(id)), maxNew);
    }

protected:
    void recordStep(const StepWork &step) override
    {
        std::vector<int> sizes;
        int passes = 0;
        for (const StepItem &item : step.items) {
            sizes.push_back(int(item.tokens.size()));
            for (const StepItem::PassPiece &p : item.passes)
                passes = std::max(passes, p.pass + 1);
        }
        steps.push_back(sizes);
        passCounts.push_back(passes);
        lastItems = step.items;
    }
};

prom::Exposition scrape(double prompt, double predicted, double decodes, double processing, double deferred)
{
    const std::string text = "llamacpp:prompt_tokens_total " + std::to_string(prompt) +
                             "\nllamacpp:tokens_predicted_total " + std::to_string(predicted) +
                             "\nllamacpp:n_decode_total " + std::to_string(decodes) +
                             "\nllamacpp:requests_processing " + std::to_string(processing) +
                             "\nllamacpp:requests_deferred " + std::to_string(deferred) + "\n";
    auto e = prom::parse(text);
    if (!e)
        qFatal("%s", e.status().message().c_str());
    return *e;
}

} // namespace

class TestLlamaCppModel : public QObject {
    Q_OBJECT
private slots:
    void slotsCapTheRunningAndTheRestAreDeferred()
    {
        Driver d(llamaConfig(2, 1024, 2048));
        for (std::uint64_t id = 1; id <= 3; ++id)
            QVERIFY(d.submit(id, 8, 4).isOk());
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{8, 8})); // two slots, the third deferred
        QCOMPARE(d.scheduler->running(), std::size_t(2));
        QCOMPARE(d.scheduler->waiting(), std::size_t(1));
        for (int i = 0; i < 3; ++i)
            QVERIFY(d.stepOnce()); // 4 tokens each: the first with the prompt, 3 decodes
        QVERIFY(d.responses.count(1) && d.responses.count(2) && !d.responses.count(3));
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{8})); // a slot freed: 3 starts
        d.runAll();
        QVERIFY(d.responses[3].status.isOk());
    }

    void generatingTokensFirstThenPromptsUpToNBatch()
    {
        Driver d(llamaConfig(4, 4096, 16));
        QVERIFY(d.submit(1, 4, 8).isOk());
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{4}));
        QVERIFY(d.submit(2, 40, 2).isOk());
        QVERIFY(d.stepOnce()); // 1's token, then 15 of 2's prompt: n_batch 16
        QCOMPARE(d.steps.back(), (std::vector<int>{1, 15}));
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{1, 15}));
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{1, 10}));
        d.runAll();
        QCOMPARE(d.responses[2].tokens, HashModel::generate(prompt(40, 2), 2));
    }

    void aSlotsContextRefusesLongPromptsAndTruncatesGenerations()
    {
        Driver d(llamaConfig(2, 512, 2048)); // 256 tokens a slot
        QCOMPARE(LlamaCppScheduler::slotContext(llamaConfig(2, 512, 2048).server.llamacpp),
                 std::int64_t(256));
        // llama_context's rounding: n_ctx and each slot's share up to multiples
        // of 256 (-c 4096 -np 14: slots of 512, as the real server's log says)
        QCOMPARE(LlamaCppScheduler::slotContext(llamaConfig(14, 4096, 2048).server.llamacpp),
                 std::int64_t(512));
        QCOMPARE(LlamaCppScheduler::slotContext(llamaConfig(1, 1000, 2048).server.llamacpp),
                 std::int64_t(1024));
        const Status refused = d.submit(1, 256, 4);
        // the server's HTTP 400, and this config's refusal (not the model's)
        QCOMPARE(refused.code(), StatusCode::InvalidArgument);
        QVERIFY(QString::fromStdString(refused.message()).contains("exceeds the available context size"));
        QVERIFY(d.submit(2, 200, 100).isOk());
        d.runAll();
        QVERIFY(d.responses[2].status.isOk());
        QCOMPARE(int(d.responses[2].tokens.size()), 256 - 200 - 1); // stopped when the context filled
        // A unified KV cache gives each slot all of n_ctx.
        Driver u(llamaConfig(2, 256, 2048, true));
        QVERIFY(u.submit(3, 200, 2).isOk());
        QVERIFY(u.submit(4, 200, 2).isOk());
        QVERIFY(u.stepOnce());
        QCOMPARE(u.steps.back(), (std::vector<int>{200, 56})); // the shared 256 tokens of KV
    }

    void sharedPromptPrefixesAreNotComputedAgain()
    {
        BatchingConfig c = llamaConfig(2, 4096, 2048);
        c.prefixCache.enabled = true;
        c.prefixCache.blockTokens = 16;
        auto echo = makeEchoBackend(HashModel::kVocab, 4096);
        StepModel *steps = echo->steps();
        QVERIFY(steps && steps->cachesPrefixes());
        LlamaCppScheduler books(c, ModelLimits{4096, HashModel::kVocab}, *steps);
        FakeClock clock;
        std::map<std::uint64_t, Response> responses;
        std::vector<TokenId> first = prompt(64, 1), second = first;
        second.resize(48);
        for (int i = 0; i < 20; ++i)
            second.push_back(TokenId(i + 1));
        Pending a = pendingFor(1, first, 2, clock.now(), responses);
        QVERIFY(books.admit(a, clock.now()).isOk());
        while (!responses.count(1))
            QVERIFY(executorStep(books, *steps, clock));
        Pending b = pendingFor(2, second, 2, clock.now(), responses);
        QVERIFY(books.admit(b, clock.now()).isOk());
        const auto step = executorStep(books, *steps, clock);
        QVERIFY(step);
        QCOMPARE(step->items.size(), std::size_t(1));
        QCOMPARE(int(step->items[0].tokens.size()), 68 - 48); // 3 blocks of 16 cached
        QCOMPARE(step->prefixHitTokens, std::int64_t(48));
    }

    // llama_decode's ubatches (src/llama-batch.cpp split_equal, sequential,
    // with a KV cache per slot; split_simple with one cache).
    void aTurnSplitsIntoUbatchesAsLlamaDecodeDoes()
    {
        using E = LlamaCppScheduler::BatchEntry;
        using P = StepItem::PassPiece;
        const auto pieces = [](const std::vector<std::vector<P>> &v) {
            std::vector<std::vector<std::pair<int, std::int64_t>>> out;
            for (const auto &item : v) {
                out.emplace_back();
                for (const P &p : item)
                    out.back().emplace_back(p.pass, p.tokens);
            }
            return out;
        };
        using Pieces = std::vector<std::vector<std::pair<int, std::int64_t>>>;
        // Decodes of slots 0, 1, 2: consecutive, one pass.
        QCOMPARE(pieces(LlamaCppScheduler::passes({E{0, 1}, E{1, 1}, E{2, 1}}, 512, true)),
                 (Pieces{{{0, 1}}, {{0, 1}}, {{0, 1}}}));
        // Decodes of slots 0 and 2: two passes.
        QCOMPARE(pieces(LlamaCppScheduler::passes({E{0, 1}, E{2, 1}}, 512, true)),
                 (Pieces{{{0, 1}}, {{1, 1}}}));
        // A prompt of 40 in slot 2 beside decodes of 0 and 1: one token in
        // their pass, the rest in its own.
        QCOMPARE(pieces(LlamaCppScheduler::passes({E{0, 1}, E{1, 1}, E{2, 40}}, 512, true)),
                 (Pieces{{{0, 1}}, {{0, 1}}, {{0, 1}, {1, 39}}}));
        // A prompt longer than n_ubatch alone: passes of n_ubatch.
        QCOMPARE(pieces(LlamaCppScheduler::passes({E{3, 1100}}, 512, true)),
                 (Pieces{{{0, 512}, {1, 512}, {2, 76}}}));
        // Two prompts in slots 1 and 2: equal tokens from each, the
        // shorter's length, then the longer's rest.
        QCOMPARE(pieces(LlamaCppScheduler::passes({E{1, 10}, E{2, 30}}, 512, true)),
                 (Pieces{{{0, 10}}, {{0, 10}, {1, 20}}}));
        // One cache (kv_unified, or one slot): every n_ubatch tokens.
        QCOMPARE(pieces(LlamaCppScheduler::passes({E{0, 1}, E{2, 1}, E{3, 600}}, 512, false)),
                 (Pieces{{{0, 1}}, {{0, 1}}, {{0, 510}, {1, 90}}}));
    }

    // Slots go least recently released first (ties: the highest id), so
    // which decodes share a pass follows the server's own slot choice.
    void slotsAreTakenLeastRecentlyReleasedAndDecodesSplitBySlot()
    {
        Driver d(llamaConfig(4, 4096, 2048));
        QVERIFY(d.submit(1, 8, 20).isOk()); // slot 3
        QVERIFY(d.submit(2, 8, 2).isOk());  // slot 2
        QVERIFY(d.submit(3, 8, 20).isOk()); // slot 1
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{8, 8, 8}));
        QCOMPARE(d.passCounts.back(), 1); // slots 1, 2, 3: one pass, 8 tokens each
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{1, 1, 1}));
        QCOMPARE(d.passCounts.back(), 1);
        QVERIFY(d.responses.count(2)); // slot 2 released
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{1, 1}));
        QCOMPARE(d.passCounts.back(), 2); // slots 1 and 3
        // A new prompt takes slot 0 (never used), not slot 2: decodes of 1
        // and 3, then its prompt, are three passes.
        QVERIFY(d.submit(4, 8, 2).isOk());
        QVERIFY(d.stepOnce());
        QCOMPARE(d.steps.back(), (std::vector<int>{1, 1, 8}));
        QCOMPARE(d.passCounts.back(), 3);
        // With one KV cache the same turn is one pass.
        Driver u(llamaConfig(4, 4096, 2048, true));
        for (std::uint64_t id = 1; id <= 3; ++id)
            QVERIFY(u.submit(id, 8, id == 2 ? 2 : 20).isOk());
        for (int i = 0; i < 3; ++i)
            QVERIFY(u.stepOnce());
        QVERIFY(u.submit(4, 8, 2).isOk());
        QVERIFY(u.stepOnce());
        QCOMPARE(u.passCounts.back(), 1);
    }

    // A pass attends to its largest slot's KV view padded to 256 cells
    // (llama_kv_cache::get_n_kv), and the probe's rows count the same.
    void aPassReadsItsKvViewPaddedTo256Cells()
    {
        const auto cells = [](const StepItem &item) {
            std::vector<std::int64_t> out;
            for (const StepItem::PassPiece &p : item.passes)
                out.push_back(p.kvCells);
            return out;
        };
        Driver d(llamaConfig(4, 4096, 2048)); // a cache of 1,024 a slot
        QVERIFY(d.submit(1, 300, 4).isOk());
        QVERIFY(d.stepOnce());
        QCOMPARE(cells(d.lastItems[0]), (std::vector<std::int64_t>{512}));
        // Slot 2 comes after slot 3 in the batch (decodes first): not
        // sequential, so the prompt is a pass of its own, with its own view.
        QVERIFY(d.submit(2, 8, 4).isOk());
        QVERIFY(d.stepOnce());
        QCOMPARE(d.passCounts.back(), 2);
        QCOMPARE(cells(d.lastItems[0]), (std::vector<std::int64_t>{512})); // the decode at 301
        QCOMPARE(cells(d.lastItems[1]), (std::vector<std::int64_t>{256}));
        // One cache: every running sequence's cells.
        Driver u(llamaConfig(2, 4096, 2048, true));
        QVERIFY(u.submit(1, 200, 4).isOk());
        QVERIFY(u.submit(2, 100, 4).isOk());
        QVERIFY(u.stepOnce());
        QCOMPARE(cells(u.lastItems[0]), (std::vector<std::int64_t>{512}));
        // The probe's rows: a 300-token prompt's 300 tokens read 512 cells.
        QCOMPARE(prefillTerms(300, 512, 256)[4], 300.0 * 512);
        QCOMPARE(prefillTerms(300, 512, 0)[4], 300.0 * 300);
        QCOMPARE(kvCellsOf(40, 256), 256.0);
        QCOMPARE(kvCellsOf(257, 256), 512.0);
    }

    // When a task starts, llama-server saves the KV of the idle slots that
    // finished since the last start into its RAM prompt cache, on the loop's
    // thread: the turn that starts it copies their cells (once per content),
    // the cost backend charges them as decode context, and the probe's rows
    // that hold a start count them as the model does.
    void aTaskStartSavesTheIdleSlotsOnce()
    {
        Driver d(llamaConfig(4, 4096, 2048));
        QVERIFY(d.submit(1, 100, 3).isOk());
        QVERIFY(d.submit(2, 40, 1).isOk());
        QVERIFY(d.stepOnce()); // both prompts; 2 ends with its first token
        QCOMPARE(d.lastItems.front().copiedCells, std::int64_t(0)); // nothing idle held anything
        QVERIFY(d.responses.count(2));
        QVERIFY(d.stepOnce()); // 1 decodes: no task starts, nothing saved
        QCOMPARE(d.lastItems.front().copiedCells, std::int64_t(0));
        QVERIFY(d.submit(3, 8, 2).isOk());
        QVERIFY(d.stepOnce()); // 3 starts: 2's slot (its 40 prompt tokens) is saved
        std::int64_t copied = 0;
        for (const StepItem &item : d.lastItems)
            copied += item.copiedCells;
        QCOMPARE(copied, std::int64_t(40));
        while (!d.responses.count(1))
            QVERIFY(d.stepOnce());
        QVERIFY(d.submit(4, 8, 2).isOk());
        QVERIFY(d.stepOnce()); // 4 starts: 1's slot (100 + 2 fed tokens); 2's is saved already
        copied = 0;
        for (const StepItem &item : d.lastItems)
            copied += item.copiedCells;
        QCOMPARE(copied, std::int64_t(102));

        // The cost backend: the copied cells' own term (s8).
        CostModel cost;
        cost.generative = true;
        cost.coef[CostModel::kIterationStart] = 1e-3;     // s0
        cost.coef[CostModel::kIterationStart + 3] = 1e-6; // s3
        cost.coef[CostModel::kIterationStart + 7] = 4e-6; // s7
        cost.coef[CostModel::kIterationStart + 8] = 8e-6; // s8
        VirtualClock clock(TimePoint{});
        NoiseDraws noise(CostNoise::None, 1);
        CostBackend backend(cost, clock, noise, ModelLimits{4096, 256}, OutputKind::Generated, 4096);
        StepItem a{.sequence = 1, .tokens = std::vector<TokenId>(1, 1)};
        a.copiedCells = 1000;
        std::vector<StepOutcome> out;
        QVERIFY(backend.step({a}, out).isOk()); // a 1-token prompt: attention 1, no decode
        QVERIFY(std::abs(toSeconds(clock.now() - TimePoint{}) - (1e-3 + 1e-6 * 1 + 8e-6 * 1000)) < 1e-12);

        // The probe's rows: a prompt sent after two requests ended counts
        // their contexts (prompt + tokens fed after it) once.
        const auto request = [](double sent, double first, double end, int prompt, int out) {
            return answered("prefill", 1, false, prompt, sent, first, end, out);
        };
        const std::vector<ProbeRequest> probe = {request(0, 0.1, 0.5, 300, 5), request(1, 1.1, 1.2, 16, 1),
                                                 request(2, 2.1, 2.2, 16, 1)};
        QCOMPARE(savedAtStart(probe), (std::vector<double>{0, 304, 16}));
        const auto plain = probeObservations(probe, 512, true, 8, false, 256, false);
        const auto saving = probeObservations(probe, 512, true, 8, false, 256, true);
        QCOMPARE(saving.size(), plain.size());
        QCOMPARE(saving[1].terms[6], 304.0);
        QCOMPARE(plain[1].terms[6], 0.0);
        QCOMPARE(saving[1].terms[4], plain[1].terms[4]);
        QCOMPARE(saving[0].terms, plain[0].terms);
    }

    // The simulator's cost backend charges each pass as an iteration: the
    // per-step term once per pass.
    void theCostBackendChargesEachPass()
    {
        CostModel cost;
        cost.generative = true;
        cost.coef[CostModel::kIterationStart] = 1e-3;     // s0: a pass
        cost.coef[CostModel::kIterationStart + 2] = 1e-4; // s2: a token
        VirtualClock clock(TimePoint{});
        NoiseDraws noise(CostNoise::None, 1);
        CostBackend backend(cost, clock, noise, ModelLimits{4096, 256}, OutputKind::Generated, 4096);
        const auto charged = [&](std::vector<StepItem> items) {
            const TimePoint before = clock.now();
            std::vector<StepOutcome> out;
            [&] { QVERIFY(backend.step(items, out).isOk()); }();
            return toSeconds(clock.now() - before);
        };
        StepItem a{.sequence = 1, .tokens = std::vector<TokenId>(10, 1)};
        StepItem b{.sequence = 2, .tokens = std::vector<TokenId>(10, 1)};
        QVERIFY(std::abs(charged({a, b}) - (1e-3 + 20e-4)) < 1e-12); // one pass
        StepItem c{.sequence = 3, .tokens = std::vector<TokenId>(10, 1)};
        StepItem e{.sequence = 4, .tokens = std::vector<TokenId>(10, 1)};
        c.passes = {{0, 4}, {1, 6}};
        e.passes = {{2, 10}};
        QVERIFY(std::abs(charged({c, e}) - (3e-3 + 20e-4)) < 1e-12); // three passes
    }

    // A pass's attention on the KV view the server model gives it, or (a
    // calibration that found the server's kernel skips masked cells:
    // CostModel::attentionOnKvView false) on the item's own context.
    void theCostBackendPricesAttentionOnTheViewOrTheContext()
    {
        for (const bool onView : {true, false}) {
            CostModel cost;
            cost.generative = true;
            cost.coef[CostModel::kIterationStart + 3] = 1e-6; // s3: a token x the cells it attends to
            cost.attentionOnKvView = onView;
            VirtualClock clock(TimePoint{});
            NoiseDraws noise(CostNoise::None, 1);
            CostBackend backend(cost, clock, noise, ModelLimits{4096, 256}, OutputKind::Generated, 4096);
            StepItem a{.sequence = 1, .tokens = std::vector<TokenId>(40, 1)};
            a.passes = {{0, 40, 256}}; // 40 prompt tokens in a view of 256 cells
            std::vector<StepOutcome> out;
            QVERIFY(backend.step({a}, out).isOk());
            const double attended = onView ? 40.0 * 256 : 40.0 * 40;
            const double charged = toSeconds(clock.now() - TimePoint{}); // whole nanoseconds
            QVERIFY2(std::abs(charged - 1e-6 * attended) < 1e-9,
                     qPrintable(QString("%1 s, on the view: %2").arg(charged).arg(onView)));
        }
        // The calibration's JSON keeps the choice; one made before it reads as the view.
        CostModel m;
        m.attentionOnKvView = false;
        QCOMPARE(costModelFromJson(toJson(m))->attentionOnKvView, false);
        nlohmann::json old = toJson(m);
        old.erase("attention_on_kv_view");
        QCOMPARE(costModelFromJson(old)->attentionOnKvView, true);
    }

    void metricsMapToTheRemoteSeries()
    {
        const prom::Exposition a = scrape(100, 50, 40, 2, 3), b = scrape(300, 90, 60, 4, 1);
        QCOMPARE(detectServer(a), std::string("llamacpp"));
        TargetMetricsMapper m;
        const TargetSample first = m.map(a, Duration::zero());
        QCOMPARE(first.server, std::string("llamacpp"));
        QCOMPARE(*first.running, 2.0);
        QCOMPARE(*first.waiting, 3.0);
        QVERIFY(!first.tokensPerStep); // a counter's first scrape
        const TargetSample second = m.map(b, std::chrono::seconds(1));
        QCOMPARE(*second.tokensPerStep, (200.0 + 40.0) / 20.0);
        QCOMPARE(*second.queue, 1.0);
    }

    void settingsFromPropsAndSlots()
    {
        const auto props = nlohmann::json::parse(R"({"total_slots": 4, "build_info": "b1-0c1e570",
            "default_generation_settings": {"n_ctx": 1024, "params": {}}, "model_path": "m.gguf"})");
        const auto slotList = nlohmann::json::parse(R"([{"id":0,"n_ctx":1024},{"id":1,"n_ctx":1024},
            {"id":2,"n_ctx":1024},{"id":3,"n_ctx":1024}])");
        QVERIFY(isLlamaCppProps(props));
        QVERIFY(!isLlamaCppProps(nlohmann::json::parse(R"({"max_total_tokens": 10})")));
        auto s = llamacppSettings(props, &slotList);
        QVERIFY(s);
        QCOMPARE(s->source, std::string("GET /props + GET /slots"));
        QCOMPARE(*s->maxModelLen, std::int64_t(1024));
        auto c = serverCurrentConfig("llamacpp", *s, std::nullopt);
        QVERIFY2(c, c.status().message().c_str());
        QCOMPARE(c->server.kind, ServerKind::LlamaCpp);
        QCOMPARE(c->server.llamacpp.nParallel, 4);
        QCOMPARE(c->server.llamacpp.nCtx, 4096);
        QVERIFY(!c->server.llamacpp.kvUnified);
        QCOMPARE(LlamaCppScheduler::slotContext(c->server.llamacpp), std::int64_t(1024));
        QVERIFY(c->prefixCache.enabled);
        QVERIFY(!llamacppSettings(nlohmann::json::parse("{}"), nullptr));
    }

    void launchFlagsReadBackAndOllamasEnvironment()
    {
        BatchingConfig c = llamaConfig(8, 8192, 512);
        c.server.llamacpp.nUbatch = 256;
        c.server.llamacpp.nCacheReuse = 128;
        const std::string text = serverLaunchText(c, "model.gguf");
        QVERIFY2(text.find("llama-server -m model.gguf") == 0, text.c_str());
        QVERIFY(looksLikeLlamaCppCommand(text));
        auto s = llamacppSettingsFromCommand(text, "file x");
        QVERIFY2(s, s.status().message().c_str());
        auto back = serverCurrentConfig("llamacpp", *s, std::nullopt);
        QVERIFY2(back, back.status().message().c_str());
        QCOMPARE(back->server.llamacpp, c.server.llamacpp);
        // The short flags of llama-server's own help.
        auto shortFlags =
            llamacppSettingsFromCommand("llama-server -m m.gguf -np 2 -c 4096 -b 1024 -ub 128 -kvu", "");
        QVERIFY(shortFlags);
        auto k = serverCurrentConfig("llamacpp", *shortFlags, std::nullopt);
        QVERIFY(k);
        QCOMPARE(k->server.llamacpp.nParallel, 2);
        QCOMPARE(k->server.llamacpp.nBatch, 1024);
        QCOMPARE(k->server.llamacpp.nUbatch, 128);
        QVERIFY(k->server.llamacpp.kvUnified);
        QCOMPARE(LlamaCppScheduler::slotContext(k->server.llamacpp), std::int64_t(4096));
        // Ollama: a context per parallel request.
        auto ollama = llamacppSettingsFromCommand("OLLAMA_NUM_PARALLEL=3\nOLLAMA_CONTEXT_LENGTH=2048\n"
                                                  "OLLAMA_MAX_QUEUE=64\n",
                                                  "");
        QVERIFY(ollama);
        auto o = serverCurrentConfig("llamacpp", *ollama, std::nullopt);
        QVERIFY(o);
        QCOMPARE(o->server.llamacpp.nParallel, 3);
        QCOMPARE(LlamaCppScheduler::slotContext(o->server.llamacpp), std::int64_t(2048));
        QCOMPARE(ollama->settings["OLLAMA_MAX_QUEUE"].get<int>(), 64);
        const auto bad = llamacppSettingsFromCommand("llama-server -np many", "");
        QVERIFY(!bad);
        QVERIFY(QString::fromStdString(bad.status().message()).contains("-np takes a whole number"));
        // n_ubatch above n_batch is refused, as llama.cpp caps it.
        BatchingConfig wrong = llamaConfig(2, 1024, 256);
        wrong.server.llamacpp.nUbatch = 512;
        QVERIFY(!validate(wrong));
    }
};

QTEST_GUILESS_MAIN(TestLlamaCppModel)
#include "test_llamacpp_model.moc"
