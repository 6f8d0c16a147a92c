#include "engine/config/config_json.h"

#include <QtTest>

using namespace bp;
using nlohmann::json;

class TestConfigJson : public QObject {
    Q_OBJECT
private slots:
    void roundTrip()
    {
        BatchingConfig c;
        c.policy = PolicyKind::Bucketed;
        c.maxBatchSize = 48;
        c.maxQueueDelay = std::chrono::microseconds(2500);
        c.bucketEdges = {32, 64};
        c.adaptiveDelay.enabled = true;
        c.adaptiveDelay.fill = 0.5;
        c.slo.enabled = true;
        c.slo.p99Target = std::chrono::milliseconds(25);
        c.hybrid.staticSizes = {4, 12};
        c.cache.enabled = true;
        c.cache.maxBytes = 4096;
        c.memoryBatchLimit = 8;
        auto back = configFromJson(toJson(c));
        QVERIFY(back);
        QVERIFY(*back == c);
    }

    // A simulated server's scheduler model travels with the config (a stored
    // session, a tuner candidate), under the server's own names.
    void aServerModelRoundTrips()
    {
        BatchingConfig c;
        c.policy = PolicyKind::Continuous;
        c.server.kind = ServerKind::Vllm;
        c.server.vllm.maxNumSeqs = 16;
        c.server.vllm.maxNumBatchedTokens = 1024;
        c.server.vllm.chunkedPrefill = false;
        c.server.vllm.kvCacheTokens = 65536;
        const nlohmann::json j = toJson(c);
        QCOMPARE(j["server"]["kind"].get<std::string>(), std::string("vllm"));
        QCOMPARE(j["server"]["max_num_seqs"].get<int>(), 16);
        auto back = configFromJson(j);
        QVERIFY2(back, back.status().toString().c_str());
        QCOMPARE(back->server, c.server);
        QCOMPARE(toJson(*back), j);

        BatchingConfig s;
        s.policy = PolicyKind::Continuous;
        s.server.kind = ServerKind::Sglang;
        s.server.sglang.maxRunningRequests = 4;
        s.server.sglang.schedulePolicy = "lpm";
        auto sg = configFromJson(toJson(s));
        QVERIFY2(sg, sg.status().toString().c_str());
        QCOMPARE(sg->server, s.server);
        QVERIFY(!toJson(BatchingConfig{}).contains("server")); // BatchPilot's own: as before

        auto bad = configFromJson(nlohmann::json{{"server", {{"kind", "vllm"}, {"max_num_seq", 8}}}});
        QVERIFY(!bad);
        QVERIFY2(bad.status().message().find("'server.max_num_seq'") != std::string::npos,
                 bad.status().message().c_str());
        bad = configFromJson(nlohmann::json{{"server", {{"kind", "vllm"}, {"max_num_seqs", "8"}}}});
        QVERIFY(!bad);
        QVERIFY(bad.status().message().find("'server.max_num_seqs' must be a number") != std::string::npos);
        bad = configFromJson(nlohmann::json{{"server", {{"kind", "orca"}}}});
        QVERIFY(!bad);
        // Not a live knob: PUT /v1/config refuses it with the reason.
        auto patch = patchFromJson(nlohmann::json{{"server", {{"kind", "vllm"}}}});
        QVERIFY(!patch);
        QVERIFY(patch.status().message().find("for simulations") != std::string::npos);
    }

    void partialUpdateKeepsBase()
    {
        BatchingConfig base;
        base.maxBatchSize = 7;
        auto c = configFromJson(json{{"max_queue_delay_us", 100}}, base);
        QVERIFY(c);
        QCOMPARE(c->maxBatchSize, 7);
        QCOMPARE(c->maxQueueDelay, Duration(std::chrono::microseconds(100)));
    }

    void errorsNameTheField_data()
    {
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("mention");
        QTest::newRow("wrong type") << R"({"max_batch_size": "8"})"
                                    << "max_batch_size' must be an integer";
        QTest::newRow("out of range") << R"({"max_batch_size": 0})"
                                      << "max_batch_size = 0";
        QTest::newRow("unknown field") << R"({"batch": 3})"
                                       << "unknown config field 'batch'";
        QTest::newRow("unknown policy") << R"({"policy": "magic"})"
                                        << "unknown policy 'magic'";
        QTest::newRow("unsorted edges") << R"({"bucket_edges": [64, 32]})"
                                        << "strictly increasing";
        QTest::newRow("float") << R"({"instances": 1.5})"
                               << "instances' must be an integer";
        QTest::newRow("not object") << R"([1,2])"
                                    << "must be a JSON object";
        QTest::newRow("negative delay") << R"({"max_queue_delay_us": -1})"
                                        << "max_queue_delay";
        QTest::newRow("nested unknown") << R"({"slo": {"target": 1}})"
                                        << "unknown config field 'slo.target'";
        QTest::newRow("nested type") << R"({"cache": {"enabled": 1}})"
                                     << "cache.enabled' must be a boolean";
        QTest::newRow("slo bounds") << R"({"slo": {"min_batch": 8, "max_batch": 4}})"
                                    << "slo.max_batch";
        QTest::newRow("hybrid sizes") << R"({"hybrid": {"static_sizes": [16, 8]}})"
                                      << "strictly increasing";
    }
    void errorsNameTheField()
    {
        QFETCH(QString, body);
        QFETCH(QString, mention);
        auto c = configFromJson(json::parse(body.toStdString()));
        QVERIFY(!c);
        QCOMPARE(c.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(QString::fromStdString(c.status().message()).contains(mention),
                 c.status().message().c_str());
    }

    void missingFileIsNotFound()
    {
        auto c = loadConfigFile("/nonexistent/batchpilot.json");
        QCOMPARE(c.status().code(), StatusCode::NotFound);
    }
};

QTEST_APPLESS_MAIN(TestConfigJson)
#include "test_config_json.moc"
