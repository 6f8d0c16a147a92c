// builtin:tiny-decoder: paged KV-cache decoding equals full recomputation,
// padding invariance (float32 exactly, bfloat16 within its precision),
// members that finish early leave without changing the others, generation
// stops at max_new_tokens, over-long requests fail alone, the KV pool's
// sizing and the scheduler's books of it, and the engine end to end (tokens,
// time to first token, time per output token).
#include "engine/exec/engine.h"
#include "engine/torch/model_presets.h"
#include "engine/torch/tiny_decoder.h"
#include "model_test_util.h"
#include "tests/engine/prefix_driver.h"
#include "tests/engine/step_driver.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

using namespace bp;
using namespace bp::testing;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<DecoderModel> decoder(const std::string &dtype = "float32")
{
    ModelSpec spec = testSpec("builtin:tiny-decoder");
    spec.dtype = dtype;
    auto made = makeTinyDecoder(spec);
    if (!made) {
        qWarning("%s", made.status().toString().c_str());
        return nullptr;
    }
    return made.value();
}

std::vector<Generation> generate(DecoderModel &model, const std::vector<Request> &reqs,
                                 GenerateOptions options, int paddedLength = 0)
{
    BatchInput input;
    for (const auto &r : reqs) {
        input.requests.push_back(&r);
        paddedLength = std::max(paddedLength, int(r.tokens.size()));
    }
    input.paddedLength = paddedLength;
    std::vector<Generation> out;
    Status s = model.generate(input, options, out);
    if (!s)
        qWarning("generate failed: %s", s.toString().c_str());
    return out;
}

// Gap between the best and second-best logit.
double topMargin(const std::vector<float> &logits)
{
    std::vector<float> sorted = logits;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    return double(sorted[0]) - double(sorted[1]);
}

// `tokens` (and `logits`, when given) must match the reference generation.
// Greedy decoding may legitimately diverge where the reference's best two
// logits tie within float noise; then the rest of the row is not compared.
// `tolerance`: of the logits (max |a-b| / (1 + |b|)) and the margin below
// which two logits tie — 1e-4 in float32; bfloat16 keeps 8 bits of mantissa.
QString compareToReference(const Generation &ref, const std::vector<TokenId> &tokens,
                           const std::vector<std::vector<float>> *logits, double tolerance = 1e-4)
{
    if (ref.tokens.size() != tokens.size())
        return QStringLiteral("%1 tokens, reference has %2").arg(tokens.size()).arg(ref.tokens.size());
    for (std::size_t s = 0; s < tokens.size(); ++s) {
        if (logits) {
            const double diff = maxRelativeDifference((*logits)[s], ref.logits[s]);
            if (diff > tolerance)
                return QStringLiteral("step %1: logits differ by %2").arg(s).arg(diff);
        }
        if (tokens[s] != ref.tokens[s]) {
            const double margin = topMargin(ref.logits[s]);
            if (margin > tolerance)
                return QStringLiteral("step %1: token %2 vs %3 (reference margin %4)")
                    .arg(s)
                    .arg(tokens[s])
                    .arg(ref.tokens[s])
                    .arg(margin);
            break; // a genuine near-tie: later steps continue different sequences
        }
    }
    return {};
}

GenerateOptions withLogits(bool cache = true)
{
    GenerateOptions o;
    o.useKvCache = cache;
    o.keepLogits = true;
    return o;
}

std::string joinedNotes(const Backend &model)
{
    std::string all;
    for (const std::string &line : model.notes())
        all += line + "\n";
    return all;
}

// A pool of `tokens` slots (0: from memory) in blocks of `block` tokens.
bool preparePool(DecoderModel &model, std::int64_t tokens, int block)
{
    const Status s = model.prepareKv({tokens, 0.9, block});
    if (!s)
        qWarning("prepareKv: %s", s.toString().c_str());
    return s.isOk();
}

class Collector {
public:
    Completion callback()
    {
        return [this](Response &&r) {
            std::lock_guard lock(m_mutex);
            m_responses.push_back(std::move(r));
            m_cv.notify_all();
        };
    }
    bool waitFor(std::size_t n)
    {
        std::unique_lock lock(m_mutex);
        return m_cv.wait_for(lock, 60s, [&] { return m_responses.size() >= n; });
    }
    std::vector<Response> responses()
    {
        std::lock_guard lock(m_mutex);
        return m_responses;
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<Response> m_responses;
};

} // namespace

class TestTinyDecoder : public QObject {
    Q_OBJECT
private slots:
    void info()
    {
        auto model = decoder();
        QVERIFY(model);
        auto shape = transformerPreset("test");
        QVERIFY(shape.isOk());
        QCOMPARE(model->info().name, std::string("builtin:tiny-decoder"));
        QVERIFY(model->info().generative);
        QCOMPARE(model->info().parameters, decoderParameterCount(*shape));
        QCOMPARE(model->info().maxNewTokensLimit, shape->maxPositions - 1);
    }

    void kvCacheEqualsRecomputation()
    {
        auto model = decoder();
        QVERIFY(model);
        std::mt19937 rng(11);
        std::vector<Request> reqs{
            makeRequest(randomTokens(rng, 4), 12), makeRequest(randomTokens(rng, 17), 5),
            makeRequest(randomTokens(rng, 9), 20), makeRequest(randomTokens(rng, 1), 7)};
        const auto cached = generate(*model, reqs, withLogits(true));
        const auto reference = generate(*model, reqs, withLogits(false));
        QCOMPARE(cached.size(), reqs.size());
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            QCOMPARE(int(cached[i].tokens.size()), reqs[i].maxNewTokens);
            const QString diff = compareToReference(reference[i], cached[i].tokens, &cached[i].logits);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("request %1: %2").arg(i).arg(diff)));
        }
    }

    void paddingInvariance_data()
    {
        QTest::addColumn<int>("extraPadding");
        QTest::newRow("padded to the longest") << 0;
        QTest::newRow("policy pads 11 more (static)") << 11;
    }
    void paddingInvariance()
    {
        QFETCH(int, extraPadding);
        auto model = decoder();
        QVERIFY(model);
        std::mt19937 rng(12);
        const std::vector<int> lengths{1, 23, 6, 40, 13};
        std::vector<Request> reqs;
        for (int n : lengths)
            reqs.push_back(makeRequest(randomTokens(rng, n), 8));
        const auto batched = generate(*model, reqs, withLogits(), 40 + extraPadding);
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            const auto alone = generate(*model, {reqs[i]}, withLogits());
            const QString diff = compareToReference(alone[0], batched[i].tokens, &batched[i].logits);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("length %1: %2").arg(lengths[i]).arg(diff)));
        }
    }

    // Members finish at different steps and leave the batch at once; the
    // others go on exactly as the recomputing reference.
    void membersThatFinishEarlyChangeNothing()
    {
        auto model = decoder();
        QVERIFY(model);
        std::mt19937 rng(13);
        std::vector<Request> reqs;
        for (int i = 0; i < 6; ++i)
            reqs.push_back(
                makeRequest(randomTokens(rng, 3 + 5 * i), 2 + 3 * i)); // ragged: finish at different steps
        const auto paged = generate(*model, reqs, withLogits(true));
        const auto reference = generate(*model, reqs, withLogits(false));
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            QCOMPARE(int(paged[i].tokens.size()), reqs[i].maxNewTokens);
            const QString diff = compareToReference(reference[i], paged[i].tokens, &paged[i].logits);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("request %1: %2").arg(i).arg(diff)));
        }
    }

    // bfloat16 (the CUDA default): a sequence batched with others and alone
    // agrees within bfloat16's precision — logits within 3e-2 relative, and
    // the same greedy tokens wherever the alone run's top-2 margin exceeds
    // that. Tokens are not bit-exact: the linear layers round differently
    // for different batch shapes (attention does not: it runs per query).
    void bfloat16BatchedMatchesAlone()
    {
        auto model = decoder("bfloat16");
        QVERIFY(model);
        QCOMPARE(model->info().dtype, std::string("bfloat16"));
        std::mt19937 rng(17);
        std::vector<Request> reqs;
        for (int n : {1, 23, 6, 40, 13})
            reqs.push_back(makeRequest(randomTokens(rng, n), 8));
        const auto batched = generate(*model, reqs, withLogits());
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            const auto alone = generate(*model, {reqs[i]}, withLogits());
            const QString diff = compareToReference(alone[0], batched[i].tokens, &batched[i].logits, 3e-2);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("request %1: %2").arg(i).arg(diff)));
        }
    }

    // The KV pool: kv_cache_tokens in whole blocks, or kv_memory_fraction of
    // free memory at 0; a different size only while no block is in use; the
    // dtype and the bytes a token's keys and values take are the model's.
    void poolIsSizedFromTheBudgetOrMemory()
    {
        auto model = decoder();
        QVERIFY(model);
        const auto shape = transformerPreset("test");
        QVERIFY(shape.isOk());
        QCOMPARE(model->info().kvBytesPerToken,
                 std::int64_t(shape->layers) * 2 * shape->dModel * std::int64_t(sizeof(float)));
        QVERIFY(preparePool(*model, 160, 16));
        QCOMPARE(model->steps()->kvPool().capacityTokens, std::int64_t(160));
        QCOMPARE(model->steps()->kvPool().blockTokens, 16);
        QVERIFY(preparePool(*model, 100, 16)); // rounded down: the scheduler books whole blocks too
        QCOMPARE(model->steps()->kvPool().capacityTokens, std::int64_t(96));
        QCOMPARE(model->prepareKv({8, 0.9, 16}).code(), StatusCode::InvalidArgument); // not one block
        QVERIFY(preparePool(*model, 0, 16));
        const std::int64_t fromMemory = model->steps()->kvPool().capacityTokens;
        QVERIFY(fromMemory > 1000);
        QVERIFY(preparePool(*model, 0, 16)); // the same request: nothing changes
        QCOMPARE(model->steps()->kvPool().capacityTokens, fromMemory);
        // The CPU pool from what the engine's sequences can use: 3 of the
        // model's full length (whole blocks), and the start-up line says so.
        {
            const int length = model->info().maxSequenceLength;
            QVERIFY(model->prepareKv({0, 0.9, 16, 3}).isOk());
            QCOMPARE(model->steps()->kvPool().capacityTokens, std::int64_t(3) * ((length + 15) / 16) * 16);
            const std::string line = joinedNotes(*model);
            QVERIFY2(line.find("sized for 3 sequences of ") != std::string::npos, line.c_str());
            // More sequences than memory allows: the memory bound, named.
            QVERIFY(model->prepareKv({0, 0.9, 16, 1000000}).isOk());
            QVERIFY(model->steps()->kvPool().capacityTokens > std::int64_t(3) * length);
            QVERIFY(joinedNotes(*model).find("(BATCHPILOT_CPU_KV_SPACE)") != std::string::npos);
            QVERIFY(preparePool(*model, 0, 16));
        }
        // in use: another size is refused and the pool stays
        std::vector<StepOutcome> out;
        QVERIFY(model->steps()->step({{1, {1, 2, 3}, true}}, out).isOk());
        QCOMPARE(model->prepareKv({64, 0.9, 16}).code(), StatusCode::Unavailable);
        QCOMPARE(model->steps()->kvPool().capacityTokens, fromMemory);
        model->steps()->release(1);
        QVERIFY(preparePool(*model, 64, 16));
        QCOMPARE(model->steps()->kvPool().capacityTokens, std::int64_t(64));
        // a full pool fails the item that does not fit, alone
        QVERIFY(model->steps()->step({{2, std::vector<TokenId>(50, 1), true}}, out).isOk());
        QVERIFY(out[0].status.isOk());
        QVERIFY(model->steps()->step({{3, std::vector<TokenId>(20, 1), true}}, out).isOk());
        QCOMPARE(out[0].status.code(), StatusCode::ResourceExhausted);
        model->steps()->release(2);
        QCOMPARE(model->steps()->cachedTokens(), std::int64_t(0));
    }

    // The scheduler's KV books are the pool (blocks of 4, prefix caching on, a
    // budget small enough to evict and preempt): after every step they hold
    // the same number of tokens (PrefixDriver checks it), the engine's KV
    // gauge is the pool, and the answers are the reference's.
    void schedulerBooksAreThePool()
    {
        auto model = decoder();
        QVERIFY(model);
        QVERIFY(preparePool(*model, 64, 4));
        std::mt19937 rng(26);
        const std::vector<TokenId> system = randomTokens(rng, 21);
        PrefixDriver d(prefixConfig(true, 8, 64, 3, 48, 8), model->info().limits(), *model->steps());
        std::vector<std::vector<TokenId>> prompts;
        for (int i = 0; i < 6; ++i) {
            std::vector<TokenId> p = system;
            const std::vector<TokenId> own = randomTokens(rng, 3 + 2 * i);
            p.insert(p.end(), own.begin(), own.end());
            prompts.push_back(p);
            QVERIFY(d.submit(std::uint64_t(i + 1), p, 20).isOk());
        }
        d.runAll();
        QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
        QCOMPARE(d.scheduler->iterationGauges().kvCapacityTokens, std::int64_t(64));
        int preempted = 0;
        for (const StepWork &s : d.steps)
            preempted += s.preempted;
        QVERIFY(preempted > 0); // the pool filled up
        QVERIFY(d.hits() > 0);
        d.scheduler.reset(); // drops the cached blocks
        QCOMPARE(model->steps()->cachedTokens(), std::int64_t(0));
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            QVERIFY(d.responses[i + 1].status.isOk());
            const auto alone = generate(*model, {makeRequest(prompts[i], 20)}, withLogits());
            const QString diff = compareToReference(alone[0], d.responses[i + 1].tokens, nullptr);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("request %1: %2").arg(i + 1).arg(diff)));
        }
    }

    void stopsAtMaxNewTokens()
    {
        auto model = decoder();
        QVERIFY(model);
        std::mt19937 rng(14);
        std::vector<Request> reqs{makeRequest(randomTokens(rng, 5), 1), makeRequest(randomTokens(rng, 8), 3),
                                  makeRequest(randomTokens(rng, 2), 0), makeRequest(randomTokens(rng, 6), 9)};
        const auto out = runBatch(*model, reqs);
        const std::vector<std::size_t> expected{1, 3, 1, 9}; // 0 = the prefill's single token
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            QVERIFY(out[i].status.isOk());
            QCOMPARE(out[i].tokens.size(), expected[i]);
            QVERIFY(out[i].firstTokenAfter > Duration::zero());
            QVERIFY(out[i].lastTokenAfter >= out[i].firstTokenAfter);
            for (TokenId t : out[i].tokens)
                QVERIFY(t >= 0 && t < model->info().vocabSize);
        }
        QCOMPARE(out[0].lastTokenAfter, out[0].firstTokenAfter);
        QVERIFY(out[3].lastTokenAfter > out[1].lastTokenAfter); // finished later
    }

    void overlongRequestFailsAlone()
    {
        auto model = decoder();
        QVERIFY(model);
        const int positions = model->info().maxNewTokensLimit + 1;
        std::mt19937 rng(15);
        std::vector<Request> reqs{makeRequest(randomTokens(rng, positions - 4), 10),
                                  makeRequest(randomTokens(rng, 5), 4)};
        Status batchStatus;
        const auto out = runBatch(*model, reqs, 0, &batchStatus);
        QVERIFY(batchStatus.isOk());
        QCOMPARE(out[0].status.code(), StatusCode::OutOfRange);
        QVERIFY(out[0].status.message().find("positions") != std::string::npos);
        QVERIFY(out[0].tokens.empty());
        QVERIFY(out[1].status.isOk());
        QCOMPARE(out[1].tokens.size(), std::size_t(4));
    }

    // Step-level generation (StepModel): sequences join at different steps,
    // prompts arrive in chunks (1, 4 and whole), and each sequence's tokens
    // equal its one-at-a-time Backend::run generation (the same near-tie rule
    // as everywhere here); the cache holds exactly the live tokens after
    // every step and nothing once all have left.
    void stepsEqualOneAtATimeGeneration()
    {
        auto model = decoder();
        QVERIFY(model);
        QVERIFY(preparePool(*model, 4096, 1)); // blocks of one token: the cache holds exactly what was fed
        StepModel *steps = model->steps();
        QVERIFY(steps);
        std::mt19937 rng(21);
        const std::vector<Driven> all = {
            driven(1, randomTokens(rng, 9), 7, 4, 0),    driven(2, randomTokens(rng, 1), 12, 1, 0),
            driven(3, randomTokens(rng, 23), 5, 100, 1), driven(4, randomTokens(rng, 6), 9, 1, 3),
            driven(5, randomTokens(rng, 14), 3, 4, 6),   driven(6, randomTokens(rng, 2), 10, 2, 6)};
        std::vector<Driven> finished;
        const QString error = driveSteps(*steps, all, finished);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(finished.size(), all.size());
        for (const Driven &d : finished) {
            const auto alone = generate(*model, {makeRequest(d.prompt, d.maxNew)}, withLogits());
            const QString diff = compareToReference(alone[0], d.generated, nullptr);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("sequence %1: %2").arg(d.id).arg(diff)));
        }
    }

    // Prefix caching: requests sharing a system prompt through
    // the continuous scheduler with the cache on and off give the same
    // tokens, token for token, and the one-at-a-time reference's; with it on
    // the later requests start from the kept keys and values (fewer prompt
    // tokens fed). A small KV budget makes the cache evict and a sequence be
    // preempted and recomputed on the way.
    void prefixCacheOnAndOffGiveTheSameTokens_data()
    {
        QTest::addColumn<int>("kv");
        QTest::newRow("unlimited") << 0;
        QTest::newRow("kv 160: evictions and preemption") << 160;
    }
    void prefixCacheOnAndOffGiveTheSameTokens()
    {
        QFETCH(int, kv);
        auto model = decoder();
        QVERIFY(model);
        std::mt19937 rng(25);
        const std::vector<TokenId> system = randomTokens(rng, 37);
        std::vector<std::vector<TokenId>> prompts;
        for (int i = 0; i < 7; ++i) {
            std::vector<TokenId> p = system;
            const std::vector<TokenId> own = randomTokens(rng, 2 + 3 * i);
            p.insert(p.end(), own.begin(), own.end());
            prompts.push_back(p);
        }
        std::map<bool, std::vector<std::vector<TokenId>>> tokens;
        std::map<bool, std::int64_t> prefill;
        for (bool on : {false, true}) {
            QVERIFY(preparePool(*model, kv, 8));
            PrefixDriver d(prefixConfig(on, 8, kv, 3, 64, 16), model->info().limits(), *model->steps());
            for (std::size_t i = 0; i < prompts.size(); ++i)
                QVERIFY(d.submit(i + 1, prompts[i], 6 + int(i % 3) * 4).isOk());
            d.runAll();
            QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
            QCOMPARE(d.responses.size(), prompts.size());
            for (std::size_t i = 0; i < prompts.size(); ++i) {
                QVERIFY2(d.responses[i + 1].status.isOk(), d.responses[i + 1].status.toString().c_str());
                tokens[on].push_back(d.responses[i + 1].tokens);
            }
            prefill[on] = d.prefillTokens();
            if (on)
                QVERIFY(d.hits() >= 4 * 32); // at least the later four start from the system prompt's blocks
        }
        QCOMPARE(model->steps()->cachedTokens(), std::int64_t(0)); // every sequence released
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            QCOMPARE(tokens[true][i], tokens[false][i]);
            const auto alone = generate(*model, {makeRequest(prompts[i], 6 + int(i % 3) * 4)}, withLogits());
            const QString diff = compareToReference(alone[0], tokens[true][i], nullptr);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("request %1: %2").arg(i + 1).arg(diff)));
        }
        QVERIFY2(prefill[true] <= prefill[false] - 4 * 32,
                 qPrintable(QStringLiteral("%1 vs %2").arg(prefill[true]).arg(prefill[false])));
    }

    // Backend::run reports every token through Request::onToken as it is
    // ready: in order, indices 0..n-1, the same tokens as the result, before
    // run() returns; requests without a callback are unaffected.
    void runStreamsTokensThroughOnToken()
    {
        auto model = decoder();
        QVERIFY(model);
        std::mt19937 rng(22);
        std::vector<Request> reqs{makeRequest(randomTokens(rng, 5), 6), makeRequest(randomTokens(rng, 9), 3),
                                  makeRequest(randomTokens(rng, 2), 4)};
        std::vector<std::vector<TokenEvent>> events(reqs.size());
        for (std::size_t i = 0; i < 2; ++i) {
            reqs[i].id = 100 + i;
            reqs[i].onToken = [&events, i](const TokenEvent &e) { events[i].push_back(e); };
        }
        const auto out = runBatch(*model, reqs);
        for (std::size_t i = 0; i < 2; ++i) {
            QCOMPARE(events[i].size(), out[i].tokens.size());
            for (std::size_t k = 0; k < events[i].size(); ++k) {
                QCOMPARE(events[i][k].requestId, reqs[i].id);
                QCOMPARE(events[i][k].index, int(k));
                QCOMPARE(events[i][k].token, out[i].tokens[k]);
                if (k > 0)
                    QVERIFY(events[i][k].at >= events[i][k - 1].at);
            }
        }
        QCOMPARE(out[2].tokens.size(), std::size_t(4));
    }

    // A bad item fails alone and starts nothing; release frees the cache.
    void stepItemsFailAloneAndReleaseFreesTheCache()
    {
        auto model = decoder();
        QVERIFY(model);
        QVERIFY(preparePool(*model, 4096, 1)); // blocks of one token: the cache holds exactly what was fed
        StepModel *steps = model->steps();
        const int positions = model->info().maxNewTokensLimit + 1;
        std::vector<StepOutcome> out;
        QVERIFY(steps
                    ->step({{1, {1, 2, 3}, true},
                            {2, {}, true},
                            {3, {model->info().vocabSize}, true},
                            {4, std::vector<TokenId>(std::size_t(positions + 1), 1), true}},
                           out)
                    .isOk());
        QVERIFY(out[0].status.isOk());
        QCOMPARE(out[1].status.code(), StatusCode::InvalidArgument);
        QCOMPARE(out[2].status.code(), StatusCode::OutOfRange);
        QCOMPARE(out[3].status.code(), StatusCode::OutOfRange);
        QCOMPARE(steps->cachedTokens(), std::int64_t(3));
        QVERIFY(steps->step({{1, {out[0].next}, true}, {5, {4, 5}, false}}, out).isOk());
        QCOMPARE(steps->cachedTokens(), std::int64_t(6));
        QCOMPARE(steps->step({{5, {1}, true}, {5, {2}, true}}, out).code(), StatusCode::InvalidArgument);
        steps->release(1);
        QCOMPARE(steps->cachedTokens(), std::int64_t(2));
        steps->release(1); // twice: ignored
        steps->release(5);
        QCOMPARE(steps->cachedTokens(), std::int64_t(0));
    }

    void engineEndToEnd()
    {
        auto model = decoder();
        QVERIFY(model);
        EngineOptions options;
        options.backend = model;
        options.batching.policy = PolicyKind::Dynamic;
        options.batching.maxBatchSize = 4;
        options.batching.maxQueueDelay = 20ms;
        auto engine = Engine::create(options);
        QVERIFY(engine.isOk());

        std::mt19937 rng(16);
        std::vector<Request> reqs;
        for (int i = 0; i < 7; ++i)
            reqs.push_back(makeRequest(randomTokens(rng, 2 + 3 * i), 1 + (i % 4) * 3));
        Collector collector;
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            Request r = reqs[i];
            r.id = i + 1;
            QVERIFY((*engine)->submit(std::move(r), collector.callback()).isOk());
        }
        QVERIFY(collector.waitFor(reqs.size()));
        (*engine)->shutdown();
        for (const Response &resp : collector.responses()) {
            const Request &req = reqs[resp.requestId - 1];
            QVERIFY2(resp.status.isOk(), resp.status.toString().c_str());
            QCOMPARE(int(resp.tokens.size()), req.maxNewTokens);
            QVERIFY(resp.timing.timeToFirstToken > Duration::zero());
            QVERIFY(resp.timing.timeToFirstToken <= resp.timing.total);
            QVERIFY(resp.timing.timeToFirstToken >= resp.timing.queueWait);
            if (req.maxNewTokens > 1)
                QVERIFY(resp.timing.timePerOutputToken > Duration::zero());
            const auto alone = generate(*model, {req}, withLogits());
            const QString diff = compareToReference(alone[0], resp.tokens, nullptr);
            QVERIFY2(diff.isEmpty(), qPrintable(diff));
        }
    }
};

QTEST_GUILESS_MAIN(TestTinyDecoder)
#include "test_tiny_decoder.moc"
