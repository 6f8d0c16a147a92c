// Batching through HTTP on the real headless binary (builtin:echo):
// concurrent requests share a batch, a config PUT changes the batches that
// follow, OIP rows become separate engine requests, answers keep their
// order on a keep-alive connection, and a client that hangs up while its
// request waits crashes nothing and leaks nothing.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QtTest>

#include <memory>
#include <vector>

namespace {
// Sends `n` requests on `n` connections at once, then reads every answer.
std::vector<HttpResponse> concurrentInfer(quint16 port, int n, int firstId = 1)
{
    std::vector<std::unique_ptr<HttpConnection>> connections;
    for (int i = 0; i < n; ++i) {
        connections.push_back(std::make_unique<HttpConnection>(port));
        connections.back()->send("POST", "/v1/infer", inferBody({firstId + i, firstId + i}));
    }
    std::vector<HttpResponse> out;
    for (auto &c : connections)
        out.push_back(c->read());
    return out;
}
} // namespace

class TestRestBatching : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        m_server = std::make_unique<HeadlessProcess>(QStringList{"--model", "builtin:echo"});
        QVERIFY2(m_server->start(), qPrintable(m_server->output()));
        m_port = m_server->port();
    }
    void cleanupTestCase()
    {
        QVERIFY(m_server->stop(SIGTERM));
        QCOMPARE(m_server->exitCode(), 0);
    }

    void concurrentRequestsShareABatch()
    {
        // static: the batch leaves only when 4 requests are there.
        QCOMPARE(putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 4}}).status, 200);
        const auto responses = concurrentInfer(m_port, 4, 10);
        qint64 batchId = -1;
        for (std::size_t i = 0; i < responses.size(); ++i) {
            const HttpResponse &r = responses[i];
            QCOMPARE(r.status, 200);
            const QJsonObject batch = r.json().value("batch").toObject();
            QCOMPARE(batch.value("size").toInt(), 4);
            QCOMPARE(batch.value("dispatch_reason").toString(), QStringLiteral("static_full"));
            if (batchId < 0)
                batchId = batch.value("id").toInteger();
            QCOMPARE(batch.value("id").toInteger(), batchId);
            // each answer is its own request's
            const int id = 10 + int(i);
            QCOMPARE(r.json().value("output").toObject().value("tokens").toArray(), QJsonArray({id, id}));
        }
    }

    void configPutChangesFollowingBatches()
    {
        HttpResponse put = putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 2}});
        QCOMPARE(put.status, 200);
        QCOMPARE(put.json().value("static_batch_size").toInt(), 2); // the applied config comes back
        for (const HttpResponse &r : concurrentInfer(m_port, 2)) {
            QCOMPARE(r.status, 200);
            QCOMPARE(r.json().value("batch").toObject().value("size").toInt(), 2);
        }
        QCOMPARE(putConfig(m_port, {{"static_batch_size", 3}}).status, 200);
        QCOMPARE(httpRequest(m_port, "GET", "/v1/config").json().value("static_batch_size").toInt(), 3);
        for (const HttpResponse &r : concurrentInfer(m_port, 3)) {
            QCOMPARE(r.status, 200);
            QCOMPARE(r.json().value("batch").toObject().value("size").toInt(), 3);
        }
        // dynamic with a large delay and max_batch_size 2: full batches of 2
        QCOMPARE(putConfig(m_port, {{"policy", "dynamic"}, {"max_batch_size", 2}, {"max_queue_delay_us", 5000000}})
                     .status,
                 200);
        for (const HttpResponse &r : concurrentInfer(m_port, 2)) {
            QCOMPARE(r.status, 200);
            QCOMPARE(r.json().value("batch").toObject().value("size").toInt(), 2);
            QCOMPARE(r.json().value("batch").toObject().value("dispatch_reason").toString(), QStringLiteral("full"));
        }
    }

    void oipRowsAreSeparateRequestsInOneBatch()
    {
        QCOMPARE(putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 3}}).status, 200);
        const QByteArray body =
            R"({"inputs":[{"name":"input_ids","datatype":"INT64","shape":[3,2],"data":[[1,2],[3,4],[5,6]]}]})";
        const HttpResponse r = httpRequest(m_port, "POST", "/v2/models/echo/infer", body);
        QCOMPARE(r.status, 200);
        const QJsonObject params = r.json().value("parameters").toObject();
        QCOMPARE(params.value("max_batch_size").toInt(), 3);
        QCOMPARE(params.value("batches").toInt(), 1);
        QCOMPARE(r.json().value("outputs").toArray().at(0).toObject().value("data").toArray(),
                 QJsonArray({1, 2, 3, 4, 5, 6}));
    }

    void answersKeepRequestOrderOnAConnection()
    {
        QCOMPARE(putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 2}}).status, 200);
        HttpConnection keepAlive(m_port);
        keepAlive.send("POST", "/v1/infer", inferBody({42}));
        QVERIFY(waitForQueueDepth(m_port, 1));
        // Answerable at once, but it was asked second: it must come second.
        keepAlive.send("GET", "/v2/health/live");
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({43})).status, 200); // completes the batch
        const HttpResponse first = keepAlive.read();
        const HttpResponse second = keepAlive.read();
        QCOMPARE(first.status, 200);
        QCOMPARE(first.json().value("output").toObject().value("tokens").toArray(), QJsonArray({42}));
        QCOMPARE(second.status, 200);
        QCOMPARE(second.json().value("live").toBool(), true);
    }

    void clientDisconnectMidRequest()
    {
        QCOMPARE(putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 2}}).status, 200);
        for (int round = 0; round < 3; ++round) {
            {
                HttpConnection leaver(m_port);
                leaver.send("POST", "/v1/infer", inferBody({1, 2, 3}));
                QVERIFY(waitForQueueDepth(m_port, 1));
                leaver.abort(); // gone while its request waits for company
            }
            // The batch forms now; one of its two answers has nowhere to go.
            const HttpResponse r = httpRequest(m_port, "POST", "/v1/infer", inferBody({9}));
            QCOMPARE(r.status, 200);
            QCOMPARE(r.json().value("batch").toObject().value("size").toInt(), 2);
        }
        QVERIFY(m_server->isRunning());
        // Nothing is left waiting, and the server answers as before.
        const QByteArray metrics = httpRequest(m_port, "GET", "/metrics").body;
        QCOMPARE(metricValue(metrics, "batchpilot_http_requests_in_flight"), 0.0);
        QCOMPARE(putConfig(m_port, {{"policy", "dynamic"}, {"max_queue_delay_us", 1000}}).status, 200);
        const HttpResponse after = httpRequest(m_port, "POST", "/v1/infer", inferBody({4, 5}));
        QCOMPARE(after.status, 200);
        QCOMPARE(after.json().value("output").toObject().value("tokens").toArray(), QJsonArray({4, 5}));
    }

    void disconnectWithManyPendingRequests()
    {
        // Dozens of connections hang up while queued; the server drops their
        // answers and keeps its connection count honest.
        QCOMPARE(putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 64}}).status, 200);
        {
            std::vector<std::unique_ptr<HttpConnection>> leavers;
            for (int i = 0; i < 40; ++i) {
                leavers.push_back(std::make_unique<HttpConnection>(m_port));
                leavers.back()->send("POST", "/v1/infer", inferBody({i % 256}));
            }
            QVERIFY(waitForQueueDepth(m_port, 40));
            for (auto &c : leavers)
                c->abort();
        }
        QCOMPARE(putConfig(m_port, {{"policy", "dynamic"}, {"max_queue_delay_us", 1000}}).status, 200);
        QVERIFY(waitForQueueDepth(m_port, 0));
        QDeadlineTimer deadline(10000);
        double inFlight = -1, connections = -1;
        while (!deadline.hasExpired()) {
            const QByteArray metrics = httpRequest(m_port, "GET", "/metrics").body;
            inFlight = metricValue(metrics, "batchpilot_http_requests_in_flight");
            connections = metricValue(metrics, "batchpilot_http_connections");
            if (inFlight == 0 && connections <= 1)
                break;
        }
        QCOMPARE(inFlight, 0.0);
        QVERIFY2(connections <= 1, qPrintable(QString::number(connections))); // only the scrape's own
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({8})).status, 200);
    }

private:
    std::unique_ptr<HeadlessProcess> m_server;
    quint16 m_port = 0;
};

QTEST_GUILESS_MAIN(TestRestBatching)
#include "test_rest_batching.moc"
