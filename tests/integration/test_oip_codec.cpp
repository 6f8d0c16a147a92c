// The Open Inference Protocol codec on its own (app/rest/oip_codec): a
// request's `shape` is checked against the data it carries before anything
// is sized from it. A 200-byte body that claims shape [4096, 8192] must not
// make the server thread reserve 128 MiB first.
//
// This executable replaces the global operator new to record the largest
// single allocation, so a reservation sized from the shape shows up even
// though the request is refused afterwards.
#include "app/rest/oip_codec.h"
#include "app/rest/v1_codec.h"

#include <QtTest>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::size_t> g_largestAllocation{0};

void *countedAllocate(std::size_t size)
{
    std::size_t seen = g_largestAllocation.load(std::memory_order_relaxed);
    while (size > seen && !g_largestAllocation.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
    }
    if (void *p = std::malloc(size ? size : 1))
        return p;
    throw std::bad_alloc();
}
} // namespace

void *operator new(std::size_t size)
{
    return countedAllocate(size);
}
void *operator new[](std::size_t size)
{
    return countedAllocate(size);
}
void operator delete(void *p) noexcept
{
    std::free(p);
}
void operator delete[](void *p) noexcept
{
    std::free(p);
}
void operator delete(void *p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete[](void *p, std::size_t) noexcept
{
    std::free(p);
}

using namespace bp;
using namespace bp::rest;

namespace {
ModelInfo echoLikeModel()
{
    ModelInfo m;
    m.name = "builtin:echo";
    m.vocabSize = 256;
    m.maxSequenceLength = 8192;
    return m;
}

QByteArray oipBody(const QByteArray &shape, const QByteArray &data)
{
    return R"({"inputs":[{"name":"input_ids","datatype":"INT64","shape":)" + shape + R"(,"data":)" + data +
           "}]}";
}
} // namespace

class TestOipCodec : public QObject {
    Q_OBJECT
private slots:
    void servedModelNames_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("served");
        QTest::newRow("built-in") << "builtin:tiny-decoder" << "builtin:tiny-decoder";
        QTest::newRow("torchscript") << "/models/bert.pt" << "bert";
        QTest::newRow("hf folder") << "hf:tests/fixtures/hf/llama" << "llama";
        QTest::newRow("hf folder, slash") << "hf:/models/Qwen2.5-0.5B/" << "Qwen2.5-0.5B";
        QTest::newRow("hf-config") << "hf-config:resources/configs/hf/qwen2-0.5b/config.json" << "qwen2-0.5b";
        QTest::newRow("hf-config, bare") << "hf-config:config.json" << "hf-config:config.json";
        QTest::newRow("other json") << "hf-config:shapes/llama-3-8b.json" << "llama-3-8b";
    }

    void servedModelNames()
    {
        QFETCH(QString, model);
        QFETCH(QString, served);
        bp::ModelInfo info;
        info.name = model.toStdString();
        QCOMPARE(QString::fromStdString(bp::rest::servedModelName(info)), served);
        QVERIFY(bp::rest::matchesModel(served.toStdString(), info));
    }

    void shapeIsCheckedBeforeAnythingIsReserved_data()
    {
        QTest::addColumn<QByteArray>("shape");
        QTest::addColumn<QByteArray>("data");
        QTest::addColumn<QString>("message");
        QTest::newRow("flat, 4096 x 8192") << QByteArray("[4096, 8192]") << QByteArray("[1, 2, 3]")
                                           << "shape [4096, 8192] needs 33554432 values, data has 3";
        QTest::newRow("nested, 4096 x 8192") << QByteArray("[4096, 8192]") << QByteArray("[[1, 2], [3, 4]]")
                                             << "shape [4096, 8192] needs 33554432 values, data has 4";
        QTest::newRow("one row of 8192")
            << QByteArray("[8192]") << QByteArray("[7]") << "shape [1, 8192] needs 8192 values, data has 1";
        QTest::newRow("data longer than the shape")
            << QByteArray("[1, 2]") << QByteArray("[1, 2, 3]") << "shape [1, 2] needs 2 values, data has 3";
    }
    void shapeIsCheckedBeforeAnythingIsReserved()
    {
        QFETCH(QByteArray, shape);
        QFETCH(QByteArray, data);
        QFETCH(QString, message);
        const QByteArray body = oipBody(shape, data);
        QVERIFY(body.size() < 200);
        const ModelInfo model = echoLikeModel();

        g_largestAllocation = 0;
        auto parsed = parseOipInfer({body.constData(), std::size_t(body.size())}, model, TimePoint{});
        const std::size_t largest = g_largestAllocation.load();

        QVERIFY(!parsed);
        QCOMPARE(parsed.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(QString::fromStdString(parsed.status().message()).contains(message),
                 parsed.status().message().c_str());
        // Parsing a body this small needs a few KiB at most; sizing a buffer
        // from the claimed shape would take up to 128 MiB.
        QVERIFY2(largest < 64 * 1024, qPrintable(QStringLiteral("largest allocation %1 bytes").arg(largest)));
    }

    void matchingShapeStillParses_data()
    {
        QTest::addColumn<QByteArray>("shape");
        QTest::addColumn<QByteArray>("data");
        QTest::newRow("flat") << QByteArray("[2, 3]") << QByteArray("[1, 2, 3, 4, 5, 6]");
        QTest::newRow("nested") << QByteArray("[2, 3]") << QByteArray("[[1, 2, 3], [4, 5, 6]]");
        QTest::newRow("one row") << QByteArray("[6]") << QByteArray("[1, 2, 3, 4, 5, 6]");
    }
    void matchingShapeStillParses()
    {
        QFETCH(QByteArray, shape);
        QFETCH(QByteArray, data);
        const QByteArray body = oipBody(shape, data);
        auto parsed =
            parseOipInfer({body.constData(), std::size_t(body.size())}, echoLikeModel(), TimePoint{});
        QVERIFY2(parsed, parsed ? "" : parsed.status().message().c_str());
        int total = 0;
        for (const Request &r : parsed->rows)
            total += int(r.tokens.size());
        QCOMPARE(total, 6);
        QCOMPARE(parsed->rows.back().tokens.back(), TokenId(6));
    }

    void nestedRowsOfTheWrongLengthAreRefused()
    {
        // Same number of values as the shape, split differently.
        const QByteArray body = oipBody("[2, 3]", "[[1, 2], [3, 4, 5, 6]]");
        auto parsed =
            parseOipInfer({body.constData(), std::size_t(body.size())}, echoLikeModel(), TimePoint{});
        QVERIFY(!parsed);
        QVERIFY2(QString::fromStdString(parsed.status().message()).contains("does not match the shape"),
                 parsed.status().message().c_str());
    }

    // One µs conversion (bp::toMicros, engine/core/clock.h) for
    // every writer. The REST codecs had their own, rounded to 0.1 µs, so the
    // same 1234 ns read 1.2 µs over REST and 1.234 µs in replay and config JSON.
    void timingsUseTheEnginesMicroseconds()
    {
        Response r;
        r.requestId = 7;
        r.timing.queueWait = std::chrono::nanoseconds(1234);
        r.timing.compute = std::chrono::nanoseconds(56);
        r.timing.total = std::chrono::nanoseconds(1'290);
        const nlohmann::json v1 = v1ResponseJson(r, "m");
        QCOMPARE(v1["timing"]["queue_us"].get<double>(), toMicros(r.timing.queueWait));
        QCOMPARE(v1["timing"]["compute_us"].get<double>(), 0.056);
        QCOMPARE(v1["timing"]["total_us"].get<double>(), 1.29);
        const nlohmann::json oip = oipInferResponse("m", OipInferRequest{}, {r});
        QCOMPARE(oip["parameters"]["queue_us"].get<double>(), 1.234);
        QCOMPARE(oip["parameters"]["compute_us"].get<double>(), toMicros(r.timing.compute));
    }
};

QTEST_GUILESS_MAIN(TestOipCodec)
#include "test_oip_codec.moc"
