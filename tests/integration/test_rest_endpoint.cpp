// The REST endpoint of the real `batchpilot --headless` binary
// (builtin:echo): every route, and every error status with its JSON body.
// Batching, disconnects, auth and shutdown: test_rest_batching.cpp and
// test_rest_lifecycle.cpp.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QtTest>

class TestRestEndpoint : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        m_server = std::make_unique<HeadlessProcess>(QStringList{"--model", "builtin:echo"});
        QVERIFY2(m_server->start(), qPrintable(m_server->output()));
        m_port = m_server->port();
        QCOMPARE(m_server->listeningLine(), QStringLiteral("listening on http://127.0.0.1:%1").arg(m_port));
    }
    void init()
    {
        // Every test starts from the same knobs: dynamic, 1 ms delay.
        const HttpResponse r = putConfig(m_port, {{"policy", "dynamic"},
                                                  {"max_queue_delay_us", 1000},
                                                  {"queue_capacity", 4096},
                                                  {"max_batch_size", 16}});
        QCOMPARE(r.status, 200);
    }
    void cleanupTestCase()
    {
        QVERIFY(m_server->stop(SIGTERM));
        QCOMPARE(m_server->exitStatus(), QProcess::NormalExit);
        QCOMPARE(m_server->exitCode(), 0);
    }

    void health()
    {
        HttpResponse r = httpRequest(m_port, "GET", "/v2/health/live");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("live").toBool(), true);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        r = httpRequest(m_port, "GET", "/v2/health/ready");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("ready").toBool(), true);
    }

    // Served without a token on loopback: only Host values naming loopback
    // are answered (a DNS-rebinding page sends its own host name).
    void hostHeaderChecked_data()
    {
        QTest::addColumn<QByteArray>("host");
        QTest::addColumn<int>("status");
        const QByteArray port = QByteArray::number(m_port);
        QTest::newRow("127.0.0.1:port") << "127.0.0.1:" + port << 200;
        QTest::newRow("127.0.0.1") << QByteArray("127.0.0.1") << 200;
        QTest::newRow("localhost:port") << "localhost:" + port << 200;
        QTest::newRow("LocalHost") << QByteArray("LocalHost") << 200;
        QTest::newRow("[::1]:port") << "[::1]:" + port << 200;
        QTest::newRow("[::1]") << QByteArray("[::1]") << 200;
        QTest::newRow("other port (a forwarder)") << QByteArray("localhost:9999") << 200;
        QTest::newRow("rebinding name") << "rebind.example:" + port << 403;
        QTest::newRow("rebinding name, no port") << QByteArray("rebind.example") << 403;
        QTest::newRow("localhost as a subdomain") << QByteArray("localhost.rebind.example") << 403;
        QTest::newRow("loopback as a subdomain") << QByteArray("127.0.0.1.nip.io") << 403;
        QTest::newRow("other loopback address") << QByteArray("127.0.0.2") << 403;
        QTest::newRow("bad port") << QByteArray("localhost:http") << 403;
        QTest::newRow("junk after [::1]") << QByteArray("[::1]x") << 403;
    }
    void hostHeaderChecked()
    {
        QFETCH(QByteArray, host);
        QFETCH(int, status);
        for (const QByteArray &path : {QByteArray("/v1/config"), QByteArray("/v2/health/live")}) {
            HttpConnection c(m_port);
            c.send("GET", path, {}, {{"Host", host}});
            const HttpResponse r = c.read();
            QCOMPARE(r.status, status);
            if (status == 403) {
                const QString error = r.json().value("error").toString();
                QVERIFY2(error.contains("DNS rebinding") && error.contains(QString::fromLatin1(host)),
                         qPrintable(error));
            }
        }
        // Writes are refused as well, and change nothing.
        HttpConnection c(m_port);
        c.send("PUT", "/v1/config", R"({"max_batch_size": 7})", {{"Host", host}});
        QCOMPARE(c.read().status, status == 200 ? 200 : 403);
        const HttpResponse config = httpRequest(m_port, "GET", "/v1/config");
        QCOMPARE(config.json().value("max_batch_size").toInt(), status == 200 ? 7 : 16);
    }

    void serverMetadata()
    {
        const HttpResponse r = httpRequest(m_port, "GET", "/v2");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("name").toString(), QStringLiteral("batchpilot"));
        QVERIFY(!r.json().value("version").toString().isEmpty());
        QVERIFY(r.json().value("extensions").isArray());
    }

    void modelMetadata_data()
    {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<int>("status");
        QTest::newRow("full name") << QByteArray("/v2/models/builtin:echo") << 200;
        QTest::newRow("short name") << QByteArray("/v2/models/echo") << 200;
        QTest::newRow("version 1") << QByteArray("/v2/models/echo/versions/1") << 200;
        QTest::newRow("unknown model") << QByteArray("/v2/models/resnet") << 404;
        QTest::newRow("unknown version") << QByteArray("/v2/models/echo/versions/2") << 404;
    }
    void modelMetadata()
    {
        QFETCH(QByteArray, path);
        QFETCH(int, status);
        const HttpResponse r = httpRequest(m_port, "GET", path);
        QCOMPARE(r.status, status);
        if (status == 200) {
            QCOMPARE(r.json().value("name").toString(), QStringLiteral("builtin:echo"));
            QCOMPARE(r.json().value("inputs").toArray().at(0).toObject().value("name").toString(),
                     QStringLiteral("input_ids"));
            QCOMPARE(r.json().value("inputs").toArray().at(0).toObject().value("datatype").toString(),
                     QStringLiteral("INT64"));
        } else {
            QVERIFY(r.json().value("error").isString());
        }
    }

    void modelReady()
    {
        HttpResponse r = httpRequest(m_port, "GET", "/v2/models/echo/ready");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("ready").toBool(), true);
        r = httpRequest(m_port, "GET", "/v2/models/other/ready");
        QCOMPARE(r.status, 404);
    }

    void v1InferInputIds()
    {
        const HttpResponse r = httpRequest(m_port, "POST", "/v1/infer", inferBody({1, 2, 3}));
        QCOMPARE(r.status, 200);
        const QJsonObject o = r.json();
        QCOMPARE(o.value("model").toString(), QStringLiteral("builtin:echo"));
        QCOMPARE(o.value("output").toObject().value("tokens").toArray(), QJsonArray({1, 2, 3}));
        const QJsonObject timing = o.value("timing").toObject();
        for (const char *key : {"queue_us", "compute_us", "total_us"})
            QVERIFY2(timing.value(key).isDouble(), key);
        QVERIFY(timing.value("total_us").toDouble() >= timing.value("queue_us").toDouble());
        const QJsonObject batch = o.value("batch").toObject();
        for (const char *key : {"id", "size", "padded_length", "bucket", "dispatch_reason"})
            QVERIFY2(batch.contains(key), key);
        QVERIFY(batch.value("size").toInt() >= 1);
        QCOMPARE(batch.value("padded_length").toInt(), 3);
    }

    void v1InferText()
    {
        const HttpResponse r =
            httpRequest(m_port, "POST", "/v1/infer", toJson({{"text", "hello"}, {"max_new_tokens", 3}}));
        QCOMPARE(r.status, 200);
        const QJsonObject out = r.json().value("output").toObject();
        // builtin:echo generates from a hash of the sequence (engine/model/echo_backend.cpp)
        QCOMPARE(out.value("tokens").toArray(), QJsonArray({105, 102, 112}));
        QCOMPARE(out.value("text").toString(), QStringLiteral("ifp"));
    }

    void oipInfer_data()
    {
        QTest::addColumn<QByteArray>("data");
        QTest::newRow("flat") << QByteArray("[1,2,3,4,5,6]");
        QTest::newRow("nested") << QByteArray("[[1,2,3],[4,5,6]]");
    }
    void oipInfer()
    {
        QFETCH(QByteArray, data);
        const QByteArray body =
            R"({"id":"req-7","inputs":[{"name":"input_ids","datatype":"INT64","shape":[2,3],"data":)" + data +
            "}]}";
        const HttpResponse r = httpRequest(m_port, "POST", "/v2/models/echo/infer", body);
        QCOMPARE(r.status, 200);
        const QJsonObject o = r.json();
        QCOMPARE(o.value("id").toString(), QStringLiteral("req-7"));
        QCOMPARE(o.value("model_name").toString(), QStringLiteral("builtin:echo"));
        const QJsonObject out = o.value("outputs").toArray().at(0).toObject();
        QCOMPARE(out.value("name").toString(), QStringLiteral("output_ids"));
        QCOMPARE(out.value("datatype").toString(), QStringLiteral("INT64"));
        QCOMPARE(out.value("shape").toArray(), QJsonArray({2, 3}));
        QCOMPARE(out.value("data").toArray(), QJsonArray({1, 2, 3, 4, 5, 6}));
        QVERIFY(o.value("parameters").toObject().contains("total_us"));
    }

    void oipParameters()
    {
        const QByteArray body =
            R"({"parameters":{"max_new_tokens":2,"priority":3,"timeout":5000000},)"
            R"("inputs":[{"name":"input_ids","datatype":"INT64","shape":[2,3],"data":[1,2,3,4,5,6]}]})";
        const HttpResponse r = httpRequest(m_port, "POST", "/v2/models/builtin:echo/versions/1/infer", body);
        QCOMPARE(r.status, 200);
        const QJsonObject out = r.json().value("outputs").toArray().at(0).toObject();
        QCOMPARE(out.value("shape").toArray(), QJsonArray({2, 2}));
        QCOMPARE(out.value("data").toArray(), QJsonArray({112, 104, 115, 103})); // echo's fake decoder
    }

    void badRequests_data()
    {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("message");
        const QByteArray v1 = "/v1/infer", v2 = "/v2/models/echo/infer";
        auto oip = [](const QByteArray &tensor) { return R"({"inputs":[)" + tensor + "]}"; };
        QTest::newRow("malformed json")
            << QByteArray("POST") << v1 << QByteArray("{\"input_ids\": [1,") << "not valid JSON";
        QTest::newRow("not an object")
            << QByteArray("POST") << v1 << QByteArray("[1,2]") << "must be a JSON object";
        QTest::newRow("empty body") << QByteArray("POST") << v1 << QByteArray() << "body is empty";
        QTest::newRow("ids not array")
            << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":"abc"})") << "must be an array";
        QTest::newRow("ids not integers")
            << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[1.5]})") << "must be an integer";
        QTest::newRow("empty input") << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[]})")
                                     << "empty";
        QTest::newRow("empty text") << QByteArray("POST") << v1 << QByteArray(R"({"text":""})") << "empty";
        QTest::newRow("id above vocab")
            << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[1,256]})") << "vocabulary";
        QTest::newRow("negative id") << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[-1]})")
                                     << "vocabulary";
        QTest::newRow("text wrong type")
            << QByteArray("POST") << v1 << QByteArray(R"({"text":5})") << "must be a string";
        QTest::newRow("both inputs") << QByteArray("POST") << v1
                                     << QByteArray(R"({"text":"a","input_ids":[1]})") << "not both";
        QTest::newRow("no input") << QByteArray("POST") << v1 << QByteArray(R"({"max_new_tokens":1})")
                                  << "required";
        QTest::newRow("unknown field")
            << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[1],"max_tokens":2})")
            << "unknown field";
        QTest::newRow("max_new_tokens type")
            << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[1],"max_new_tokens":"2"})")
            << "max_new_tokens";
        QTest::newRow("negative max_new_tokens")
            << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[1],"max_new_tokens":-2})")
            << "negative";
        QTest::newRow("timeout type")
            << QByteArray("POST") << v1 << QByteArray(R"({"input_ids":[1],"timeout_ms":"soon"})")
            << "timeout_ms";
        QByteArray tooLong = "[0";
        for (int i = 1; i < 8193; ++i)
            tooLong += ",1";
        QTest::newRow("too long") << QByteArray("POST") << v1
                                  << QByteArray("{\"input_ids\":" + tooLong + "]}") << "at most 8192";

        QTest::newRow("oip malformed")
            << QByteArray("POST") << v2 << QByteArray("{inputs") << "not valid JSON";
        QTest::newRow("oip no inputs") << QByteArray("POST") << v2 << QByteArray("{}") << "'inputs'";
        QTest::newRow("oip unknown input")
            << QByteArray("POST") << v2
            << oip(R"({"name":"attention_mask","datatype":"INT64","shape":[1,1],"data":[1]})")
            << "unknown input";
        QTest::newRow("oip datatype")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"FP32","shape":[1,2],"data":[1,2]})") << "datatype";
        QTest::newRow("oip shape mismatch")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"INT64","shape":[2,2],"data":[1,2,3]})")
            << "needs 4 values";
        QTest::newRow("oip nested mismatch")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"INT64","shape":[2,2],"data":[[1,2,3],[4]]})")
            << "does not match the shape";
        QTest::newRow("oip rank 3")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"INT64","shape":[1,1,1],"data":[1]})") << "shape";
        QTest::newRow("oip empty rows")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"INT64","shape":[1,0],"data":[]})") << "empty";
        QTest::newRow("oip vocab")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"INT64","shape":[1,2],"data":[1,300]})") << "vocabulary";
        QTest::newRow("oip string data")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"INT64","shape":[1,1],"data":["a"]})") << "integers";
        QTest::newRow("oip binary extension")
            << QByteArray("POST") << v2
            << oip(R"({"name":"input_ids","datatype":"INT64","shape":[1,1],"parameters":{"binary_data_size":8}})")
            << "binary";
        QTest::newRow("oip parameter type")
            << QByteArray("POST") << v2
            << QByteArray(
                   R"({"parameters":{"max_new_tokens":"x"},"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":[1]}]})")
            << "max_new_tokens";

        QTest::newRow("config malformed")
            << QByteArray("PUT") << QByteArray("/v1/config") << QByteArray("{policy") << "not valid JSON";
        QTest::newRow("config out of range") << QByteArray("PUT") << QByteArray("/v1/config")
                                             << QByteArray(R"({"max_batch_size":0})") << "max_batch_size";
        QTest::newRow("config unknown policy") << QByteArray("PUT") << QByteArray("/v1/config")
                                               << QByteArray(R"({"policy":"fancy"})") << "unknown policy";
        QTest::newRow("config wrong type") << QByteArray("PUT") << QByteArray("/v1/config")
                                           << QByteArray(R"({"max_batch_size":"8"})") << "must be an integer";
        QTest::newRow("config unknown field") << QByteArray("PUT") << QByteArray("/v1/config")
                                              << QByteArray(R"({"batch":8})") << "unknown config field";
    }
    void badRequests()
    {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, body);
        QFETCH(QString, message);
        const HttpResponse r = httpRequest(m_port, method, path, body);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        const QString error = r.json().value("error").toString();
        QVERIFY2(error.contains(message), qPrintable(error));
    }

    void notFound_data()
    {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("path");
        QTest::newRow("unknown route") << QByteArray("GET") << QByteArray("/nope");
        QTest::newRow("unknown v2 route") << QByteArray("GET") << QByteArray("/v2/models/echo/explain");
        QTest::newRow("infer unknown model") << QByteArray("POST") << QByteArray("/v2/models/bert/infer");
        QTest::newRow("v1 prefix") << QByteArray("GET") << QByteArray("/v1");
    }
    void notFound()
    {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, path);
        const HttpResponse r =
            httpRequest(m_port, method, path, method == "POST" ? inferBody({1}) : QByteArray());
        QCOMPARE(r.status, 404);
        QVERIFY(r.json().value("error").isString());
    }

    void methodNotAllowed_data()
    {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("allow");
        QTest::newRow("delete config")
            << QByteArray("DELETE") << QByteArray("/v1/config") << QByteArray("GET, PUT");
        QTest::newRow("get infer") << QByteArray("GET") << QByteArray("/v1/infer") << QByteArray("POST");
        QTest::newRow("post metrics") << QByteArray("POST") << QByteArray("/metrics") << QByteArray("GET");
        QTest::newRow("put health") << QByteArray("PUT") << QByteArray("/v2/health/live")
                                    << QByteArray("GET");
        QTest::newRow("get oip infer")
            << QByteArray("GET") << QByteArray("/v2/models/echo/infer") << QByteArray("POST");
    }
    void methodNotAllowed()
    {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, allow);
        const HttpResponse r = httpRequest(m_port, method, path);
        QCOMPARE(r.status, 405);
        QCOMPARE(r.header("allow"), allow);
        QVERIFY(r.json().value("error").isString());
    }

    void payloadTooLarge()
    {
        // Headers first, body after: the answer comes from the headers alone.
        const qint64 limit = 1 << 20;
        {
            HttpConnection c(m_port);
            c.send("POST", "/v1/infer", QByteArray(limit + 1, 'a'));
            const HttpResponse r = c.read();
            QCOMPARE(r.status, 413);
            QVERIFY(r.json().value("error").toString().contains("larger than the limit"));
            QVERIFY(c.waitForClose());
        }
        {
            // curl's way for big bodies: the 413 arrives before any body is sent.
            HttpConnection c(m_port);
            c.sendRaw("POST /v1/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50000000\r\nExpect: "
                      "100-continue\r\n\r\n");
            const HttpResponse r = c.read();
            QCOMPARE(r.status, 413);
        }
        {
            // At the limit the body is parsed (and this one is too long for the model).
            // (no raw string here: moc 6.4 mis-lexes one that ends in a quote)
            QByteArray body = "{\"text\":\"" + QByteArray(limit - 11, 'a') + "\"}";
            QCOMPARE(body.size(), limit);
            const HttpResponse r = httpRequest(m_port, "POST", "/v1/infer", body);
            QCOMPARE(r.status, 400);
        }
        // The server keeps serving.
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({7})).status, 200);
    }

    void expectContinueWithinLimit()
    {
        HttpConnection c(m_port);
        const QByteArray body = inferBody({5, 6});
        c.sendRaw("POST /v1/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
                  QByteArray::number(body.size()) + "\r\nExpect: 100-continue\r\n\r\n");
        c.sendRaw(body);
        const HttpResponse r = c.read(); // skips the interim 100
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("output").toObject().value("tokens").toArray(), QJsonArray({5, 6}));
    }

    void chunkedBodyNeedsLength()
    {
        HttpConnection c(m_port);
        c.sendRaw("POST /v1/infer HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: "
                  "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
        QCOMPARE(c.read().status, 411);
    }

    void queueFull()
    {
        // A static policy that waits for 4, and room for one request.
        QCOMPARE(
            putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 4}, {"queue_capacity", 1}}).status,
            200);
        HttpConnection first(m_port);
        first.send("POST", "/v1/infer", inferBody({1}));
        QVERIFY(waitForQueueDepth(m_port, 1));
        // Refused once it has waited 500 ms (admission wait) for room.
        const HttpResponse rejected = httpRequest(m_port, "POST", "/v1/infer", inferBody({2}));
        QCOMPARE(rejected.status, 429);
        QCOMPARE(rejected.header("retry-after"), QByteArray("1"));
        QVERIFY(rejected.json().value("error").toString().contains("queue is full"));
        // OIP rows are refused the same way.
        const QByteArray oip =
            R"({"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":[3]}]})";
        QCOMPARE(httpRequest(m_port, "POST", "/v2/models/echo/infer", oip).status, 429);
        // Back to dynamic: the queued request runs and is answered.
        QCOMPARE(putConfig(m_port, {{"policy", "dynamic"}, {"queue_capacity", 4096}}).status, 200);
        const HttpResponse r = first.read();
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("output").toObject().value("tokens").toArray(), QJsonArray({1}));
    }

    void deadlineExceeded()
    {
        // Nothing will fill a static batch of 4: the deadline passes in the queue.
        QCOMPARE(putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 4}}).status, 200);
        HttpResponse r = httpRequest(m_port, "POST", "/v1/infer", inferBody({1}, {{"timeout_ms", 20}}));
        QCOMPARE(r.status, 504);
        QVERIFY(r.json().value("error").toString().contains("deadline"));
        // Already passed at submission.
        r = httpRequest(m_port, "POST", "/v1/infer", inferBody({1}, {{"timeout_ms", 0}}));
        QCOMPARE(r.status, 504);
        // OIP's timeout parameter (microseconds).
        r = httpRequest(
            m_port, "POST", "/v2/models/echo/infer",
            R"({"parameters":{"timeout":20000},"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":[1]}]})");
        QCOMPARE(r.status, 504);
        QCOMPARE(queueDepth(m_port), 0);
    }

    void getConfigAndStats()
    {
        HttpResponse r = httpRequest(m_port, "GET", "/v1/config");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("policy").toString(), QStringLiteral("dynamic"));
        QCOMPARE(r.json().value("max_queue_delay_us").toInt(), 1000);
        r = httpRequest(m_port, "GET", "/v1/stats");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("model").toString(), QStringLiteral("builtin:echo"));
        QCOMPARE(r.json().value("dtype").toString(), QStringLiteral("float32"));
        QCOMPARE(r.json().value("kv_bytes_per_token").toInt(-1), 0);
        QVERIFY(r.json().value("completed").toInt() > 0);
        QVERIFY(r.json().value("window").isObject());
        // PUT /v1/config is recorded in the session's history as coming from REST.
        const QJsonArray history = r.json().value("config_history").toArray();
        QVERIFY(history.size() > 1);
        QCOMPARE(history.last().toObject().value("origin").toString(), QStringLiteral("rest"));
    }

    void sessionReport_data()
    {
        QTest::addColumn<QByteArray>("format");
        QTest::addColumn<QByteArray>("contentType");
        QTest::addColumn<QByteArray>("startsWith");
        QTest::newRow("json") << QByteArray("json") << QByteArray("application/json") << QByteArray("{");
        QTest::newRow("html") << QByteArray("html") << QByteArray("text/html")
                              << QByteArray("<!DOCTYPE html>");
        QTest::newRow("pdf") << QByteArray("pdf") << QByteArray("application/pdf") << QByteArray("%PDF-");
    }
    void sessionReport()
    {
        // The headless server records into a fresh database: its own live
        // session is number 1. Serve a little so the report has figures.
        for (int i = 0; i < 5; ++i)
            QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({1, 2, 3})).status, 200);
        QFETCH(QByteArray, format);
        QFETCH(QByteArray, contentType);
        QFETCH(QByteArray, startsWith);
        const HttpResponse r = httpRequest(m_port, "GET", "/v1/sessions/1/report?format=" + format);
        if (!BATCHPILOT_HAS_GUI && format == "pdf") { // the headless build: no Qt Gui, no PDF writer
            QCOMPARE(r.status, 501);
            QCOMPARE(r.json().value("error").toString(),
                     QStringLiteral("this build has no Qt Gui (BATCHPILOT_GUI=OFF): PDF reports need it; HTML "
                                    "and JSON work"));
            return;
        }
        QCOMPARE(r.status, 200);
        QVERIFY2(r.header("content-type").startsWith(contentType), r.header("content-type").constData());
        QVERIFY2(r.body.trimmed().startsWith(startsWith), r.body.left(40).constData());
        if (format == "json")
            QVERIFY(r.body.contains("\"session\""));
    }
    void sessionReportErrors_data()
    {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<int>("status");
        QTest::newRow("unknown session") << QByteArray("/v1/sessions/999999/report?format=json") << 404;
        QTest::newRow("unknown format") << QByteArray("/v1/sessions/1/report?format=xml") << 400;
        QTest::newRow("id not a number") << QByteArray("/v1/sessions/abc/report") << 400;
        QTest::newRow("id zero") << QByteArray("/v1/sessions/0/report") << 400;
        QTest::newRow("no id") << QByteArray("/v1/sessions//report") << 404;
    }
    void sessionReportErrors()
    {
        QFETCH(QByteArray, path);
        QFETCH(int, status);
        const HttpResponse r = httpRequest(m_port, "GET", path);
        QCOMPARE(r.status, status);
        QVERIFY2(r.json().value("error").isString(), r.body.constData());
        QCOMPARE(httpRequest(m_port, "POST", "/v1/sessions/1/report").status, 405);
    }

    // Generation under policy `continuous` shows in
    // /v1/stats (TPOT, ITL, goodput, steps) and /metrics (the histograms,
    // gauges and counters of docs/rest.md), judged against the goodput SLO.
    void tokenMetricsInStatsAndMetrics()
    {
        QCOMPARE(
            putConfig(m_port, {{"policy", "continuous"}, {"goodput", QJsonObject{{"e2e_us", 60'000'000}}}})
                .status,
            200);
        for (int i = 0; i < 4; ++i) {
            const HttpResponse r =
                httpRequest(m_port, "POST", "/v1/infer", inferBody({1, 2, 3 + i}, {{"max_new_tokens", 5}}));
            QCOMPARE(r.status, 200);
        }
        HttpResponse r = httpRequest(m_port, "GET", "/v1/stats");
        QCOMPARE(r.status, 200);
        const QJsonObject all = r.json().value("cumulative").toObject();
        QVERIFY(all.value("time_per_output_token").toObject().value("count").toInt() >= 4);
        QVERIFY(all.value("inter_token_latency").toObject().value("count").toInt() >= 16);
        QVERIFY(all.value("steps").toInt() >= 5);
        QVERIFY(all.value("step_tokens").toInt() >= 4 * 3 + 4 * 4);
        QVERIFY(all.value("good_completed").toInt() >= 4); // within a minute end to end
        QCOMPARE(all.value("preemptions").toInt(), 0);
        const QJsonObject window = r.json().value("window").toObject();
        for (const char *key :
             {"time_per_output_token", "inter_token_latency", "goodput_per_s", "tokens_per_step"})
            QVERIFY2(window.contains(key), key);
        for (const char *key :
             {"running_sequences", "waiting_sequences", "kv_tokens", "kv_capacity_tokens", "kv_usage_ratio"})
            QVERIFY2(r.json().contains(key), key);
        QCOMPARE(r.json().value("running_sequences").toInt(), 0); // every request answered

        r = httpRequest(m_port, "GET", "/metrics");
        QCOMPARE(r.status, 200);
        QVERIFY(metricValue(r.body, "batchpilot_time_per_output_token_seconds_count") >= 4);
        QVERIFY(metricValue(r.body, "batchpilot_inter_token_latency_seconds_bucket{le=\"+Inf\"}") >= 16);
        QVERIFY(metricValue(r.body, "batchpilot_time_to_first_token_seconds_count") >= 4);
        QVERIFY(metricValue(r.body, "batchpilot_steps_total") >= 5);
        QVERIFY(metricValue(r.body, "batchpilot_step_tokens_total") >= 28);
        QVERIFY(metricValue(r.body, "batchpilot_goodput_requests_total") >= 4);
        QCOMPARE(metricValue(r.body, "batchpilot_preemptions_total"), 0.0);
        QCOMPARE(metricValue(r.body, "batchpilot_running_sequences"), 0.0);
        QCOMPARE(metricValue(r.body, "batchpilot_config_goodput_e2e_seconds"), 60.0);
        for (const char *family : {"batchpilot_waiting_sequences", "batchpilot_kv_cache_tokens",
                                   "batchpilot_kv_cache_usage_ratio", "batchpilot_tokens_per_step"})
            QVERIFY2(metricValue(r.body, family) >= 0, family);
        QCOMPARE(putConfig(m_port, {{"goodput", QJsonObject{{"e2e_us", 0}}}}).status, 200);
    }

    // Every counter checked here moves because of what this test does
    // itself, compared before and after, so it passes alone, in any order
    // and under any load. (It used to count the queue_full
    // answers of queueFull(), which reach the engine only while the
    // frontend's cached queue capacity is still stale, a matter of timing.)
    void metricsText()
    {
        const QByteArray before = httpRequest(m_port, "GET", "/metrics").body;
        auto grew = [&before](const QByteArray &after, const QByteArray &sample) {
            return std::max(0.0, metricValue(after, sample)) - std::max(0.0, metricValue(before, sample));
        };
        // ok
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({1})).status, 200);
        // deadline_exceeded: a deadline that has passed when the request is submitted.
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({1}, {{"timeout_ms", 0}})).status, 504);
        // queue_full from Engine::submit itself: two OIP rows for a queue with
        // room for one, while a static batch of 4 keeps the first row queued.
        // A call with more rows than the capacity always goes to the engine,
        // whatever capacity the frontend has cached, and the second row is refused.
        QCOMPARE(
            putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 4}, {"queue_capacity", 1}}).status,
            200);
        HttpConnection twoRows(m_port);
        twoRows.send("POST", "/v2/models/echo/infer",
                     R"({"inputs":[{"name":"input_ids","datatype":"INT64","shape":[2,1],"data":[1,2]}]})");
        QVERIFY(waitForQueueDepth(m_port, 1));
        QCOMPARE(putConfig(m_port, {{"policy", "dynamic"}, {"queue_capacity", 4096}}).status, 200);
        const HttpResponse refused = twoRows.read();
        QCOMPARE(refused.status, 429);
        QVERIFY2(refused.json().value("error").toString().contains("row 1"), refused.body.constData());
        // 413 from the connection guard.
        {
            HttpConnection big(m_port);
            big.send("POST", "/v1/infer", QByteArray((1 << 20) + 1, 'a'));
            QCOMPARE(big.read().status, 413);
        }

        const HttpResponse r = httpRequest(m_port, "GET", "/metrics");
        QCOMPARE(r.status, 200);
        QVERIFY(r.header("content-type").startsWith("text/plain; version=0.0.4"));
        QVERIFY(grew(r.body, "batchpilot_requests_total{status=\"ok\"}") >= 2); // the request, row 0
        QVERIFY(grew(r.body, "batchpilot_requests_total{status=\"queue_full\"}") >= 1);
        QVERIFY(grew(r.body, "batchpilot_requests_total{status=\"deadline_exceeded\"}") >= 1);
        QVERIFY(grew(r.body, "batchpilot_http_responses_total{code=\"413\"}") >= 1);
        QVERIFY(grew(r.body, "batchpilot_http_responses_total{code=\"429\"}") >= 1);
        QCOMPARE(metricValue(r.body, "batchpilot_config_policy{policy=\"dynamic\"}"), 1.0);
        QCOMPARE(metricValue(r.body, "batchpilot_config_max_queue_delay_seconds"), 0.001);
        QCOMPARE(metricValue(r.body, "batchpilot_http_requests_in_flight"), 0.0);
        for (const char *family :
             {"batchpilot_request_duration_seconds_bucket{le=\"+Inf\"}",
              "batchpilot_queue_wait_seconds_count", "batchpilot_compute_seconds_sum",
              "batchpilot_batch_size_count", "batchpilot_queue_depth", "batchpilot_padding_efficiency_ratio",
              "batchpilot_utilization_ratio", "batchpilot_trace_dropped_rows_total"})
            QVERIFY2(metricValue(r.body, family) >= 0, family);
    }

private:
    std::unique_ptr<HeadlessProcess> m_server;
    quint16 m_port = 0;
};

QTEST_GUILESS_MAIN(TestRestEndpoint)
#include "test_rest_endpoint.moc"
