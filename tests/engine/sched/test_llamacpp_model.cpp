// llama.cpp's llama-server as a server kind: its scheduler model
// (engine/sched/server_models/llamacpp_scheduler.h) on a fake clock with the
// hash model, its /metrics series, its /props settings and its launch flags.
#include "tests/engine/books_driver.h"
#include "engine/config/config_rules.h"
#include "engine/config/server_command.h"
#include "engine/sched/server_models/llamacpp_scheduler.h"
#include "engine/sim/calibration/llamacpp_settings.h"
#include "engine/telemetry/target_metrics.h"

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

// One step as the test reads it: tokens fed per sequence, in feed order.
struct Driver : BooksDriver {
    std::vector<std::vector<int>> steps;
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
        for (const StepItem &item : step.items)
            sizes.push_back(int(item.tokens.size()));
        steps.push_back(sizes);
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
        QCOMPARE(LlamaCppScheduler::slotContext(llamaConfig(2, 512, 2048).server.llamacpp), std::int64_t(256));
        // llama_context's rounding: n_ctx and each slot's share up to multiples
        // of 256 (-c 4096 -np 14: slots of 512, as the real server's log says)
        QCOMPARE(LlamaCppScheduler::slotContext(llamaConfig(14, 4096, 2048).server.llamacpp), std::int64_t(512));
        QCOMPARE(LlamaCppScheduler::slotContext(llamaConfig(1, 1000, 2048).server.llamacpp), std::int64_t(1024));
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
