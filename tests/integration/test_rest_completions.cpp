// POST /v1/completions (OpenAI-compatible) against the real headless server
// with builtin:tiny-decoder: the completion object and its usage, the
// server-sent-event stream (one chunk per token, arriving while the answer
// is still being generated, then [DONE]), the errors, and a client that
// hangs up mid-stream.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

namespace {

struct SseEvent {
    QByteArray data; // after "data: "
    qint64 atNs = 0; // when its bytes arrived (client clock)
};

struct SseAnswer {
    int status = 0;
    QMap<QByteArray, QByteArray> headers; // lower-case names
    QByteArray body;                      // a non-streamed answer (errors)
    QList<SseEvent> events;
    bool ended = false; // the chunked body ended (0-length chunk)
    QString error;
};

// Sends the request and reads the answer as it arrives: HTTP/1.1 chunked
// framing, then SSE events split at blank lines, each stamped with the time
// its last bytes were read. Stops at the end of the body, after
// `stopAfterEvents` events (>= 0), or at the deadline.
SseAnswer postSse(QTcpSocket &socket, const QByteArray &body, const QElapsedTimer &clock,
                  int stopAfterEvents = -1, int timeoutMs = 60000)
{
    socket.write("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Content-Length: " +
                 QByteArray::number(body.size()) + "\r\n\r\n" + body);
    socket.flush();
    SseAnswer a;
    QByteArray raw, payload;
    qsizetype headEnd = -1;
    bool chunked = false;
    qint64 contentLength = 0;
    QDeadlineTimer deadline(timeoutMs);
    for (;;) {
        const QByteArray got = socket.readAll();
        const qint64 now = clock.nsecsElapsed();
        raw += got;
        if (headEnd < 0 && (headEnd = raw.indexOf("\r\n\r\n")) >= 0) {
            const QList<QByteArray> lines = raw.left(headEnd).split('\n');
            const QList<QByteArray> status = lines.front().trimmed().split(' ');
            a.status = status.size() >= 2 ? status[1].toInt() : 0;
            for (qsizetype i = 1; i < lines.size(); ++i) {
                const qsizetype colon = lines[i].indexOf(':');
                if (colon > 0)
                    a.headers.insert(lines[i].left(colon).trimmed().toLower(),
                                     lines[i].mid(colon + 1).trimmed());
            }
            chunked = a.headers.value("transfer-encoding") == "chunked";
            contentLength = a.headers.value("content-length", "0").toLongLong();
            raw.remove(0, headEnd + 4);
        }
        if (headEnd >= 0 && !chunked) {
            if (raw.size() >= contentLength) {
                a.body = raw.left(contentLength);
                return a;
            }
        } else if (headEnd >= 0) {
            for (;;) { // whole chunks
                const qsizetype lineEnd = raw.indexOf("\r\n");
                if (lineEnd < 0)
                    break;
                bool ok = false;
                const qsizetype size = raw.left(lineEnd).trimmed().toLongLong(&ok, 16);
                if (!ok) {
                    a.error = "bad chunk size line: " + QString::fromLatin1(raw.left(lineEnd));
                    return a;
                }
                if (raw.size() < lineEnd + 2 + size + 2)
                    break;
                if (size == 0) {
                    a.ended = true;
                    raw.remove(0, lineEnd + 4);
                    break;
                }
                payload += raw.mid(lineEnd + 2, size);
                raw.remove(0, lineEnd + 2 + size + 2);
            }
            qsizetype end;
            while ((end = payload.indexOf("\n\n")) >= 0) {
                const QByteArray event = payload.left(end);
                payload.remove(0, end + 2);
                if (event.startsWith("data: "))
                    a.events.append({event.mid(6), now});
                if (stopAfterEvents >= 0 && a.events.size() >= stopAfterEvents)
                    return a;
            }
            if (a.ended)
                return a;
        }
        if (deadline.hasExpired() || socket.state() != QAbstractSocket::ConnectedState) {
            a.error =
                deadline.hasExpired() ? QStringLiteral("timed out") : QStringLiteral("connection closed");
            return a;
        }
        socket.waitForReadyRead(int(std::max<qint64>(1, deadline.remainingTime())));
    }
}

QJsonObject jsonOf(const QByteArray &data)
{
    return QJsonDocument::fromJson(data).object();
}

QByteArray completionBody(const QJsonObject &fields)
{
    return QJsonDocument(fields).toJson(QJsonDocument::Compact);
}

} // namespace

class TestRestCompletions : public QObject {
    Q_OBJECT

    std::unique_ptr<HeadlessProcess> m_server;
    quint16 m_port = 0;

private slots:
    void initTestCase()
    {
        m_server = std::make_unique<HeadlessProcess>(QStringList{
            "--model", "builtin:tiny-decoder", "--preset", "test", "--threads", "1", "--device", "cpu"});
        QVERIFY2(m_server->start(), qPrintable(m_server->output()));
        m_port = m_server->port();
    }

    void cleanupTestCase()
    {
        QVERIFY(m_server->stop(SIGTERM));
        QCOMPARE(m_server->exitCode(), 0);
    }

    void completionObjectWithUsage()
    {
        const HttpResponse r = httpRequest(m_port, "POST", "/v1/completions",
                                           completionBody({{"prompt", "hello"}, {"max_tokens", 5}}));
        QCOMPARE(r.status, 200);
        const QJsonObject o = r.json();
        QCOMPARE(o.value("object").toString(), QStringLiteral("text_completion"));
        QVERIFY(o.value("id").toString().startsWith("cmpl-"));
        QVERIFY(o.value("created").toInteger() > 1600000000);
        const QJsonObject choice = o.value("choices").toArray().at(0).toObject();
        QCOMPARE(choice.value("index").toInt(), 0);
        QCOMPARE(choice.value("finish_reason").toString(), QStringLiteral("length"));
        const QJsonObject usage = o.value("usage").toObject();
        QCOMPARE(usage.value("prompt_tokens").toInt(), 5); // "hello": one token per byte
        QCOMPARE(usage.value("completion_tokens").toInt(), 5);
        QCOMPARE(usage.value("total_tokens").toInt(), 10);
        // Greedy: the same text /v1/infer generates for the same prompt.
        const HttpResponse infer =
            httpRequest(m_port, "POST", "/v1/infer", toJson({{"text", "hello"}, {"max_new_tokens", 5}}));
        QCOMPARE(infer.status, 200);
        QCOMPARE(choice.value("text").toString(),
                 infer.json().value("output").toObject().value("text").toString());

        // A prompt as token ids.
        const HttpResponse ids =
            httpRequest(m_port, "POST", "/v1/completions",
                        completionBody({{"prompt", QJsonArray{1, 2, 3}}, {"max_tokens", 2}}));
        QCOMPARE(ids.status, 200);
        QCOMPARE(ids.json().value("usage").toObject().value("prompt_tokens").toInt(), 3);
        QCOMPARE(ids.json().value("usage").toObject().value("completion_tokens").toInt(), 2);
    }

    void streamSendsOneChunkPerTokenWhileGenerating()
    {
        const int maxTokens = 48;
        QTcpSocket socket;
        socket.connectToHost(QHostAddress::LocalHost, m_port);
        QVERIFY(socket.waitForConnected(5000));
        QElapsedTimer clock;
        clock.start();
        const SseAnswer a = postSse(
            socket, completionBody({{"prompt", "hello"}, {"max_tokens", maxTokens}, {"stream", true}}),
            clock);
        QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
        QCOMPARE(a.status, 200);
        QCOMPARE(a.headers.value("content-type"), QByteArray("text/event-stream"));
        QVERIFY(a.ended);
        // maxTokens token chunks, the closing chunk, [DONE].
        QCOMPARE(a.events.size(), maxTokens + 2);
        QCOMPARE(a.events.back().data, QByteArray("[DONE]"));
        QString text;
        for (int i = 0; i < maxTokens; ++i) {
            const QJsonObject chunk = jsonOf(a.events[i].data);
            QCOMPARE(chunk.value("object").toString(), QStringLiteral("text_completion"));
            const QJsonObject choice = chunk.value("choices").toArray().at(0).toObject();
            QVERIFY2(choice.value("finish_reason").isNull(), a.events[i].data.constData());
            text += choice.value("text").toString();
        }
        const QJsonObject last = jsonOf(a.events[maxTokens].data);
        const QJsonObject lastChoice = last.value("choices").toArray().at(0).toObject();
        QCOMPARE(lastChoice.value("finish_reason").toString(), QStringLiteral("length"));
        text += lastChoice.value("text").toString();
        QCOMPARE(last.value("usage").toObject().value("completion_tokens").toInt(), maxTokens);
        QCOMPARE(last.value("usage").toObject().value("prompt_tokens").toInt(), 5);
        // The chunks add up to the non-streamed answer.
        const HttpResponse whole =
            httpRequest(m_port, "POST", "/v1/completions",
                        completionBody({{"prompt", "hello"}, {"max_tokens", maxTokens}}));
        QCOMPARE(whole.status, 200);
        QCOMPARE(text, whole.json().value("choices").toArray().at(0).toObject().value("text").toString());
        // Streamed: the first token arrived before the answer was complete.
        const qint64 firstChunk = a.events.front().atNs, done = a.events.back().atNs;
        QVERIFY2(firstChunk < done, qPrintable(QStringLiteral("first chunk at %1 ms, [DONE] at %2 ms")
                                                   .arg(firstChunk / 1e6)
                                                   .arg(done / 1e6)));

        // The connection stays usable for the next request (chunked, keep-alive).
        const SseAnswer again =
            postSse(socket, completionBody({{"prompt", "hi"}, {"max_tokens", 2}, {"stream", true}}), clock);
        QCOMPARE(again.status, 200);
        QCOMPARE(again.events.size(), 2 + 2);
    }

    void errorsAreAnsweredLikeTheOtherRoutes_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reason");
        QTest::newRow("malformed JSON")
            << QByteArray("{\"prompt\": \"hi\",") /* cut short */ << 400 << "not valid JSON";
        QTest::newRow("not an object") << QByteArray("[1, 2]") << 400 << "must be a JSON object";
        QTest::newRow("no prompt") << QByteArray(R"({"max_tokens": 3})") << 400 << "'prompt' is required";
        QTest::newRow("prompt of the wrong type")
            << QByteArray(R"({"prompt": 42})") << 400 << "'prompt' must be a string or an array of token ids";
        QTest::newRow("prompt of strings")
            << QByteArray(R"({"prompt": ["a", "b"]})") << 400 << "prompt[0] must be a token id";
        QTest::newRow("token outside the vocabulary")
            << QByteArray(R"({"prompt": [1, 100000]})") << 400 << "outside the vocabulary";
        QTest::newRow("empty prompt") << QByteArray(R"({"prompt": ""})") << 400 << "'prompt' is empty";
        QTest::newRow("max_tokens of the wrong type") << QByteArray(R"({"prompt": "hi", "max_tokens": "5"})")
                                                      << 400 << "'max_tokens' must be an integer";
        QTest::newRow("max_tokens 0")
            << QByteArray(R"({"prompt": "hi", "max_tokens": 0})") << 400 << "max_tokens 0 is below 1";
        QTest::newRow("max_tokens above the limit")
            << QByteArray(R"({"prompt": "hi", "max_tokens": 100000, "stream": true})") << 400
            << "above the model's limit";
        QTest::newRow("stream not a bool")
            << QByteArray(R"({"prompt": "hi", "stream": "yes"})") << 400 << "'stream' must be true or false";
        QTest::newRow("n > 1") << QByteArray(R"({"prompt": "hi", "n": 2})") << 400 << "'n' must be 1";
        QTest::newRow("unknown field") << QByteArray(R"({"prompt": "hi", "max_new_tokens": 2})") << 400
                                       << "unknown field 'max_new_tokens'";
        QTest::newRow("another model")
            << QByteArray(R"({"prompt": "hi", "model": "gpt-4"})") << 404 << "unknown model 'gpt-4'";
    }
    void errorsAreAnsweredLikeTheOtherRoutes()
    {
        QFETCH(QByteArray, body);
        QFETCH(int, status);
        QFETCH(QString, reason);
        const HttpResponse r = httpRequest(m_port, "POST", "/v1/completions", body);
        QCOMPARE(r.status, status);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QVERIFY2(r.json().value("error").toString().contains(reason), r.body.constData());
        // The server keeps serving.
        QCOMPARE(httpRequest(m_port, "GET", "/v2/health/ready").status, 200);
    }

    void methodAndLimitsAsElsewhere()
    {
        const HttpResponse get = httpRequest(m_port, "GET", "/v1/completions");
        QCOMPARE(get.status, 405);
        QCOMPARE(get.header("allow"), QByteArray("POST"));
        // The body limit (1 MiB by default) holds here too.
        const QByteArray huge = "{\"prompt\": \"" + QByteArray(2 << 20, 'x') + "\"}";
        QCOMPARE(httpRequest(m_port, "POST", "/v1/completions", huge).status, 413);
        // Without a token, a foreign Host is refused.
        QCOMPARE(httpRequest(m_port, "POST", "/v1/completions", completionBody({{"prompt", "hi"}}),
                             {{"Host", "evil.example"}})
                     .status,
                 403);
    }

    // A client that hangs up mid-stream: the server marks the request
    // cancelled (Request::cancelled, set when Qt deletes the connection),
    // writes nothing more, and keeps serving. The request then ends in the
    // engine — as `cancelled` where the scheduler honours the flag at its
    // next step, else as `ok` once its batch finishes — and is counted once.
    void disconnectMidStream()
    {
        auto ended = [this] {
            const QByteArray m = httpRequest(m_port, "GET", "/metrics").body;
            return std::max(0.0, metricValue(m, R"(batchpilot_requests_total{status="ok"})")) +
                   std::max(0.0, metricValue(m, R"(batchpilot_requests_total{status="cancelled"})"));
        };
        const double endedBefore = ended();
        {
            QTcpSocket socket;
            socket.connectToHost(QHostAddress::LocalHost, m_port);
            QVERIFY(socket.waitForConnected(5000));
            QElapsedTimer clock;
            clock.start();
            const SseAnswer a =
                postSse(socket, completionBody({{"prompt", "hello"}, {"max_tokens", 200}, {"stream", true}}),
                        clock, 1);
            QCOMPARE(a.status, 200);
            QCOMPARE(a.events.size(), 1);
            socket.abort(); // the client goes away after its first token
        }
        QTRY_VERIFY_WITH_TIMEOUT(ended() >= endedBefore + 1, 60000);
        const HttpResponse next = httpRequest(m_port, "POST", "/v1/completions",
                                              completionBody({{"prompt", "hi"}, {"max_tokens", 2}}));
        QCOMPARE(next.status, 200);
        QVERIFY(m_server->isRunning());
    }
};

QTEST_GUILESS_MAIN(TestRestCompletions)
#include "test_rest_completions.moc"
