// The calibration probe's runner (app/remote/probe_runner.*) against an
// in-test server whose answers are timed by the test, so that what the probe
// does at a given moment is set by the test, not by a real server's speed:
//  - a periodic /metrics scrape still out when the probe ends is superseded
//    by the closing scrape; it is abandoned, not counted as a failed scrape
//    (`53 scrapes, 1 failed` with --scrape-interval 50 was that);
//  - a streamed request the server refuses keeps the refusal's text
//    (`HTTP 422: ` with nothing after it was all a TGI refusal said).
#include "app/remote/probe_runner.h"

#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>
#include <QtTest>

using namespace bp;
using namespace bp::remote;

namespace {

// Reads HTTP/1.1 requests (headers and a Content-Length body); answers a
// POST at once with a streamed completion of two token events, and a GET
// of /metrics after `metricsDelayMs`. Every answer closes its connection.
class TimedServer : public QObject {
public:
    explicit TimedServer(int metricsDelayMs) : m_metricsDelayMs(metricsDelayMs)
    {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_server.nextPendingConnection())
                connect(s, &QTcpSocket::readyRead, this, [this, s] { read(s); });
        });
        QVERIFY(m_server.listen(QHostAddress::LocalHost));
    }
    QUrl url() const { return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(m_server.serverPort())); }
    int metricsRequests() const { return m_metrics; }
    const QList<QByteArray> &posts() const { return m_posts; } // each POST's body
    // Every POST answered with `status` and this plain-text body instead.
    void refusePosts(int status, const QByteArray &body)
    {
        m_refusal = status;
        m_refusalBody = body;
    }

private:
    void read(QTcpSocket *s)
    {
        QByteArray &b = m_buffer[s];
        b += s->readAll();
        const qsizetype end = b.indexOf("\r\n\r\n");
        if (end < 0)
            return;
        const QByteArray head = b.left(end);
        qsizetype length = 0;
        for (const QByteArray &line : head.split('\n'))
            if (line.toLower().startsWith("content-length:"))
                length = line.mid(15).trimmed().toLongLong();
        if (b.size() < end + 4 + length)
            return;
        const QByteArray requestBody = b.mid(end + 4, length);
        b.clear();
        if (head.startsWith("POST"))
            m_posts.append(requestBody);
        if (head.startsWith("GET /metrics")) {
            ++m_metrics;
            QTimer::singleShot(m_metricsDelayMs, s, [s] {
                const QByteArray body =
                    "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n";
                answer(s, "text/plain; version=0.0.4", body);
            });
            return;
        }
        if (m_refusal)
            return answer(s, "text/plain; charset=utf-8", m_refusalBody, m_refusal);
        QByteArray body;
        for (int i = 0; i < 2; ++i)
            body += R"(data: {"choices":[{"index":0,"text":" a","finish_reason":null}]})"
                    "\n\n";
        body += "data: [DONE]\n\n";
        answer(s, "text/event-stream", body);
    }
    static void answer(QTcpSocket *s, const QByteArray &type, const QByteArray &body, int status = 200)
    {
        s->write("HTTP/1.1 " + QByteArray::number(status) + (status == 200 ? " OK" : " Refused") +
                 "\r\nContent-Type: " + type + "\r\nContent-Length: " + QByteArray::number(body.size()) +
                 "\r\nConnection: close\r\n\r\n" + body);
        s->disconnectFromHost();
    }

    QTcpServer m_server;
    QHash<QTcpSocket *, QByteArray> m_buffer;
    const int m_metricsDelayMs;
    int m_metrics = 0;
    int m_refusal = 0;
    QByteArray m_refusalBody;
    QList<QByteArray> m_posts;
};

// A plan of the warm-up request alone.
ProbePlan warmupOnly()
{
    ProbePlan p = ProbePlan::quick(1, true);
    p.prefillLengths.clear();
    p.decodeConcurrency.clear();
    p.longDecodeConcurrency.clear();
    p.mixedLengths.clear();
    return p;
}

// The warm-up request alone against `server` (openai protocol, model
// "m"), with only the first and the closing scrape.
ProbeRunOptions warmupAgainst(const TimedServer &server)
{
    ProbeRunOptions o;
    o.remote.target = server.url();
    o.remote.protocol = Protocol::OpenAi;
    o.remote.model = QStringLiteral("m");
    o.plan = warmupOnly();
    o.scrapeInterval = Duration::zero();
    return o;
}

} // namespace

class TestRemoteProbeRunner : public QObject {
    Q_OBJECT
private slots:
    // The first scrape goes out as the probe starts and the server holds it
    // 500 ms; the probe's one request is answered at once, so the closing
    // scrape starts while the first is still out and supersedes it. That
    // scrape was cut short by the probe's own end: no sample, no failure.
    void aScrapeSupersededByTheClosingOneIsNotAFailure()
    {
        TimedServer server(500);
        const ProbeRunOptions o = warmupAgainst(server); // the first and the closing scrape only
        QCOMPARE(o.plan.requests(), std::size_t(1));
        const ProbeRun run = runProbe(o);
        QCOMPARE(run.requests.size(), std::size_t(1));
        QVERIFY2(run.requests.front().ok, run.requests.front().error.c_str());
        QCOMPARE(server.metricsRequests(), 2); // both scrapes went out
        QCOMPARE(run.scrapes.size(), std::size_t(1));
        QVERIFY2(run.scrapes.front().sample.error.empty(), run.scrapes.front().sample.error.c_str());
        const ObservedLimits l = observedLimits(run.scrapes, nullptr, nullptr);
        QCOMPARE(l.scrapeErrors, std::size_t(0));
        QCOMPARE(l.maxRunning, std::optional<double>(1));
    }

    // Each run draws its prompts from a seed of its own: a second probe of
    // one server sends no prompt of the first (a server's prompt cache
    // would answer it without a prefill); a given seed draws the same.
    void eachRunDrawsItsOwnPrompts()
    {
        TimedServer server(0);
        ProbeRunOptions o = warmupAgainst(server);
        o.remote.vocabSize = 50000;
        const ProbeRun first = runProbe(o), second = runProbe(o);
        QCOMPARE(server.posts().size(), 2);
        QVERIFY(first.seed != 0 && second.seed != 0 && first.seed != second.seed);
        QVERIFY2(server.posts()[0] != server.posts()[1], server.posts()[0].constData());
        o.seed = first.seed;
        const ProbeRun again = runProbe(o);
        QCOMPARE(again.seed, first.seed);
        QCOMPARE(server.posts().size(), 3);
        QCOMPARE(server.posts()[2], server.posts()[0]);
    }

    // TGI refuses token ids on /v1/completions with a plain-text 422. The
    // body of a streamed request goes to the event reader, not the result:
    // the probe keeps its first KiBs for the error's text.
    void aRefusedStreamKeepsTheReason()
    {
        TimedServer server(0);
        server.refusePosts(422, "Failed to deserialize the JSON body into the target type: prompt: data did "
                                "not match any variant of untagged enum PromptDeserializer");
        const ProbeRun run = runProbe(warmupAgainst(server));
        QCOMPARE(run.requests.size(), std::size_t(1));
        QVERIFY(!run.requests.front().ok);
        QCOMPARE(run.requests.front().error,
                 std::string("HTTP 422: Failed to deserialize the JSON body into the target type: prompt: "
                             "data did not match any variant of untagged enum PromptDeserializer"));
    }
};

QTEST_GUILESS_MAIN(TestRemoteProbeRunner)
#include "test_remote_probe_runner.moc"
