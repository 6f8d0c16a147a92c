// The endpoint in-process (bp_rest linked directly, builtin:echo): what the
// binary cannot show deterministically. Draining answers 503, an engine
// that has shut down answers 503, stop() while a request waits and results
// that arrive after the server is gone are harmless, option checks, and the
// pure route table.
#include "app/rest/connection_queue.h"
#include "app/rest/http_frontend.h"
#include "app/rest/http_reply.h"
#include "app/rest/rest_server.h"
#include "app/rest/routes.h"
#include "engine/model/model_registry.h"
#include "engine/store/trace_store.h"
#include "rest_test_util.h"

#include <QSemaphore>
#include <QThreadPool>
#include <QtTest>

using namespace bp;
using namespace bp::rest;

namespace {
std::unique_ptr<Engine> echoEngine(BatchingConfig config = {})
{
    EngineOptions options;
    options.backend = makeEchoBackend();
    config.maxQueueDelay = std::chrono::microseconds(500);
    options.batching = config;
    return std::move(Engine::create(std::move(options)).value());
}

RestOptions anyPort()
{
    RestOptions o;
    o.port = 0;
    return o;
}

// HTTP answers with `code` the server has given so far (sent or queued
// behind earlier answers on their connection), from /metrics.
double responsesWithCode(quint16 port, int code)
{
    const HttpResponse r = httpRequest(port, "GET", "/metrics");
    return metricValue(r.body, "batchpilot_http_responses_total{code=\"" + QByteArray::number(code) + "\"}");
}

// builtin:echo whose generation steps each wait for a permit: the test
// decides when the engine moves (policy continuous).
class GatedEcho final : public Backend, public StepModel {
public:
    const ModelInfo &info() const override { return m_echo->info(); }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        return m_echo->run(input, out);
    }
    StepModel *steps() override { return this; }
    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override
    {
        permits.acquire();
        return m_echo->steps()->step(items, out);
    }
    void release(std::uint64_t sequence) override { m_echo->steps()->release(sequence); }
    std::int64_t cachedTokens() const override { return m_echo->steps()->cachedTokens(); }

    QSemaphore permits;

    // Lets every step through when it goes out of scope (declared after the
    // engine, so a failed check never leaves the engine blocked in step()).
    struct OpenOnExit {
        GatedEcho &gate;
        ~OpenOnExit() { gate.permits.release(1 << 20); }
    };

private:
    std::shared_ptr<Backend> m_echo = makeEchoBackend();
};

std::unique_ptr<Engine> continuousEngine(std::shared_ptr<Backend> backend, int maxNumSeqs = 16)
{
    EngineOptions options;
    options.backend = std::move(backend);
    options.batching.policy = PolicyKind::Continuous;
    options.batching.continuous.maxNumSeqs = maxNumSeqs;
    return std::move(Engine::create(std::move(options)).value());
}

// How many connections `signal` of `object` has (QObject::receivers() is
// protected; a pointer to it formed through a subclass may be called).
int receiversOf(const QObject *object, const char *signal)
{
    struct Peek : QObject {
        static int count(const QObject *o, const char *s) { return (o->*&Peek::receivers)(s); }
    };
    return Peek::count(object, signal);
}

// An HttpFrontend on a thread of the test's own, so the test can look at the
// server's Qt objects (on that thread) between requests.
class FrontendThread {
public:
    FrontendThread(Engine &engine, RestOptions options)
    {
        m_thread.start();
        m_anchor = new QObject;
        m_anchor->moveToThread(&m_thread);
        QObject::connect(&m_thread, &QThread::finished, m_anchor, &QObject::deleteLater);
        run([&] {
            m_frontend = new HttpFrontend(engine, std::move(options), "test");
            m_port = m_frontend->startListening().value();
        });
    }
    ~FrontendThread()
    {
        run([this] { delete m_frontend; });
        m_thread.quit();
        m_thread.wait();
    }
    quint16 port() const { return m_port; }
    // Runs `f` on the server thread and waits for it.
    template <typename F> void run(F f)
    {
        QMetaObject::invokeMethod(m_anchor, f, Qt::BlockingQueuedConnection);
    }
    HttpFrontend *frontend() const { return m_frontend; }

private:
    QThread m_thread;
    QObject *m_anchor = nullptr;
    HttpFrontend *m_frontend = nullptr;
    quint16 m_port = 0;
};

QByteArray rawRequest(const QByteArray &method, const QByteArray &path, const QByteArray &body = {})
{
    return method + ' ' + path +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" +
           body;
}
} // namespace

class TestRestInProcess : public QObject {
    Q_OBJECT
private slots:
    void drainingAnswers503()
    {
        auto engine = echoEngine();
        RestServer server(*engine, anyPort(), "test");
        auto started = server.start();
        QVERIFY2(started, started.status().message().c_str());
        const quint16 port = server.port();
        QCOMPARE(httpRequest(port, "POST", "/v1/infer", inferBody({1})).status, 200);

        server.setDraining(true);
        HttpResponse r = httpRequest(port, "POST", "/v1/infer", inferBody({1}));
        QCOMPARE(r.status, 503);
        QVERIFY(r.json().value("error").toString().contains("shutting down"));
        QCOMPARE(
            httpRequest(port, "POST", "/v2/models/echo/infer",
                        R"({"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":[1]}]})")
                .status,
            503);
        QCOMPARE(httpRequest(port, "PUT", "/v1/config", R"({"max_batch_size":4})").status, 503);
        // The OpenAI routes answer with OpenAI's error object.
        for (const QByteArray &path : {QByteArray("/v1/completions"), QByteArray("/v1/chat/completions")}) {
            r = httpRequest(port, "POST", path, R"({"prompt": "a", "messages": []})");
            QCOMPARE(r.status, 503);
            const QJsonObject e = r.json().value("error").toObject();
            QCOMPARE(e.value("type").toString(), QStringLiteral("server_error"));
            QCOMPARE(e.value("code").toString(), QStringLiteral("shutting_down"));
            QVERIFY(e.contains("param") && e.value("param").isNull());
        }
        QCOMPARE(httpRequest(port, "GET", "/v1/models").status, 200); // listing still works
        QCOMPARE(httpRequest(port, "GET", "/v2/health/ready").status, 503);
        QCOMPARE(httpRequest(port, "GET", "/v2/models/echo/ready").status, 503);
        // Watching a drain still works.
        QCOMPARE(httpRequest(port, "GET", "/v2/health/live").status, 200);
        QCOMPARE(httpRequest(port, "GET", "/v1/stats").status, 200);
        QCOMPARE(httpRequest(port, "GET", "/metrics").status, 200);

        server.setDraining(false);
        QCOMPARE(httpRequest(port, "GET", "/v2/health/ready").status, 200);
        QCOMPARE(httpRequest(port, "POST", "/v1/infer", inferBody({1})).status, 200);
    }

    // With a token, a request without it is refused 401 before anything
    // else: an OpenAI error object on the OpenAI routes, the plain shape
    // elsewhere.
    void unauthorizedOnOpenAiRoutes()
    {
        auto engine = echoEngine();
        RestOptions o = anyPort();
        o.token = "secret";
        RestServer server(*engine, o, "test");
        QVERIFY(server.start());
        for (const QByteArray &path : {QByteArray("/v1/models"), QByteArray("/v1/models/echo")}) {
            const HttpResponse r = httpRequest(server.port(), "GET", path);
            QCOMPARE(r.status, 401);
            QCOMPARE(r.header("www-authenticate"), QByteArray("Bearer"));
            const QJsonObject e = r.json().value("error").toObject();
            QCOMPARE(e.value("type").toString(), QStringLiteral("authentication_error"));
            QCOMPARE(e.value("code").toString(), QStringLiteral("invalid_api_key"));
        }
        const HttpResponse chat = httpRequest(server.port(), "POST", "/v1/chat/completions", "{}");
        QCOMPARE(chat.status, 401);
        QVERIFY(chat.json().value("error").isObject());
        const HttpResponse infer = httpRequest(server.port(), "POST", "/v1/infer", inferBody({1}));
        QCOMPARE(infer.status, 401);
        QVERIFY(infer.json().value("error").isString());
        const HttpResponse ok =
            httpRequest(server.port(), "GET", "/v1/models", {}, {{"Authorization", "Bearer secret"}});
        QCOMPARE(ok.status, 200);
        QCOMPARE(ok.json().value("data").toArray().at(0).toObject().value("id").toString(),
                 QStringLiteral("builtin:echo"));
    }

    void engineShutDownAnswers503()
    {
        auto engine = echoEngine();
        RestServer server(*engine, anyPort(), "test");
        QVERIFY(server.start());
        engine->shutdown(ShutdownMode::Drain);
        const HttpResponse r = httpRequest(server.port(), "POST", "/v1/infer", inferBody({1}));
        QCOMPARE(r.status, 503);
        QVERIFY(r.json().value("error").toString().contains("shutting down"));
        QCOMPARE(httpRequest(server.port(), "PUT", "/v1/config", R"({"max_batch_size":4})").status, 503);
    }

    void stopWhileARequestWaits()
    {
        BatchingConfig config;
        config.policy = PolicyKind::Static;
        config.staticBatchSize = 4;
        auto engine = echoEngine(config);
        {
            RestServer server(*engine, anyPort(), "test");
            QVERIFY(server.start());
            HttpConnection waiting(server.port());
            waiting.send("POST", "/v1/infer", inferBody({1}));
            QTRY_COMPARE_WITH_TIMEOUT(engine->queueDepth(), std::size_t(1), 10000);
            server.stop(); // the request's connection is closed unanswered
            QVERIFY(waiting.waitForClose());
            QCOMPARE(waiting.read(1000).status, 0);
        }
        // The result arrives after the server is gone: dropped, nothing touched.
        engine->shutdown(ShutdownMode::Drain);
        QCOMPARE(engine->snapshot().completed, std::uint64_t(1));
    }

    // A client may pipeline, but one connection holds at most
    // maxPipelinedRequests unanswered requests: the next is answered 429
    // after the earlier ones, the connection closes, and the rest of what
    // the client sent is never parsed.
    void pipelinedRequestsAreBounded()
    {
        BatchingConfig config;
        config.policy = PolicyKind::Static; // waits for 8: nothing is answered yet
        config.staticBatchSize = 8;
        auto engine = echoEngine(config);
        RestOptions o = anyPort();
        o.maxPipelinedRequests = 3;
        RestServer server(*engine, o, "test");
        QVERIFY(server.start());
        const quint16 port = server.port();

        HttpConnection c(port);
        QByteArray burst;
        for (int i = 1; i <= 6; ++i)
            burst += rawRequest("POST", "/v1/infer", inferBody({i}));
        c.sendRaw(burst);
        QTRY_COMPARE_WITH_TIMEOUT(engine->queueDepth(), std::size_t(3), 10000);
        QTRY_COMPARE_WITH_TIMEOUT(responsesWithCode(port, 429), 1.0, 10000); // decided, queued behind 1-3

        BatchingConfig dynamic = engine->config();
        dynamic.policy = PolicyKind::Dynamic;
        QVERIFY(engine->reconfigure(dynamic, "test").isOk());
        for (int i = 1; i <= 3; ++i) {
            const HttpResponse r = c.read();
            QCOMPARE(r.status, 200);
            QCOMPARE(r.json().value("output").toObject().value("tokens").toArray(), QJsonArray({i}));
        }
        const HttpResponse refused = c.read();
        QCOMPARE(refused.status, 429);
        QCOMPARE(refused.header("connection"), QByteArray("close"));
        QCOMPARE(refused.header("retry-after"), QByteArray("1"));
        QVERIFY2(refused.json().value("error").toString().contains("pipelining limit"),
                 refused.body.constData());
        QVERIFY(c.waitForClose());
        // Requests 5 and 6 were never parsed, let alone run.
        QCOMPARE(engine->snapshot().submitted, std::uint64_t(3));
        // Other connections are served as before.
        QCOMPARE(httpRequest(port, "POST", "/v1/infer", inferBody({9})).status, 200);
    }

    // A request that finds the admission queue full waits for room (in
    // arrival order) instead of being refused at once; past
    // maxWaitingRequests waiting, the next is refused before parsing.
    void fullQueueHoldsRequestsUntilThereIsRoom()
    {
        BatchingConfig config;
        config.policy = PolicyKind::Static;
        config.staticBatchSize = 8;
        config.queueCapacity = 2;
        auto engine = echoEngine(config);
        RestOptions o = anyPort();
        o.admissionWait = std::chrono::hours(1); // never runs out here
        o.maxWaitingRequests = 1;
        RestServer server(*engine, o, "test");
        QVERIFY(server.start());
        const quint16 port = server.port();

        HttpConnection a(port), b(port), c(port);
        a.send("POST", "/v1/infer", inferBody({1}));
        b.send("POST", "/v1/infer", inferBody({2}));
        QTRY_COMPARE_WITH_TIMEOUT(engine->queueDepth(), std::size_t(2), 10000); // full
        c.send("POST", "/v1/infer", inferBody({3}));
        QTRY_COMPARE_WITH_TIMEOUT(
            metricValue(httpRequest(port, "GET", "/metrics").body, "batchpilot_http_requests_waiting"), 1.0,
            10000);
        // The waiting room (one place) is taken: refused at once.
        const HttpResponse refused = httpRequest(port, "POST", "/v1/infer", inferBody({4}));
        QCOMPARE(refused.status, 429);
        QCOMPARE(refused.header("retry-after"), QByteArray("1"));
        QVERIFY2(refused.json().value("error").toString().contains("already waiting"),
                 refused.body.constData());
        QCOMPARE(engine->snapshot().submitted, std::uint64_t(2));

        BatchingConfig dynamic = engine->config(); // room: the two run, the third goes in
        dynamic.policy = PolicyKind::Dynamic;
        QVERIFY(engine->reconfigure(dynamic, "test").isOk());
        QCOMPARE(a.read().status, 200);
        QCOMPARE(b.read().status, 200);
        const HttpResponse admitted = c.read();
        QCOMPARE(admitted.status, 200);
        QCOMPARE(admitted.json().value("output").toObject().value("tokens").toArray(), QJsonArray({3}));
        const QRegularExpression timing(
            R"(^admit;dur=\d+\.\d{3}, engine;dur=\d+\.\d{3}, total;dur=\d+\.\d{3}$)");
        QVERIFY2(timing.match(QString::fromLatin1(admitted.header("server-timing"))).hasMatch(),
                 admitted.header("server-timing").constData());
        QCOMPARE(metricValue(httpRequest(port, "GET", "/metrics").body, "batchpilot_http_requests_waiting"),
                 0.0);
    }

    void waitingRequestGets429WhenTheWaitEnds()
    {
        BatchingConfig config;
        config.policy = PolicyKind::Static;
        config.staticBatchSize = 8;
        config.queueCapacity = 1;
        auto engine = echoEngine(config);
        RestOptions o = anyPort();
        o.admissionWait = std::chrono::milliseconds(1);
        RestServer server(*engine, o, "test");
        QVERIFY(server.start());
        HttpConnection a(server.port());
        a.send("POST", "/v1/infer", inferBody({1}));
        QTRY_COMPARE_WITH_TIMEOUT(engine->queueDepth(), std::size_t(1), 10000);
        const HttpResponse r =
            httpRequest(server.port(), "POST", "/v2/models/echo/infer",
                        R"({"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":[1]}]})");
        QCOMPARE(r.status, 429);
        QCOMPARE(r.header("retry-after"), QByteArray("1"));
        QVERIFY2(r.json().value("error").toString().contains("stayed full"), r.body.constData());
        QVERIFY(r.header("server-timing").startsWith("admit;dur="));
        QCOMPARE(engine->snapshot().submitted, std::uint64_t(1)); // the engine never saw it
    }

    // Reports render one at a time; at most maxQueuedReports are rendering
    // or waiting, more get 429 with Retry-After.
    void reportQueueIsBounded()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open((dir.path() + "/trace.sqlite").toStdString());
        QVERIFY(store);
        QThreadPool pool; // outlives the server, as RestOptions::reportPool requires
        pool.setMaxThreadCount(1);
        QSemaphore release;
        pool.start([&release] { release.acquire(); }); // holds the pool's only thread
        auto engine = echoEngine();
        RestOptions o = anyPort();
        o.store = *store;
        o.maxQueuedReports = 2;
        o.reportPool = &pool;
        RestServer server(*engine, o, "test");
        QVERIFY(server.start());
        const quint16 port = server.port();

        HttpConnection c(port);
        const QByteArray report = rawRequest("GET", "/v1/sessions/1/report?format=json");
        c.sendRaw(report + report + report);
        QTRY_COMPARE_WITH_TIMEOUT(responsesWithCode(port, 429), 1.0, 10000);
        // Another client meanwhile: refused at once, the two jobs still wait.
        const HttpResponse direct = httpRequest(port, "GET", "/v1/sessions/1/report?format=json");
        QCOMPARE(direct.status, 429);
        QCOMPARE(direct.header("retry-after"), QByteArray("1"));
        QVERIFY2(direct.json().value("error").toString().contains("2 reports are rendering or waiting"),
                 direct.body.constData());

        release.release();
        QCOMPARE(c.read().status, 404); // no session 1 in an empty database: rendered, and answered
        QCOMPARE(c.read().status, 404);
        QCOMPARE(c.read().status, 429);
        // The queue has drained: reports are taken again.
        QCOMPARE(httpRequest(port, "GET", "/v1/sessions/1/report?format=json").status, 404);
    }

    // Completions on one keep-alive connection leave nothing
    // behind per request. Each used to connect a slot to its connection
    // queue's destroyed() signal and never disconnect it (~160 B a request,
    // 3.2 MB over 20,000 requests).
    void keepAliveConnectionHoldsNothingPerRequest()
    {
        auto engine = echoEngine();
        FrontendThread server(*engine, anyPort());
        auto destroyedReceivers = [&server] {
            int n = -1;
            server.run([&] {
                const auto queues = server.frontend()->findChildren<ConnectionQueue *>();
                if (queues.size() == 1)
                    n = receiversOf(queues.front(), SIGNAL(destroyed(QObject *)));
            });
            return n;
        };
        HttpConnection c(server.port());
        auto complete = [&c](bool stream) {
            c.send("POST", "/v1/completions",
                   stream ? R"({"prompt": "hi", "max_tokens": 2, "stream": true})"
                          : R"({"prompt": "hi", "max_tokens": 2})");
            return c.read().status;
        };
        QCOMPARE(complete(false), 200);
        const int afterOne = destroyedReceivers();
        QVERIFY(afterOne >= 0);
        for (int i = 0; i < 40; ++i)
            QCOMPARE(complete(i % 2 == 0), 200);
        QCOMPARE(destroyedReceivers(), afterOne);
    }

    // A client that hangs up mid-stream cancels its request under policy
    // continuous (deterministic here: the engine takes a step
    // only when the test lets it). The connection queue sets the request's
    // flag when the client goes; the scheduler ends the request at its next
    // step with `cancelled`, not `ok`.
    void disconnectMidStreamCancelsTheRequest()
    {
        auto backend = std::make_shared<GatedEcho>();
        auto engine = continuousEngine(backend);
        const GatedEcho::OpenOnExit open{*backend};
        RestServer server(*engine, anyPort(), "test");
        QVERIFY(server.start());
        const quint16 port = server.port();
        backend->permits.release(1); // the prefill step: the first token
        {
            QTcpSocket c;
            c.connectToHost(QHostAddress::LocalHost, port);
            QVERIFY(c.waitForConnected(5000));
            const QByteArray body = R"({"prompt": "hello", "max_tokens": 50, "stream": true})";
            c.write("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                    QByteArray::number(body.size()) + "\r\n\r\n" + body);
            QByteArray got;
            QDeadlineTimer deadline(10000);
            while (!got.contains("data: ") && !deadline.hasExpired()) // the first token's event
                if (c.waitForReadyRead(100))
                    got += c.readAll();
            QVERIFY2(got.startsWith("HTTP/1.1 200") && got.contains("data: "), got.constData());
            c.abort();
        }
        // The server has let go of the connection (only the /metrics one is left).
        QTRY_COMPARE_WITH_TIMEOUT(
            metricValue(httpRequest(port, "GET", "/metrics").body, "batchpilot_http_connections"), 1.0,
            10000);
        backend->permits.release(1000);
        QTRY_COMPARE_WITH_TIMEOUT(engine->snapshot().byStatus[std::size_t(StatusCode::Cancelled)],
                                  std::uint64_t(1), 10000);
        QCOMPARE(engine->snapshot().completed, std::uint64_t(0));
    }

    // Under continuous, the queue depth (/v1/stats queue_depth,
    // batchpilot_queue_depth) counts the sequences waiting to join, not the
    // running ones, as its help text says.
    void queueDepthCountsWaitingSequencesOnly()
    {
        auto backend = std::make_shared<GatedEcho>(); // no permits: the first step holds
        auto engine = continuousEngine(backend, 1);
        const GatedEcho::OpenOnExit open{*backend};
        RestServer server(*engine, anyPort(), "test");
        QVERIFY(server.start());
        const quint16 port = server.port();
        for (int i = 0; i < 3; ++i) {
            Request r;
            r.tokens = {1, 2, TokenId(3 + i)};
            r.maxNewTokens = 4;
            QVERIFY(engine->submit(std::move(r), [](Response &&) {}).isOk());
        }
        QTRY_COMPARE_WITH_TIMEOUT(engine->snapshot().runningSequences, std::size_t(1), 10000);
        const QJsonObject stats = httpRequest(port, "GET", "/v1/stats").json();
        QCOMPARE(stats.value("running_sequences").toInt(), 1);
        QCOMPARE(stats.value("waiting_sequences").toInt(), 2);
        QCOMPARE(stats.value("queue_depth").toInt(), 2);
        const QByteArray metrics = httpRequest(port, "GET", "/metrics").body;
        QCOMPARE(metricValue(metrics, "batchpilot_queue_depth"), 2.0);
        QCOMPARE(metricValue(metrics, "batchpilot_waiting_sequences"), 2.0);
        backend->permits.release(1000);
        engine->shutdown(ShutdownMode::Drain);
        QCOMPARE(engine->snapshot().completed, std::uint64_t(3));
    }

    void startRefusesBadOptions_data()
    {
        QTest::addColumn<QString>("bind");
        QTest::addColumn<QString>("token");
        QTest::addColumn<QString>("message");
        QTest::newRow("not an address") << "example.org"
                                        << ""
                                        << "not an IP address";
        QTest::newRow("any without token") << "0.0.0.0"
                                           << ""
                                           << "needs a bearer token";
        QTest::newRow("other loopback without token") << "127.0.0.2"
                                                      << ""
                                                      << "needs a bearer token";
        QTest::newRow("ipv6 any without token") << "::"
                                                << ""
                                                << "needs a bearer token";
    }
    void startRefusesBadOptions()
    {
        QFETCH(QString, bind);
        QFETCH(QString, token);
        QFETCH(QString, message);
        auto engine = echoEngine();
        RestOptions o = anyPort();
        o.bind = bind;
        o.token = token;
        RestServer server(*engine, o, "test");
        auto started = server.start();
        QVERIFY(!started);
        QCOMPARE(started.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(QString::fromStdString(started.status().message()).contains(message),
                 started.status().message().c_str());
    }

    void loopbackNamesNeedNoToken_data()
    {
        QTest::addColumn<QString>("bind");
        QTest::newRow("127.0.0.1") << "127.0.0.1";
        QTest::newRow("localhost") << "localhost";
        QTest::newRow("::1") << "::1";
    }
    void loopbackNamesNeedNoToken()
    {
        QFETCH(QString, bind);
        RestOptions o = anyPort();
        o.bind = bind;
        QVERIFY(checkRestOptions(o).isOk());
    }

    // Cancelled is the client going away: nginx's 499, with a status line
    // that still parses (Qt's enum has no 499, so it is named here).
    void cancelledMapsTo499()
    {
        QCOMPARE(int(httpStatusFor(StatusCode::Cancelled)), 499);
        QCOMPARE(statusLine(httpStatusFor(StatusCode::Cancelled)),
                 QByteArray("HTTP/1.1 499 Client Closed Request\r\n"));
        const HttpReply r = errorReply(Status(StatusCode::Cancelled, "client disconnected"));
        QCOMPARE(int(r.status), 499);
        QCOMPARE(r.header("Retry-After"), QByteArray());
    }

    void endpointUrls()
    {
        QCOMPARE(endpointUrl("127.0.0.1", 8321), QStringLiteral("http://127.0.0.1:8321"));
        QCOMPARE(endpointUrl("::1", 80), QStringLiteral("http://[::1]:80"));
    }

    void routeTable_data()
    {
        using M = QHttpServerRequest::Method;
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("method");
        QTest::addColumn<int>("route"); // -1: none
        QTest::addColumn<bool>("pathKnown");
        QTest::addColumn<QString>("model");
        QTest::newRow("live") << "/v2/health/live" << int(M::Get) << int(Route::HealthLive) << true << "";
        QTest::newRow("v2 slash") << "/v2/" << int(M::Get) << int(Route::ServerMetadata) << true << "";
        QTest::newRow("model") << "/v2/models/m" << int(M::Get) << int(Route::ModelMetadata) << true << "m";
        QTest::newRow("model version")
            << "/v2/models/m/versions/1" << int(M::Get) << int(Route::ModelMetadata) << true << "m";
        QTest::newRow("ready") << "/v2/models/m/ready" << int(M::Get) << int(Route::ModelReady) << true
                               << "m";
        QTest::newRow("infer") << "/v2/models/m/versions/1/infer" << int(M::Post) << int(Route::OipInfer)
                               << true << "m";
        QTest::newRow("infer get") << "/v2/models/m/infer" << int(M::Get) << -1 << true << "m";
        QTest::newRow("config put") << "/v1/config" << int(M::Put) << int(Route::PutConfig) << true << "";
        QTest::newRow("config post") << "/v1/config" << int(M::Post) << -1 << true << "";
        QTest::newRow("models") << "/v1/models/" << int(M::Get) << int(Route::ListModels) << true << "";
        QTest::newRow("model with a slash") << "/v1/models/meta-llama/Llama-3.1-8B" << int(M::Get)
                                            << int(Route::GetModel) << true << "meta-llama/Llama-3.1-8B";
        QTest::newRow("chat") << "/v1/chat/completions" << int(M::Post) << int(Route::ChatCompletions) << true
                              << "";
        QTest::newRow("chat get") << "/v1/chat/completions" << int(M::Get) << -1 << true << "";
        QTest::newRow("unknown") << "/v3" << int(M::Get) << -1 << false << "";
        QTest::newRow("models root") << "/v2/models" << int(M::Get) << -1 << false << "";
        QTest::newRow("too deep") << "/v2/models/m/infer/x" << int(M::Post) << -1 << false << "";
        QTest::newRow("empty version") << "/v2/models/m/versions//infer" << int(M::Post) << -1 << false << "";
    }
    void routeTable()
    {
        QFETCH(QString, path);
        QFETCH(int, method);
        QFETCH(int, route);
        QFETCH(bool, pathKnown);
        QFETCH(QString, model);
        const RouteMatch m = matchRoute(path, QHttpServerRequest::Method(method));
        QCOMPARE(m.route ? int(*m.route) : -1, route);
        QCOMPARE(m.pathKnown, pathKnown);
        if (pathKnown)
            QCOMPARE(m.model, model);
        if (pathKnown && !m.route)
            QVERIFY(!m.allow.isEmpty());
        // Errors on the OpenAI routes are OpenAI error objects; elsewhere plain.
        QCOMPARE(isOpenAiPath(path), path.startsWith("/v1/models") || path.contains("completions"));
    }
};

QTEST_GUILESS_MAIN(TestRestInProcess)
#include "test_rest_inprocess.moc"
