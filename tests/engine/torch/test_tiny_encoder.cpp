// builtin:tiny-encoder: shape of the output, seeded weights, parameter
// counts, and padding invariance (a sequence alone == the same sequence
// padded inside batches of other lengths).
#include "engine/torch/model_presets.h"
#include "model_test_util.h"

using namespace bp;
using namespace bp::testing;

class TestTinyEncoder : public QObject {
    Q_OBJECT
private slots:
    void infoAndOutputShape()
    {
        auto backend = createOrFail(testSpec("builtin:tiny-encoder"));
        QVERIFY(backend);
        const ModelInfo &info = backend->info();
        QCOMPARE(info.name, std::string("builtin:tiny-encoder"));
        QCOMPARE(info.device, std::string("cpu"));
        QVERIFY(!info.generative);
        auto shape = transformerPreset("test");
        QVERIFY(shape.isOk());
        QCOMPARE(info.parameters, encoderParameterCount(*shape));
        QCOMPARE(info.vocabSize, shape->vocab);

        std::mt19937 rng(1);
        std::vector<Request> reqs{makeRequest(randomTokens(rng, 5)), makeRequest(randomTokens(rng, 9))};
        auto out = runBatch(*backend, reqs);
        QCOMPARE(out.size(), std::size_t(2));
        for (const auto &r : out) {
            QVERIFY(r.status.isOk());
            QCOMPARE(r.values.size(), std::size_t(shape->classes));
            QVERIFY(r.tokens.empty());
        }
        QVERIFY(out[0].values != out[1].values);
    }

    void seedDeterminesWeights()
    {
        auto a = createOrFail(testSpec("builtin:tiny-encoder"));
        auto b = createOrFail(testSpec("builtin:tiny-encoder"));
        ModelSpec other = testSpec("builtin:tiny-encoder");
        other.seed = 8;
        auto c = createOrFail(other);
        QVERIFY(a && b && c);
        std::mt19937 rng(2);
        std::vector<Request> reqs{makeRequest(randomTokens(rng, 12))};
        const auto ra = runBatch(*a, reqs), rb = runBatch(*b, reqs), rc = runBatch(*c, reqs);
        QCOMPARE(ra[0].values, rb[0].values);
        QVERIFY(maxRelativeDifference(ra[0].values, rc[0].values) > 1e-3);
    }

    void paddingInvariance_data()
    {
        QTest::addColumn<int>("extraPadding");
        QTest::newRow("padded to the longest") << 0;
        QTest::newRow("policy pads 17 more (static)") << 17;
    }
    void paddingInvariance()
    {
        QFETCH(int, extraPadding);
        auto backend = createOrFail(testSpec("builtin:tiny-encoder"));
        QVERIFY(backend);
        std::mt19937 rng(3);
        const std::vector<int> lengths{1, 7, 30, 64, 3, 45};
        std::vector<Request> reqs;
        for (int n : lengths)
            reqs.push_back(makeRequest(randomTokens(rng, n)));
        const auto batched = runBatch(*backend, reqs, 64 + extraPadding);
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            const auto alone = runBatch(*backend, {reqs[i]});
            QVERIFY(batched[i].status.isOk());
            const double diff = maxRelativeDifference(batched[i].values, alone[0].values);
            QVERIFY2(diff < 1e-4, qPrintable(QStringLiteral("length %1: relative difference %2")
                                                 .arg(lengths[i])
                                                 .arg(diff)));
        }
    }

    void presetsAndParameterCounts()
    {
        auto gpt2 = transformerPreset("gpt2");
        QVERIFY(gpt2.isOk());
        QCOMPARE(decoderParameterCount(*gpt2), std::int64_t(124'439'808)); // GPT-2 small exactly
        auto small = transformerPreset("small");
        QVERIFY(small.isOk());
        QVERIFY(decoderParameterCount(*small) > 2'000'000 && decoderParameterCount(*small) < 6'000'000);
        auto unknown = transformerPreset("huge");
        QVERIFY(!unknown.isOk());
        QCOMPARE(unknown.status().code(), StatusCode::NotFound);
        QVERIFY(unknown.status().message().find("gpt2") != std::string::npos);

        ModelSpec spec = testSpec("builtin:tiny-encoder");
        spec.preset = "huge";
        auto created = createBackend(spec);
        QVERIFY(!created.isOk());
        QCOMPARE(created.status().code(), StatusCode::NotFound);
    }
};

QTEST_GUILESS_MAIN(TestTinyEncoder)
#include "test_tiny_encoder.moc"
