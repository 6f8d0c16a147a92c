// TorchScript models from a file: the fixture made by
// tools/make_torchscript_fixture.py at build time loads, is padding-invariant,
// and every bad file gives a clear error naming the path and the reason.
#include "model_test_util.h"

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
        QVERIFY2(s.message().find("not a loadable TorchScript file") != std::string::npos, s.message().c_str());
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

    void wrongSignature()
    {
        const std::string path = kFixtures + "/wrong_signature.pt";
        const Status s = loadError(path);
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY(s.message().find(path) != std::string::npos);
        QVERIFY2(s.message().find("wrong signature") != std::string::npos, s.message().c_str());
        QVERIFY2(s.message().find("forward(") != std::string::npos, s.message().c_str()); // shows what it found
    }

    void wrongReturnType()
    {
        const Status s = loadError(kFixtures + "/wrong_return.pt");
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY2(s.message().find("wrong signature") != std::string::npos, s.message().c_str());
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
