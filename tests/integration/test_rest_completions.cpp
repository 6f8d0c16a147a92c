// The OpenAI-compatible API against the real headless server with
// builtin:tiny-decoder: the completion object and its usage, the
// server-sent-event stream (one chunk per token, arriving while the answer
// is still being generated, then [DONE]), GET /v1/models, chat
// completions, lists of prompts, the OpenAI error objects, and a client
// that hangs up mid-stream.
//
// One test per request and stream shape of the tools operators point at
// such a server, the fields taken from their public sources (cited at each
// test): vLLM's `bench serve` (backends openai and openai-chat), NVIDIA's
// genai-perf (completions and chat converters) and guidellm (its text and
// chat completions handlers). Each test reads the answer the way that tool
// does.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QElapsedTimer>
#include <QFile>
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

// The `data:` payloads of a whole SSE body (HttpConnection de-chunks it).
QList<QByteArray> sseData(const QByteArray &body)
{
    QList<QByteArray> out;
    for (const QByteArray &event : body.split('\n'))
        if (event.startsWith("data: "))
            out.append(event.mid(6));
    return out;
}

// A streamed request on a fresh connection; the events, [DONE] last.
QList<QByteArray> streamed(quint16 port, const QByteArray &path, const QJsonObject &fields,
                           int *status = nullptr)
{
    const HttpResponse r = httpRequest(port, "POST", path, completionBody(fields));
    if (status)
        *status = r.status;
    if (r.status != 200 || r.header("content-type") != "text/event-stream")
        return {r.body};
    return sseData(r.body);
}

// The OpenAI error object of an answer; an empty object when it is not one.
QJsonObject openAiError(const HttpResponse &r)
{
    const QJsonObject e = r.json().value("error").toObject();
    for (const char *key : {"message", "type", "param", "code"})
        if (!e.contains(QLatin1String(key)))
            return {};
    return e;
}

// The chat template of docs/rest.md for one user message.
int chatPromptTokens(const QByteArray &userText)
{
    return int(QByteArray("<|user|>\n" + userText + "\n<|assistant|>\n").size());
}

// Puts the server's config back as it was when this was made.
class ConfigRestorer {
public:
    explicit ConfigRestorer(quint16 port)
        : m_port(port), m_config(httpRequest(port, "GET", "/v1/config").body)
    {
    }
    ~ConfigRestorer() { httpRequest(m_port, "PUT", "/v1/config", m_config); }

private:
    quint16 m_port;
    QByteArray m_config;
};

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
        // Long enough (about 200 steps of the test preset, 20-50 ms) that
        // the first chunk arrives well before [DONE] even when this client
        // is not scheduled for a few milliseconds: with 48 tokens (~5 ms)
        // a busy 2-core machine read the whole stream at once about one
        // run in four.
        const int maxTokens = 200;
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

    // GET /v1/models: what guidellm, genai-perf and the openai clients call
    // first to learn the model's name.
    void modelsList()
    {
        const HttpResponse r = httpRequest(m_port, "GET", "/v1/models");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("object").toString(), QStringLiteral("list"));
        const QJsonArray data = r.json().value("data").toArray();
        QCOMPARE(data.size(), 1);
        const QJsonObject model = data.at(0).toObject();
        QCOMPARE(model.value("id").toString(), QStringLiteral("builtin:tiny-decoder"));
        QCOMPARE(model.value("object").toString(), QStringLiteral("model"));
        QCOMPARE(model.value("owned_by").toString(), QStringLiteral("batchpilot"));
        QCOMPARE(model.value("max_model_len").toInt(), 255); // preset test: 256 positions
        QVERIFY(model.value("created").toInteger() > 1600000000);
        // The id it lists is one the completions accept.
        QCOMPARE(
            httpRequest(m_port, "POST", "/v1/completions",
                        completionBody({{"model", model.value("id")}, {"prompt", "hi"}, {"max_tokens", 1}}))
                .status,
            200);
        const HttpResponse one = httpRequest(m_port, "GET", "/v1/models/tiny-decoder");
        QCOMPARE(one.status, 200);
        QCOMPARE(one.json().value("id").toString(), QStringLiteral("builtin:tiny-decoder"));
        const HttpResponse other = httpRequest(m_port, "GET", "/v1/models/meta-llama/Llama-3.1-8B");
        QCOMPARE(other.status, 404);
        QCOMPARE(openAiError(other).value("code").toString(), QStringLiteral("model_not_found"));
    }

    // vLLM `bench serve --backend openai`: the payload of
    // async_request_openai_completions (vllm/benchmarks/lib/
    // endpoint_request_func.py): prompt text, repetition_penalty 1.0,
    // max_tokens, logprobs null, stream with stream_options.include_usage,
    // and ignore_eos with --ignore-eos. It takes TTFT from the first chunk
    // with choices and output_tokens from the chunk whose choices are empty.
    void vllmBenchServeCompletions()
    {
        const int n = 12;
        const QList<QByteArray> events = streamed(m_port, "/v1/completions",
                                                  {{"model", "builtin:tiny-decoder"},
                                                   {"prompt", "The quick brown fox"},
                                                   {"repetition_penalty", 1.0},
                                                   {"max_tokens", n},
                                                   {"logprobs", QJsonValue::Null},
                                                   {"stream", true},
                                                   {"stream_options", QJsonObject{{"include_usage", true}}},
                                                   {"ignore_eos", true}});
        QCOMPARE(events.size(), n + 1 + 1 + 1); // tokens, the closing chunk, usage, [DONE]
        QCOMPARE(events.back(), QByteArray("[DONE]"));
        int outputTokens = -1, tokenChunks = 0;
        for (qsizetype i = 0; i + 1 < events.size(); ++i) {
            const QJsonObject chunk = jsonOf(events[i]);
            const QJsonArray choices = chunk.value("choices").toArray();
            if (!choices.isEmpty()) {
                QVERIFY2(chunk.contains("usage") && chunk.value("usage").isNull(), events[i].constData());
                if (choices.at(0).toObject().value("finish_reason").isNull())
                    ++tokenChunks;
                else
                    QCOMPARE(choices.at(0).toObject().value("finish_reason").toString(),
                             QStringLiteral("length"));
            } else {
                const QJsonObject usage = chunk.value("usage").toObject();
                outputTokens = usage.value("completion_tokens").toInt();
                QCOMPARE(usage.value("prompt_tokens").toInt(), 19);
                QVERIFY2(i == events.size() - 2, "the usage chunk comes last, before [DONE]");
            }
        }
        QCOMPARE(tokenChunks, n);
        QCOMPARE(outputTokens, n);
    }

    // vLLM `bench serve --backend openai-chat`: the payload of
    // async_request_openai_chat_completions (same file): messages with one
    // user message whose content is a list of text parts,
    // max_completion_tokens, stream, stream_options.include_usage. It
    // reads choices[0].delta.content and the usage chunk. A streamed chat
    // run with usage, checked against the non-streamed answer.
    void vllmBenchServeChat()
    {
        const int n = 10;
        const QByteArray prompt = "Say something";
        const QJsonArray messages{
            QJsonObject{{"role", "user"},
                        {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", QString(prompt)}}}}}};
        const QList<QByteArray> events = streamed(m_port, "/v1/chat/completions",
                                                  {{"model", "builtin:tiny-decoder"},
                                                   {"messages", messages},
                                                   {"max_completion_tokens", n},
                                                   {"stream", true},
                                                   {"stream_options", QJsonObject{{"include_usage", true}}}});
        // The role delta, n content deltas, the closing delta, usage, [DONE].
        QCOMPARE(events.size(), 1 + n + 1 + 1 + 1);
        QCOMPARE(events.back(), QByteArray("[DONE]"));
        const QJsonObject first = jsonOf(events.front());
        QCOMPARE(first.value("object").toString(), QStringLiteral("chat.completion.chunk"));
        QVERIFY(first.value("id").toString().startsWith("chatcmpl-"));
        const QJsonObject firstDelta =
            first.value("choices").toArray().at(0).toObject().value("delta").toObject();
        QCOMPARE(firstDelta.value("role").toString(), QStringLiteral("assistant"));
        QString text;
        for (int i = 1; i <= n; ++i) {
            const QJsonObject choice = jsonOf(events[i]).value("choices").toArray().at(0).toObject();
            QVERIFY(choice.value("finish_reason").isNull());
            QVERIFY(!choice.value("delta").toObject().contains("role"));
            text += choice.value("delta").toObject().value("content").toString();
        }
        const QJsonObject closing = jsonOf(events[n + 1]).value("choices").toArray().at(0).toObject();
        QCOMPARE(closing.value("finish_reason").toString(), QStringLiteral("length"));
        text += closing.value("delta").toObject().value("content").toString();
        const QJsonObject usageChunk = jsonOf(events[n + 2]);
        QVERIFY(usageChunk.value("choices").toArray().isEmpty());
        const QJsonObject usage = usageChunk.value("usage").toObject();
        QCOMPARE(usage.value("completion_tokens").toInt(), n);
        QCOMPARE(usage.value("prompt_tokens").toInt(), chatPromptTokens(prompt));
        QCOMPARE(usage.value("total_tokens").toInt(), n + chatPromptTokens(prompt));

        // Not streamed (the openai clients' chat.completions.create): the
        // same text, greedy; and the same tokens /v1/completions gives the
        // template's text.
        const HttpResponse whole = httpRequest(
            m_port, "POST", "/v1/chat/completions",
            completionBody(
                {{"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", QString(prompt)}}}},
                 {"max_tokens", n}}));
        QCOMPARE(whole.status, 200);
        QCOMPARE(whole.json().value("object").toString(), QStringLiteral("chat.completion"));
        const QJsonObject message = whole.json().value("choices").toArray().at(0).toObject();
        QCOMPARE(message.value("finish_reason").toString(), QStringLiteral("length"));
        QCOMPARE(message.value("message").toObject().value("role").toString(), QStringLiteral("assistant"));
        QCOMPARE(message.value("message").toObject().value("content").toString(), text);
        QCOMPARE(whole.json().value("usage").toObject().value("prompt_tokens").toInt(),
                 chatPromptTokens(prompt));
        const HttpResponse templated =
            httpRequest(m_port, "POST", "/v1/completions",
                        completionBody({{"prompt", QString("<|user|>\n" + prompt + "\n<|assistant|>\n")},
                                        {"max_tokens", n}}));
        QCOMPARE(templated.json().value("choices").toArray().at(0).toObject().value("text").toString(), text);
    }

    // genai-perf --endpoint-type completions --streaming: the payload of
    // OpenAICompletionsConverter (triton-inference-server/perf_analyzer,
    // genai-perf/genai_perf/inputs/converters/openai_completions_converter.py):
    // "prompt" is the row's list of texts, "max_tokens" when an output
    // length is asked for, "stream", and --extra-inputs merged in (operators
    // pass ignore_eos and min_tokens to fix the output length). No
    // stream_options: the closing chunk carries the usage.
    void genaiPerfCompletions()
    {
        const int n = 6;
        const QList<QByteArray> events = streamed(m_port, "/v1/completions",
                                                  {{"model", "tiny-decoder"},
                                                   {"prompt", QJsonArray{"a synthetic prompt"}},
                                                   {"stream", true},
                                                   {"max_tokens", n},
                                                   {"ignore_eos", true},
                                                   {"min_tokens", n}});
        QCOMPARE(events.size(), n + 2);
        QCOMPARE(events.back(), QByteArray("[DONE]"));
        for (int i = 0; i < n; ++i) {
            const QJsonObject chunk = jsonOf(events[i]);
            QVERIFY(!chunk.contains("usage"));
            QCOMPARE(chunk.value("choices").toArray().at(0).toObject().value("index").toInt(), 0);
        }
        const QJsonObject closing = jsonOf(events[n]);
        QCOMPARE(closing.value("usage").toObject().value("completion_tokens").toInt(), n);
        QCOMPARE(closing.value("usage").toObject().value("prompt_tokens").toInt(), 18);
    }

    // genai-perf --endpoint-type chat --streaming: the payload of
    // OpenAIChatCompletionsConverter (same folder,
    // openai_chat_completions_converter.py): one user message with the
    // text as its content string, "stream", "max_tokens".
    void genaiPerfChat()
    {
        const int n = 5;
        const QByteArray prompt = "a synthetic prompt";
        const QList<QByteArray> events =
            streamed(m_port, "/v1/chat/completions",
                     {{"model", "tiny-decoder"},
                      {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", QString(prompt)}}}},
                      {"stream", true},
                      {"max_tokens", n}});
        QCOMPARE(events.size(), 1 + n + 1 + 1); // role, tokens, closing (with usage), [DONE]
        QCOMPARE(
            jsonOf(events[0]).value("choices").toArray().at(0).toObject().value("delta").toObject().value(
                "role"),
            QJsonValue("assistant"));
        const QJsonObject closing = jsonOf(events[n + 1]);
        QCOMPARE(closing.value("choices").toArray().at(0).toObject().value("finish_reason").toString(),
                 QStringLiteral("length"));
        QCOMPARE(closing.value("usage").toObject().value("completion_tokens").toInt(), n);
        QCOMPARE(closing.value("usage").toObject().value("prompt_tokens").toInt(), chatPromptTokens(prompt));
    }

    // guidellm, its /v1/completions handler (vllm-project/guidellm,
    // src/guidellm/backends/openai/request_handlers.py,
    // TextCompletionsRequestHandler.format): stream with stream_options
    // {include_usage, continuous_usage_stats}, max_tokens, stop null,
    // ignore_eos true, the prompt string. It keeps the last `usage` it sees.
    void guidellmCompletions()
    {
        const int n = 7;
        const QList<QByteArray> events = streamed(
            m_port, "/v1/completions",
            {{"model", "builtin:tiny-decoder"},
             {"stream", true},
             {"stream_options", QJsonObject{{"include_usage", true}, {"continuous_usage_stats", true}}},
             {"max_tokens", n},
             {"stop", QJsonValue::Null},
             {"ignore_eos", true},
             {"prompt", "guidellm prompt"}});
        QCOMPARE(events.size(), n + 3);
        QJsonObject lastUsage;
        int previous = -1;
        for (qsizetype i = 0; i + 1 < events.size(); ++i) {
            const QJsonObject chunk = jsonOf(events[i]);
            QVERIFY2(chunk.value("usage").isObject(),
                     events[i].constData()); // continuous usage: on every chunk
            lastUsage = chunk.value("usage").toObject();
            QVERIFY(lastUsage.value("completion_tokens").toInt() >= previous);
            previous = lastUsage.value("completion_tokens").toInt();
        }
        QCOMPARE(lastUsage.value("completion_tokens").toInt(), n);
        QCOMPARE(lastUsage.value("prompt_tokens").toInt(), 15);
    }

    // guidellm's /v1/chat/completions handler (ChatCompletionsRequestHandler
    // .format, same file): the same stream options, max_completion_tokens,
    // stop null, ignore_eos, a system message from the prefix column and one
    // user message whose content is a list of text parts.
    void guidellmChat()
    {
        const int n = 4;
        const QJsonArray messages{
            QJsonObject{{"role", "system"}, {"content", "You are terse."}},
            QJsonObject{{"role", "user"},
                        {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", "Hi"}}}}}};
        const QList<QByteArray> events = streamed(
            m_port, "/v1/chat/completions",
            {{"model", "builtin:tiny-decoder"},
             {"stream", true},
             {"stream_options", QJsonObject{{"include_usage", true}, {"continuous_usage_stats", true}}},
             {"max_completion_tokens", n},
             {"stop", QJsonValue::Null},
             {"ignore_eos", true},
             {"messages", messages}});
        QCOMPARE(events.size(), 1 + n + 1 + 1 + 1);
        QString text;
        for (qsizetype i = 0; i + 1 < events.size(); ++i) {
            const QJsonObject chunk = jsonOf(events[i]);
            QVERIFY(chunk.value("usage").isObject());
            const QJsonArray choices = chunk.value("choices").toArray();
            if (!choices.isEmpty())
                text += choices.at(0).toObject().value("delta").toObject().value("content").toString();
        }
        const QJsonObject usage = jsonOf(events[events.size() - 2]).value("usage").toObject();
        QCOMPARE(usage.value("completion_tokens").toInt(), n);
        const int prompt =
            int(QByteArray("<|system|>\nYou are terse.\n<|user|>\nHi\n<|assistant|>\n").size());
        QCOMPARE(usage.value("prompt_tokens").toInt(), prompt);
        QVERIFY(!text.isNull());
    }

    // A prompt that is a list: one choice per prompt, each with its own
    // index, run as separate engine requests that batch like any others.
    // Under static with a batch of 3, the three prompts of one request
    // make exactly one batch of 3.
    void promptListGivesOneChoicePerPrompt()
    {
        const ConfigRestorer restore(m_port);
        auto single = [this](const QString &prompt) {
            return httpRequest(m_port, "POST", "/v1/completions",
                               completionBody({{"prompt", prompt}, {"max_tokens", 4}}))
                .json()
                .value("choices")
                .toArray()
                .at(0)
                .toObject()
                .value("text")
                .toString();
        };
        const QStringList prompts{"one", "two two", "three three three"};
        QStringList expected;
        for (const QString &p : prompts)
            expected << single(p);
        QCOMPARE(putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 3}}).status, 200);
        const int batchesBefore = httpRequest(m_port, "GET", "/v1/stats").json().value("batches").toInt();
        const HttpResponse r = httpRequest(
            m_port, "POST", "/v1/completions",
            completionBody({{"prompt", QJsonArray{prompts[0], prompts[1], prompts[2]}}, {"max_tokens", 4}}));
        QCOMPARE(r.status, 200);
        const QJsonArray choices = r.json().value("choices").toArray();
        QCOMPARE(choices.size(), 3);
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(choices.at(i).toObject().value("index").toInt(), i);
            QCOMPARE(choices.at(i).toObject().value("text").toString(), expected[i]);
            QCOMPARE(choices.at(i).toObject().value("finish_reason").toString(), QStringLiteral("length"));
        }
        const QJsonObject usage = r.json().value("usage").toObject();
        QCOMPARE(usage.value("prompt_tokens").toInt(), 3 + 7 + 17);
        QCOMPARE(usage.value("completion_tokens").toInt(), 3 * 4);
        const QJsonObject stats = httpRequest(m_port, "GET", "/v1/stats").json();
        QCOMPARE(stats.value("batches").toInt(), batchesBefore + 1);

        // Streamed, as token-id lists: each choice's chunks carry its index,
        // each choice closes with its finish_reason, then usage and [DONE].
        const QList<QByteArray> events = streamed(
            m_port, "/v1/completions",
            {{"prompt", QJsonArray{QJsonArray{104, 105}, QJsonArray{111, 107}, QJsonArray{121, 111}}},
             {"max_tokens", 2},
             {"stream", true},
             {"stream_options", QJsonObject{{"include_usage", true}}}});
        QCOMPARE(events.size(), 3 * (2 + 1) + 1 + 1);
        QMap<int, int> tokens, closings;
        for (qsizetype i = 0; i + 2 < events.size(); ++i) {
            const QJsonObject choice = jsonOf(events[i]).value("choices").toArray().at(0).toObject();
            const int index = choice.value("index").toInt();
            (choice.value("finish_reason").isNull() ? tokens : closings)[index]++;
        }
        QCOMPARE(tokens, (QMap<int, int>{{0, 2}, {1, 2}, {2, 2}}));
        QCOMPARE(closings, (QMap<int, int>{{0, 1}, {1, 1}, {2, 1}}));
        QCOMPARE(
            jsonOf(events[events.size() - 2]).value("usage").toObject().value("completion_tokens").toInt(),
            6);
    }

    void errorsAreOpenAiErrorObjects_data()
    {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reason");
        QTest::addColumn<QString>("param"); // empty: null
        const QByteArray c = "/v1/completions", chat = "/v1/chat/completions";
        QTest::newRow("malformed JSON")
            << c << QByteArray("{\"prompt\": \"hi\",") /* cut short */ << 400 << "not valid JSON"
            << "";
        QTest::newRow("not an object") << c << QByteArray("[1, 2]") << 400 << "must be a JSON object"
                                       << "";
        QTest::newRow("no prompt") << c << QByteArray(R"({"max_tokens": 3})") << 400 << "'prompt' is required"
                                   << "prompt";
        QTest::newRow("prompt of the wrong type")
            << c << QByteArray(R"({"prompt": 42})") << 400 << "field 'prompt' must be"
            << "prompt";
        QTest::newRow("prompt list of mixed types")
            << c << QByteArray(R"({"prompt": ["a", 2]})") << 400 << "prompt[1] must be a string"
            << "prompt";
        QTest::newRow("token outside the vocabulary")
            << c << QByteArray(R"({"prompt": [1, 100000]})") << 400 << "outside the vocabulary"
            << "prompt";
        QTest::newRow("empty prompt") << c << QByteArray(R"({"prompt": ""})") << 400 << "'prompt' is empty"
                                      << "prompt";
        QTest::newRow("max_tokens of the wrong type")
            << c << QByteArray(R"({"prompt": "hi", "max_tokens": "5"})") << 400
            << "'max_tokens' must be an integer"
            << "max_tokens";
        QTest::newRow("max_tokens 0")
            << c << QByteArray(R"({"prompt": "hi", "max_tokens": 0})") << 400 << "max_tokens 0 is below 1"
            << "max_tokens";
        QTest::newRow("max_tokens above the limit")
            << c << QByteArray(R"({"prompt": "hi", "max_tokens": 100000, "stream": true})") << 400
            << "above the model's limit"
            << "max_tokens";
        QTest::newRow("stream not a bool") << c << QByteArray(R"({"prompt": "hi", "stream": "yes"})") << 400
                                           << "'stream' must be true or false"
                                           << "stream";
        QTest::newRow("n > 1") << c << QByteArray(R"({"prompt": "hi", "n": 2})") << 400 << "'n' must be 1"
                               << "n";
        QTest::newRow("unknown field") << c << QByteArray(R"({"prompt": "hi", "max_new_tokens": 2})") << 400
                                       << "unknown field 'max_new_tokens'"
                                       << "max_new_tokens";
        QTest::newRow("another model")
            << c << QByteArray(R"({"prompt": "hi", "model": "gpt-4"})") << 404 << "unknown model 'gpt-4'"
            << "model";
        QTest::newRow("prompt too long for the model")
            << c << QByteArray(R"({"prompt": ")" + QByteArray(300, 'x') + R"(", "max_tokens": 1})") << 400
            << "input"
            << "";
        QTest::newRow("chat without messages")
            << chat << QByteArray(R"({"max_tokens": 3})") << 400 << "'messages' is required"
            << "messages";
        QTest::newRow("chat image part")
            << chat
            << QByteArray(
                   R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})")
            << 400 << "only text parts"
            << "messages";
        QTest::newRow("chat max_completion_tokens above the limit")
            << chat
            << QByteArray(R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 999})")
            << 400 << "max_completion_tokens 999 is above"
            << "max_completion_tokens";
        QTest::newRow("chat another model")
            << chat << QByteArray(R"({"messages": [{"role": "user", "content": "x"}], "model": "gpt-4o"})")
            << 404 << "unknown model"
            << "model";
    }
    void errorsAreOpenAiErrorObjects()
    {
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, body);
        QFETCH(int, status);
        QFETCH(QString, reason);
        QFETCH(QString, param);
        const HttpResponse r = httpRequest(m_port, "POST", path, body);
        QCOMPARE(r.status, status);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        const QJsonObject e = openAiError(r);
        QVERIFY2(!e.isEmpty(), r.body.constData());
        QVERIFY2(e.value("message").toString().contains(reason), r.body.constData());
        QCOMPARE(e.value("type").toString(), QStringLiteral("invalid_request_error"));
        if (param.isEmpty())
            QVERIFY2(e.value("param").isNull(), r.body.constData());
        else
            QCOMPARE(e.value("param").toString(), param);
        QVERIFY(e.value("code").isString());
        if (status == 404)
            QCOMPARE(e.value("code").toString(), QStringLiteral("model_not_found"));
        // The server keeps serving.
        QCOMPARE(httpRequest(m_port, "GET", "/v2/health/ready").status, 200);
    }

    // The HTTP layer's own refusals on the OpenAI routes are OpenAI error
    // objects too (405, 413 from the connection guard, 403); other routes
    // keep {"error": "message"}.
    void methodAndLimitsAsElsewhere()
    {
        for (const QByteArray &path : {QByteArray("/v1/completions"), QByteArray("/v1/chat/completions")}) {
            const HttpResponse get = httpRequest(m_port, "GET", path);
            QCOMPARE(get.status, 405);
            QCOMPARE(get.header("allow"), QByteArray("POST"));
            QCOMPARE(openAiError(get).value("code").toString(), QStringLiteral("method_not_allowed"));
            // The body limit (1 MiB by default) holds here too, before Qt parses.
            const QByteArray huge = "{\"prompt\": \"" + QByteArray(2 << 20, 'x') + "\"}";
            const HttpResponse big = httpRequest(m_port, "POST", path, huge);
            QCOMPARE(big.status, 413);
            QCOMPARE(openAiError(big).value("code").toString(), QStringLiteral("payload_too_large"));
            // Without a token, a foreign Host is refused.
            const HttpResponse host = httpRequest(m_port, "POST", path, completionBody({{"prompt", "hi"}}),
                                                  {{"Host", "evil.example"}});
            QCOMPARE(host.status, 403);
            QCOMPARE(openAiError(host).value("type").toString(), QStringLiteral("permission_error"));
        }
        QCOMPARE(httpRequest(m_port, "POST", "/v1/models", "{}").status, 405);
        // Another API keeps its shape.
        const HttpResponse infer = httpRequest(m_port, "POST", "/v1/infer", "[1]");
        QCOMPARE(infer.status, 400);
        QVERIFY(infer.json().value("error").isString());
    }

    // 429 from the engine: a list of two prompts for a queue with room for
    // one, while a static batch keeps the first queued. The answer is an
    // OpenAI error naming the prompt, with Retry-After.
    void queueFullIsAnOpenAiError()
    {
        const ConfigRestorer restore(m_port);
        QCOMPARE(
            putConfig(m_port, {{"policy", "static"}, {"static_batch_size", 4}, {"queue_capacity", 1}}).status,
            200);
        HttpConnection c(m_port);
        c.send("POST", "/v1/completions",
               completionBody({{"prompt", QJsonArray{"a", "b"}}, {"max_tokens", 2}}));
        QVERIFY(waitForQueueDepth(m_port, 1));
        QCOMPARE(putConfig(m_port, {{"policy", "dynamic"}, {"queue_capacity", 4096}}).status, 200);
        const HttpResponse r = c.read();
        QCOMPARE(r.status, 429);
        QCOMPARE(r.header("retry-after"), QByteArray("1"));
        const QJsonObject e = openAiError(r);
        QVERIFY2(e.value("message").toString().startsWith("prompt[1]: "), r.body.constData());
        QCOMPARE(e.value("type").toString(), QStringLiteral("rate_limit_error"));
        QCOMPARE(e.value("code").toString(), QStringLiteral("queue_full"));
        QCOMPARE(e.value("param").toString(), QStringLiteral("prompt"));
    }

    // A client that hangs up mid-stream, under policy continuous:
    // the server sets Request::cancelled (its connection queue flags the
    // unanswered slot when the connection goes), writes nothing more, keeps
    // serving, and the scheduler ends the request at its next step as
    // `cancelled`, never `ok`. The generation asked for (1,000 tokens of
    // preset small, 2-3 s here) takes far longer than the hang-up takes to
    // reach the server (preset test would generate it all in ~50 ms); the
    // in-process test_rest_inprocess makes the same check step by step.
    void disconnectMidStreamCancels()
    {
        QTemporaryDir dir;
        const QString config = dir.filePath("continuous.json");
        {
            QFile file(config);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(R"({"policy": "continuous"})");
        }
        HeadlessProcess server({"--model", "builtin:tiny-decoder", "--preset", "small", "--threads", "1",
                                "--device", "cpu", "--config", config});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const quint16 port = server.port();
        auto count = [port](const char *status) {
            const QByteArray m = httpRequest(port, "GET", "/metrics").body;
            return std::max(
                0.0, metricValue(m, "batchpilot_requests_total{status=\"" + QByteArray(status) + "\"}"));
        };
        {
            QTcpSocket socket;
            socket.connectToHost(QHostAddress::LocalHost, port);
            QVERIFY(socket.waitForConnected(5000));
            QElapsedTimer clock;
            clock.start();
            const SseAnswer a =
                postSse(socket, completionBody({{"prompt", "hello"}, {"max_tokens", 1000}, {"stream", true}}),
                        clock, 1);
            QCOMPARE(a.status, 200);
            QCOMPARE(a.events.size(), 1);
            socket.abort(); // the client goes away after its first token
        }
        QTRY_COMPARE_WITH_TIMEOUT(count("cancelled"), 1.0, 60000);
        QCOMPARE(count("ok"), 0.0);
        const HttpResponse next = httpRequest(port, "POST", "/v1/completions",
                                              completionBody({{"prompt", "hi"}, {"max_tokens", 2}}));
        QCOMPARE(next.status, 200);
        QCOMPARE(count("ok"), 1.0);
        QVERIFY(server.stop(SIGTERM));
        QCOMPARE(server.exitCode(), 0);
    }
};

QTEST_GUILESS_MAIN(TestRestCompletions)
#include "test_rest_completions.moc"
