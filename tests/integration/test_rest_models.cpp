// The endpoint in front of the real libtorch built-ins (size preset "test",
// one thread): an encoder answers values (logits), a decoder generates
// tokens with a time to first token, and concurrent decodes share a batch.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QtTest>

#include <memory>
#include <vector>

class TestRestModels : public QObject {
    Q_OBJECT
private slots:
    void encoderAnswersValues()
    {
        HeadlessProcess p({"--model", "builtin:tiny-encoder", "--preset", "test", "--threads", "1", "--device", "cpu"});
        QVERIFY2(p.start(), qPrintable(p.output()));
        // an encoder opens in dynamic
        QCOMPARE(httpRequest(p.port(), "GET", "/v1/config").json().value("policy").toString(),
                 QStringLiteral("dynamic"));
        HttpResponse r = httpRequest(p.port(), "GET", "/v2/models/tiny-encoder");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("outputs").toArray().at(0).toObject().value("name").toString(),
                 QStringLiteral("output_values"));
        r = httpRequest(p.port(), "POST", "/v1/infer", toJson({{"text", "batching pays"}}));
        QCOMPARE(r.status, 200);
        const QJsonArray values = r.json().value("output").toObject().value("values").toArray();
        QVERIFY(!values.isEmpty());
        QVERIFY(r.json().value("timing").toObject().value("compute_us").toDouble() > 0);
        // max_new_tokens is for generative models only
        r = httpRequest(p.port(), "POST", "/v1/infer", inferBody({1, 2}, {{"max_new_tokens", 3}}));
        QCOMPARE(r.status, 400);
        // OIP: two rows, one FP32 row of values each
        r = httpRequest(p.port(), "POST", "/v2/models/tiny-encoder/infer",
                        R"({"inputs":[{"name":"input_ids","datatype":"INT64","shape":[2,4],"data":[1,2,3,4,5,6,7,8]}]})");
        QCOMPARE(r.status, 200);
        const QJsonObject out = r.json().value("outputs").toArray().at(0).toObject();
        QCOMPARE(out.value("name").toString(), QStringLiteral("output_values"));
        QCOMPARE(out.value("datatype").toString(), QStringLiteral("FP32"));
        QCOMPARE(out.value("shape").toArray().at(0).toInt(), 2);
        QCOMPARE(out.value("shape").toArray().at(1).toInt(), values.size());
        // too long for the preset (256 tokens)
        QCOMPARE(httpRequest(p.port(), "POST", "/v1/infer", toJson({{"text", QString(300, 'x')}})).status, 400);
        QVERIFY(p.stop(SIGTERM));
        QCOMPARE(p.exitCode(), 0);
    }

    void decoderGeneratesInBatches()
    {
        HeadlessProcess p({"--model", "builtin:tiny-decoder", "--preset", "test", "--threads", "1", "--device", "cpu"});
        QVERIFY2(p.start(), qPrintable(p.output()));
        const quint16 port = p.port();
        // a generative model opens in continuous
        QCOMPARE(httpRequest(port, "GET", "/v1/config").json().value("policy").toString(),
                 QStringLiteral("continuous"));
        HttpResponse r = httpRequest(port, "POST", "/v1/infer", toJson({{"text", "hello"}, {"max_new_tokens", 4}}));
        QCOMPARE(r.status, 200);
        const QJsonObject output = r.json().value("output").toObject();
        QCOMPARE(output.value("tokens").toArray().size(), 4);
        QVERIFY(output.value("text").isString());
        QVERIFY(r.json().value("timing").toObject().value("ttft_us").toDouble() > 0);

        QCOMPARE(putConfig(port, {{"policy", "static"}, {"static_batch_size", 3}}).status, 200);
        std::vector<std::unique_ptr<HttpConnection>> connections;
        for (int i = 0; i < 3; ++i) {
            connections.push_back(std::make_unique<HttpConnection>(port));
            connections.back()->send("POST", "/v1/infer", inferBody({1 + i, 2 + i, 3 + i}, {{"max_new_tokens", 2 + i}}));
        }
        for (int i = 0; i < 3; ++i) {
            const HttpResponse c = connections[std::size_t(i)]->read(60000);
            QCOMPARE(c.status, 200);
            QCOMPARE(c.json().value("batch").toObject().value("size").toInt(), 3);
            QCOMPARE(c.json().value("output").toObject().value("tokens").toArray().size(), 2 + i);
        }
        QVERIFY(p.stop(SIGTERM));
        QCOMPARE(p.exitCode(), 0);
    }

    void explicitConfigWinsOverTheDecodersDefault()
    {
        QTemporaryDir dir;
        const QString config = dir.filePath("dynamic.json");
        {
            QFile file(config);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(R"({"policy": "dynamic", "max_batch_size": 4})");
        }
        HeadlessProcess p({"--model", "builtin:tiny-decoder", "--preset", "test", "--threads", "1",
                           "--device", "cpu", "--config", config});
        QVERIFY2(p.start(), qPrintable(p.output()));
        const QJsonObject c = httpRequest(p.port(), "GET", "/v1/config").json();
        QCOMPARE(c.value("policy").toString(), QStringLiteral("dynamic"));
        QCOMPARE(c.value("max_batch_size").toInt(), 4);
        QVERIFY(p.stop(SIGTERM));
    }
};

QTEST_GUILESS_MAIN(TestRestModels)
#include "test_rest_models.moc"
