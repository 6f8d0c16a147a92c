// TorchScript models from a file: the fixture made by
// tools/make_torchscript_fixture.py at build time loads, is padding-invariant,
// and every bad file gives a clear error naming the path and the reason.
// Limits: read from the model's embeddings when it declares none, or set by
// --vocab-size / --max-length (ModelSpec), never silently guessed.
// Decoders (the step contract): tiny_decoder.pt generates what Python
// computed for it without a cache, batched or alone, through Backend::run and
// through steps (joins, leaves, chunked prompts); a decoder whose `present`
// does not grow is refused at load.
#include "model_test_util.h"

#include "engine/exec/engine.h"
#include "tests/engine/prefix_driver.h"
#include "tests/engine/step_driver.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <fstream>

using namespace bp;
using namespace bp::testing;

namespace {

#ifdef BP_TORCHSCRIPT_FIXTURES
const std::string kFixtures = BP_TORCHSCRIPT_FIXTURES;
#else
const std::string kFixtures;
#endif

Status loadError(const std::string &path)
{
    auto created = createBackend(testSpec(path));
    return created.isOk() ? Status::ok() : created.status();
}

// The fixture's reference generations (tiny_decoder.expected.json).
struct Expected {
    std::vector<std::vector<TokenId>> prompts, tokens;
    std::vector<int> maxNew;
};

std::vector<TokenId> tokenList(const QJsonValue &v)
{
    std::vector<TokenId> out;
    for (const QJsonValue &t : v.toArray())
        out.push_back(TokenId(t.toInt()));
    return out;
}

Expected expectedGenerations()
{
    QFile f(QString::fromStdString(kFixtures + "/tiny_decoder.expected.json"));
    Expected e;
    if (!f.open(QIODevice::ReadOnly))
        return e;
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    for (const QJsonValue &p : o.value("prompts").toArray())
        e.prompts.push_back(tokenList(p));
    for (const QJsonValue &p : o.value("tokens").toArray())
        e.tokens.push_back(tokenList(p));
    for (const QJsonValue &n : o.value("max_new_tokens").toArray())
        e.maxNew.push_back(n.toInt());
    return e;
}

} // namespace

class TestTorchScript : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (kFixtures.empty())
            QSKIP("no Python with torch at configure time: TorchScript fixtures were not generated "
                  "(install python3-torch and reconfigure)");
    }

    void loadsFixture()
    {
        auto backend = createOrFail(testSpec(kFixtures + "/tiny_classifier.pt"));
        QVERIFY(backend);
        const ModelInfo &info = backend->info();
        QCOMPARE(info.name, kFixtures + "/tiny_classifier.pt");
        QCOMPARE(info.device, std::string("cpu"));
        QCOMPARE(info.vocabSize, 256);
        QCOMPARE(info.maxSequenceLength, 512);
        QVERIFY(info.parameters > 0);
        QVERIFY2(info.description.find("[B, 4]") != std::string::npos, info.description.c_str());
    }

    void paddingInvariance()
    {
        auto backend = createOrFail(testSpec(kFixtures + "/tiny_classifier.pt"));
        QVERIFY(backend);
        std::mt19937 rng(21);
        const std::vector<int> lengths{3, 50, 1, 27, 9};
        std::vector<Request> reqs;
        for (int n : lengths)
            reqs.push_back(makeRequest(randomTokens(rng, n)));
        for (int padded : {50, 64}) {
            const auto batched = runBatch(*backend, reqs, padded);
            for (std::size_t i = 0; i < reqs.size(); ++i) {
                const auto alone = runBatch(*backend, {reqs[i]});
                QCOMPARE(batched[i].values.size(), std::size_t(4));
                const double diff = maxRelativeDifference(batched[i].values, alone[0].values);
                QVERIFY2(diff < 1e-4, qPrintable(QStringLiteral("length %1 padded to %2: difference %3")
                                                     .arg(lengths[i])
                                                     .arg(padded)
                                                     .arg(diff)));
            }
        }
    }

    void missingFile()
    {
        const std::string path = kFixtures + "/does_not_exist.pt";
        const Status s = loadError(path);
        QCOMPARE(s.code(), StatusCode::NotFound);
        QVERIFY(s.message().find(path) != std::string::npos);
        QVERIFY(s.message().find("not found") != std::string::npos);
    }

    void garbageBytes()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath(QStringLiteral("garbage.pt")).toStdString();
        {
            std::ofstream f(path, std::ios::binary);
            std::mt19937 rng(5);
            for (int i = 0; i < 4096; ++i)
                f.put(char(rng() & 0xFF));
        }
        const Status s = loadError(path);
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY(s.message().find(path) != std::string::npos);
        QVERIFY2(s.message().find("not a loadable TorchScript file") != std::string::npos,
                 s.message().c_str());
        QVERIFY(s.message().find('\n') == std::string::npos); // one line, no C++ backtrace
    }

    void directoryAndEmptyFile()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string asDir = dir.filePath(QStringLiteral("model.pt")).toStdString();
        QVERIFY(QDir().mkpath(QString::fromStdString(asDir)));
        Status s = loadError(asDir);
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY(s.message().find("directory") != std::string::npos);

        const std::string empty = dir.filePath(QStringLiteral("empty.pt")).toStdString();
        std::ofstream(empty).close();
        s = loadError(empty);
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY(s.message().find(empty) != std::string::npos);
    }

    void decoderLoads()
    {
        auto backend = createOrFail(testSpec(kFixtures + "/tiny_decoder.pt"));
        QVERIFY(backend);
        const ModelInfo &info = backend->info();
        QVERIFY(info.generative);
        QCOMPARE(info.vocabSize, 64);
        QCOMPARE(info.maxSequenceLength, 63); // 64 positions, room for one generated token
        QCOMPARE(info.maxNewTokensLimit, 63);
        QVERIFY2(info.description.find("decoder") != std::string::npos, info.description.c_str());
        QVERIFY(backend->steps());
    }

    // Backend::run, alone and as one left-padded batch, equals Python's
    // generation by full recomputation.
    void decoderRunEqualsReference()
    {
        auto backend = createOrFail(testSpec(kFixtures + "/tiny_decoder.pt"));
        QVERIFY(backend);
        const Expected e = expectedGenerations();
        QVERIFY(!e.prompts.empty());
        std::vector<Request> reqs;
        for (std::size_t i = 0; i < e.prompts.size(); ++i)
            reqs.push_back(makeRequest(e.prompts[i], e.maxNew[i]));
        const auto batched = runBatch(*backend, reqs);
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            QVERIFY2(batched[i].status.isOk(), batched[i].status.toString().c_str());
            QCOMPARE(batched[i].tokens, e.tokens[i]);
            QVERIFY(batched[i].lastTokenAfter >= batched[i].firstTokenAfter);
            QCOMPARE(runBatch(*backend, {reqs[i]})[0].tokens, e.tokens[i]);
        }
        // Past the positions: that request alone fails.
        std::vector<Request> mixed{makeRequest(std::vector<TokenId>(60, 1), 10), reqs[0]};
        const auto out = runBatch(*backend, mixed);
        QCOMPARE(out[0].status.code(), StatusCode::OutOfRange);
        QCOMPARE(out[1].tokens, e.tokens[0]);
    }

    // Steps with joins, leaves and chunked prompts equal the reference; the
    // cache holds exactly the live tokens and is empty at the end.
    void decoderStepsEqualReference()
    {
        auto backend = createOrFail(testSpec(kFixtures + "/tiny_decoder.pt"));
        QVERIFY(backend);
        StepModel *steps = backend->steps();
        QVERIFY(steps);
        const Expected e = expectedGenerations();
        QVERIFY(!e.prompts.empty());
        std::vector<Driven> all;
        for (std::size_t i = 0; i < e.prompts.size(); ++i)
            all.push_back(driven(i + 1, e.prompts[i], e.maxNew[i], 1 + int(i % 3) * 2, int(i)));
        std::vector<Driven> finished;
        const QString error = driveSteps(*steps, all, finished);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (const Driven &d : finished)
            QCOMPARE(d.generated, e.tokens[d.id - 1]);
        std::vector<StepOutcome> out;
        QVERIFY(steps->step({{9, {1, 2}, true}, {10, {64}, true}}, out).isOk());
        QVERIFY(out[0].status.isOk());
        QCOMPARE(out[1].status.code(), StatusCode::OutOfRange);
        QCOMPARE(steps->cachedTokens(), std::int64_t(2));
        steps->release(9);
        QCOMPARE(steps->cachedTokens(), std::int64_t(0));
    }

    // Prefix caching through the unchanged step contract: each reference
    // prompt runs twice through the continuous scheduler with the cache on
    // (block 2), the second time starting from the kept columns of the
    // first; both equal the generations the fixture script computed without
    // any cache, as do prompts sharing a prefix with the cache on and off.
    void decoderWithPrefixCacheEqualsReference()
    {
        auto backend = createOrFail(testSpec(kFixtures + "/tiny_decoder.pt"));
        QVERIFY(backend);
        const Expected e = expectedGenerations();
        QVERIFY(!e.prompts.empty());
        PrefixDriver d(prefixConfig(true, 2, 0, 2, 32, 4), backend->info().limits(), *backend->steps());
        const std::uint64_t n = e.prompts.size();
        for (std::uint64_t i = 0; i < n; ++i)
            QVERIFY(d.submit(i + 1, e.prompts[i], e.maxNew[i]).isOk());
        d.runAll();
        for (std::uint64_t i = 0; i < n; ++i) // again: now cached
            QVERIFY(d.submit(n + i + 1, e.prompts[i], e.maxNew[i]).isOk());
        d.runAll();
        QVERIFY2(d.error.isEmpty(), qPrintable(d.error));
        int served = 0;
        for (std::uint64_t i = 0; i < n; ++i) {
            QCOMPARE(d.responses[i + 1].tokens, e.tokens[i]);
            QCOMPARE(d.responses[n + i + 1].tokens, e.tokens[i]);
            served += d.responses[n + i + 1].cachedTokens;
        }
        QVERIFY(served > 0);

        // shared prefixes, cache on and off
        std::map<bool, std::map<std::uint64_t, Response>> got;
        for (bool on : {false, true}) {
            PrefixDriver s(prefixConfig(on, 2, 0, 3, 32, 4), backend->info().limits(), *backend->steps());
            for (std::uint64_t i = 1; i <= 5; ++i) {
                std::vector<TokenId> p = {5, 9, 13, 2, 7, 11, 3};
                for (std::uint64_t k = 0; k < i; ++k)
                    p.push_back(TokenId((7 * i + 3 * k) % 60));
                QVERIFY(s.submit(i, p, 4).isOk());
            }
            s.runAll();
            QVERIFY2(s.error.isEmpty(), qPrintable(s.error));
            got[on] = s.responses;
            if (on)
                QVERIFY(s.hits() > 0);
        }
        for (std::uint64_t i = 1; i <= 5; ++i)
            QCOMPARE(got[true][i].tokens, got[false][i].tokens);
        QCOMPARE(backend->steps()->cachedTokens(), std::int64_t(0));
    }

    void decoderWithAStalePresentIsRefused()
    {
        const std::string path = kFixtures + "/decoder_stale_present.pt";
        const Status s = loadError(path);
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY(s.message().find(path) != std::string::npos);
        QVERIFY2(s.message().find("present") != std::string::npos, s.message().c_str());
    }

    void wrongSignature()
    {
        const std::string path = kFixtures + "/wrong_signature.pt";
        const Status s = loadError(path);
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY(s.message().find(path) != std::string::npos);
        QVERIFY2(s.message().find("wrong signature") != std::string::npos, s.message().c_str());
        QVERIFY2(s.message().find("forward(") != std::string::npos,
                 s.message().c_str()); // shows what it found
    }

    void wrongReturnType()
    {
        const Status s = loadError(kFixtures + "/wrong_return.pt");
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY2(s.message().find("wrong signature") != std::string::npos, s.message().c_str());
    }

    // A 32,000-token embedding and no vocab_size attribute: every id the
    // embedding holds is admitted (was: everything >= 256 rejected), and the
    // 128-row position embedding bounds the length.
    void limitsFromTheEmbeddings()
    {
        auto backend = createOrFail(testSpec(kFixtures + "/big_vocab.pt"));
        QVERIFY(backend);
        QCOMPARE(backend->info().vocabSize, 32000);
        QCOMPARE(backend->info().maxSequenceLength, 128);
        QVERIFY2(backend->info().description.find("tokens.weight rows") != std::string::npos,
                 backend->info().description.c_str());

        EngineOptions eo;
        eo.backend = backend;
        auto engine = Engine::create(eo);
        QVERIFY(engine);
        Request ok = makeRequest({31999, 300, 7});
        QVERIFY2((*engine)->submit(std::move(ok), [](Response &&) {}).isOk(), "id 31999 refused");
        Request past = makeRequest({32000});
        const Status refused = (*engine)->submit(std::move(past), [](Response &&) {});
        QCOMPARE(refused.code(), StatusCode::OutOfRange);
        Request tooLong = makeRequest(std::vector<TokenId>(129, 1));
        QCOMPARE((*engine)->submit(std::move(tooLong), [](Response &&) {}).code(), StatusCode::OutOfRange);
        (*engine)->shutdown(ShutdownMode::Drain);

        std::vector<Request> reqs{makeRequest({31999, 12000, 5})};
        QCOMPARE(runBatch(*backend, reqs)[0].values.size(), std::size_t(4));
    }

    void limitOptions()
    {
        ModelSpec spec = testSpec(kFixtures + "/big_vocab.pt");
        spec.vocabSize = 1000;
        spec.maxSequenceLength = 64;
        auto backend = createOrFail(spec);
        QVERIFY(backend);
        QCOMPARE(backend->info().vocabSize, 1000);
        QCOMPARE(backend->info().maxSequenceLength, 64);

        // The options also override a declared attribute.
        ModelSpec declared = testSpec(kFixtures + "/tiny_classifier.pt");
        declared.vocabSize = 100;
        auto small = createOrFail(declared);
        QVERIFY(small);
        QCOMPARE(small->info().vocabSize, 100);
        QCOMPARE(small->info().maxSequenceLength, 512);
    }

    void optionsBeyondTheEmbeddingsAreRefused()
    {
        ModelSpec spec = testSpec(kFixtures + "/big_vocab.pt");
        spec.vocabSize = 40000;
        auto created = createBackend(spec);
        QVERIFY(!created);
        QCOMPARE(created.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(created.status().message().find("32000") != std::string::npos,
                 created.status().message().c_str());

        spec.vocabSize = 0;
        spec.maxSequenceLength = 4096;
        created = createBackend(spec);
        QVERIFY(!created);
        QVERIFY2(created.status().message().find("128") != std::string::npos,
                 created.status().message().c_str());
    }

    // Nothing in the model tells its vocabulary: loading fails and the error
    // names the fix; with --vocab-size it loads.
    void noEmbeddingNeedsVocabSize()
    {
        ModelSpec spec = testSpec(kFixtures + "/no_embedding.pt");
        const Status s = loadError(spec.name);
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY2(s.message().find("--vocab-size") != std::string::npos, s.message().c_str());
        QVERIFY(s.message().find(spec.name) != std::string::npos);

        spec.vocabSize = 50000;
        auto backend = createOrFail(spec);
        QVERIFY(backend);
        QCOMPARE(backend->info().vocabSize, 50000);
        QCOMPARE(backend->info().maxSequenceLength, 1024);
    }

    void unknownBuiltin()
    {
        auto created = createBackend(testSpec("builtin:nope"));
        QVERIFY(!created.isOk());
        QCOMPARE(created.status().code(), StatusCode::NotFound);
        QVERIFY(created.status().message().find("builtin:tiny-decoder") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestTorchScript)
#include "test_torchscript.moc"
