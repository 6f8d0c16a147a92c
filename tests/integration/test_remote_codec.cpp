// app/remote/remote_codec on its own: the protocols' names, routes and
// bodies, and the SSE reader on the stream shapes of /v1/completions and
// /v1/chat/completions (a role delta that is no token, "usage": null on
// token chunks, the include_usage chunk with empty choices); a shared
// prefix of token ids stays a shared prefix of chat text; llama-server's
// per-chunk token counts; a replayed answer's TPOT per output token.
#include "app/remote/remote_answer.h"
#include "app/remote/remote_codec.h"
#include "engine/workload/prefix_tokens.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace bp;
using namespace bp::remote;

class TestRemoteCodec : public QObject {
    Q_OBJECT
private slots:
    void protocols()
    {
        for (Protocol p : {Protocol::Oip, Protocol::OpenAi, Protocol::OpenAiChat})
            QCOMPARE(parseProtocol(protocolName(p)), std::optional<Protocol>(p));
        QVERIFY(!parseProtocol("chat"));
        QCOMPARE(routeFor(Protocol::OpenAiChat, "m"), QByteArray("/v1/chat/completions"));
        QCOMPARE(routeFor(Protocol::Oip, "a/b"), QByteArray("/v2/models/a%2Fb/infer"));
        QVERIFY(isStreaming(Protocol::OpenAiChat) && !isStreaming(Protocol::Oip));
    }

    void chatBody()
    {
        Request r;
        r.tokens = {0, 1, 27};
        r.maxNewTokens = 5;
        const QJsonObject b = QJsonDocument::fromJson(requestBody(Protocol::OpenAiChat, r, "m")).object();
        QCOMPARE(b.value("model").toString(), QStringLiteral("m"));
        QCOMPARE(b.value("max_completion_tokens").toInt(), 5);
        QVERIFY(b.value("stream").toBool());
        QVERIFY(b.value("stream_options").toObject().value("include_usage").toBool());
        const QJsonObject message = b.value("messages").toArray().at(0).toObject();
        QCOMPARE(message.value("role").toString(), QStringLiteral("user"));
        QCOMPARE(message.value("content").toString(), QStringLiteral("a b b ")); // one word per token
    }

    // A trace's shared blocks stay a shared prefix as chat text
    // (one word per token id), and different blocks give different text.
    void chatTextKeepsASharedPrefix()
    {
        std::mt19937_64 a(1), b(2);
        const auto p = promptTokens({5, 6, 7}, 64, 180, 32000, a);
        const auto q = promptTokens({5, 6, 8}, 64, 180, 32000, b);
        const QByteArray tp = chatText(p), tq = chatText(q);
        const qsizetype shared = 2 * 64 * 2; // two blocks of 64 one-letter words and their spaces
        QCOMPARE(tp.left(shared), tq.left(shared));
        QVERIFY(tp.mid(shared, 2 * 64) != tq.mid(shared, 2 * 64));
    }

    void chatStream()
    {
        SseReader reader;
        const TimePoint t0{};
        auto at = [t0](int ms) { return t0 + std::chrono::milliseconds(ms); };
        reader.feed(
            R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null})"
            "\n\n",
            at(1));
        QCOMPARE(reader.tokenEvents(), 0); // the role delta is no token
        reader.feed(
            R"(data: {"choices":[{"index":0,"delta":{"content":"h"},"finish_reason":null}],"usage":null})"
            "\n\n"
            R"(data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}],"usage":null})"
            "\n\n",
            at(5));
        QCOMPARE(reader.tokenEvents(), 2); // an empty delta mid-stream is a token (half a character)
        reader.feed(
            R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":null})"
            "\n\n"
            R"(data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}})"
            "\n\ndata: [DONE]\n\n",
            at(9));
        QCOMPARE(reader.tokenEvents(), 2);
        QCOMPARE(reader.usageTokens(), std::optional<int>(2));
        QVERIFY(reader.done());
        QVERIFY(reader.error().isEmpty());
        QCOMPARE(*reader.firstToken(), at(5));
    }

    // llama-server with timings_per_token: each chunk says the tokens
    // generated so far; a chunk that held two (a UTF-8 character split
    // between them) shows as a step of 2. A server that does not say
    // leaves the counts empty (the probe estimates them from the gaps).
    void llamaServerChunksCountTheirTokens()
    {
        SseReader reader;
        const TimePoint t0{};
        auto chunk = [](const char *text, int n) {
            return "data: {\"choices\":[{\"text\":\"" + QByteArray(text) +
                   "\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}],\"object\":\"text_"
                   "completion\"," +
                   "\"timings\":{\"prompt_n\":4,\"predicted_n\":" + QByteArray::number(n) + "}}\n\n";
        };
        reader.feed(chunk("a", 1) + chunk("b", 2) + chunk("\u00e9", 4) + chunk("c", 5), t0);
        reader.feed(R"(data: {"choices":[{"text":"","index":0,"finish_reason":"length"}],)"
                    R"("usage":{"completion_tokens":5},"timings":{"predicted_n":5}})"
                    "\n\ndata: [DONE]\n\n",
                    t0);
        QCOMPARE(reader.tokenEvents(), 4);
        QCOMPARE(reader.tokenCounts(), (std::vector<int>{1, 2, 4, 5}));
        QCOMPARE(reader.outputTokens(), 5);
        SseReader plain;
        plain.feed(R"(data: {"choices":[{"text":"a","index":0,"finish_reason":null}]})"
                   "\n\n" +
                       chunk("b", 2),
                   t0);
        QCOMPARE(plain.tokenEvents(), 2);
        QVERIFY(plain.tokenCounts().empty()); // not every chunk said
    }

    // A replayed answer's TPOT is per output token (usage), not per event:
    // 5 tokens in 4 events over 40 ms is 10 ms a token, not 13.3.
    void tpotCountsTokensNotEvents()
    {
        SseReader sse;
        const TimePoint t0{};
        auto at = [t0](int ms) { return t0 + std::chrono::milliseconds(ms); };
        const QByteArray token = R"(data: {"choices":[{"text":"x","index":0,"finish_reason":null}]})"
                                 "\n\n";
        sse.feed(token, at(20));
        sse.feed(token, at(30));
        sse.feed(token, at(50)); // two tokens
        sse.feed(token, at(60));
        sse.feed(
            R"(data: {"choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":{"completion_tokens":5}})"
            "\n\ndata: [DONE]\n\n",
            at(61));
        Request req;
        req.id = 1;
        req.arrival = t0;
        req.tokens = {1, 2, 3};
        req.maxNewTokens = 5;
        HttpResult r;
        r.status = 200;
        r.started = t0;
        r.finished = at(61);
        const RemoteAnswer a = answerOf(req, t0, r, Protocol::OpenAi, sse, {}, false);
        QCOMPARE(a.record.outputTokens, 5);
        QCOMPARE(a.record.timeToFirstToken, Duration(std::chrono::milliseconds(20)));
        QCOMPARE(a.record.timePerOutputToken, Duration(std::chrono::milliseconds(10)));
        QCOMPARE(a.record.interTokenLatencies.size(), std::size_t(3)); // the gaps between events
    }

    void errorText()
    {
        QCOMPARE(
            remote::errorText(R"({"error": {"message": "m", "type": "t", "param": null, "code": null}})"),
            QStringLiteral("m"));
        QCOMPARE(remote::errorText(R"({"error": "plain"})"), QStringLiteral("plain"));
    }
};

QTEST_GUILESS_MAIN(TestRemoteCodec)
#include "test_remote_codec.moc"
