// The OpenAI bodies a calibration sends to each kind of server
// (app/remote/remote_codec.h ServerDialect), without a network:
//  - TGI: the completions prompt as text (chatText), since TGI's
//    /v1/completions takes no token ids, and no ignore_eos (TGI's OpenAI
//    routes have no such field);
//  - vLLM: "ignore_eos": true and "min_tokens" = max_tokens, on completions
//    and chat; SGLang: "ignore_eos": true; so that a decode round's answers
//    run to max_tokens instead of stopping at an end-of-sequence token;
//  - llama-server: "ignore_eos" and "timings_per_token", so that each
//    chunk says how many tokens it holds;
//  - any other kind, or none (the official OpenAI API refuses unknown
//    fields): the plain bodies, token ids and no sampling extras.
#include "app/remote/remote_codec.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace bp;
using namespace bp::remote;

namespace {

Request request()
{
    Request r;
    r.tokens = {0, 1, 27, 3};
    r.maxNewTokens = 7;
    return r;
}

QJsonObject body(Protocol protocol, const std::string &server)
{
    const QByteArray b = requestBody(protocol, request(), "m", dialectFor(server));
    QJsonParseError e;
    const QJsonDocument d = QJsonDocument::fromJson(b, &e);
    if (e.error != QJsonParseError::NoError)
        qWarning("not JSON (%s): %s", qPrintable(e.errorString()), b.constData());
    return d.object();
}

} // namespace

class TestRemoteDialects : public QObject {
    Q_OBJECT
private slots:
    void tgiGetsTheCompletionsPromptAsText()
    {
        const QJsonObject b = body(Protocol::OpenAi, "tgi");
        QVERIFY(b.value("prompt").isString());
        QCOMPARE(b.value("prompt").toString(), QString::fromLatin1(chatText(request().tokens)));
        QCOMPARE(b.value("prompt").toString(), QStringLiteral("a b b d ")); // one word per token
        QCOMPARE(b.value("max_tokens").toInt(), 7);
        QVERIFY(b.value("stream").toBool());
        QCOMPARE(b.value("model").toString(), QStringLiteral("m"));
        QVERIFY(!b.contains("ignore_eos") && !b.contains("min_tokens"));
        QVERIFY(!body(Protocol::OpenAiChat, "tgi").contains("ignore_eos"));
        QVERIFY(!describe(dialectFor("tgi"), Protocol::OpenAi).empty());
        // chat carries text anyway: nothing to change
        QVERIFY(describe(dialectFor("tgi"), Protocol::OpenAiChat).empty());
    }

    void otherServersGetTokenIds_data()
    {
        QTest::addColumn<QString>("server");
        for (const char *s : {"", "vllm", "sglang", "triton", "batchpilot", "openai"})
            QTest::newRow(*s ? s : "unknown") << QString::fromLatin1(s);
    }
    void otherServersGetTokenIds()
    {
        QFETCH(QString, server);
        const QJsonObject b = body(Protocol::OpenAi, server.toStdString());
        QCOMPARE(b.value("prompt").toArray(), QJsonArray({0, 1, 27, 3}));
        QCOMPARE(b.value("max_tokens").toInt(), 7);
    }

    void vllmIgnoresEosAndSetsMinTokens_data()
    {
        QTest::addColumn<int>("protocol");
        QTest::newRow("completions") << int(Protocol::OpenAi);
        QTest::newRow("chat") << int(Protocol::OpenAiChat);
    }
    void vllmIgnoresEosAndSetsMinTokens()
    {
        QFETCH(int, protocol);
        const QJsonObject b = body(Protocol(protocol), "vllm");
        QCOMPARE(b.value("ignore_eos"), QJsonValue(true));
        QCOMPARE(b.value("min_tokens"), QJsonValue(7));
        QCOMPARE(b.value(protocol == int(Protocol::OpenAi) ? "max_tokens" : "max_completion_tokens"),
                 QJsonValue(7));
        QVERIFY(b.value("stream").toBool());
        QCOMPARE(describe(dialectFor("vllm"), Protocol(protocol)),
                 std::string("ignore_eos: true, min_tokens = max_tokens"));
    }

    void sglangIgnoresEos()
    {
        for (Protocol p : {Protocol::OpenAi, Protocol::OpenAiChat}) {
            const QJsonObject b = body(p, "sglang");
            QCOMPARE(b.value("ignore_eos"), QJsonValue(true));
            QVERIFY(!b.contains("min_tokens"));
        }
    }

    // llama-server: ignore_eos, and timings_per_token so that each chunk
    // says how many tokens it holds (SseReader::tokenCounts).
    void llamaServerCountsItsTokens()
    {
        for (Protocol p : {Protocol::OpenAi, Protocol::OpenAiChat}) {
            const QJsonObject b = body(p, "llamacpp");
            QCOMPARE(b.value("ignore_eos"), QJsonValue(true));
            QCOMPARE(b.value("timings_per_token"), QJsonValue(true));
            QVERIFY(!b.contains("min_tokens"));
        }
        QCOMPARE(body(Protocol::OpenAi, "llamacpp").value("prompt").toArray(), QJsonArray({0, 1, 27, 3}));
        QCOMPARE(describe(dialectFor("llamacpp"), Protocol::OpenAi),
                 std::string("ignore_eos: true, timings_per_token: true"));
        QVERIFY(!body(Protocol::OpenAi, "vllm").contains("timings_per_token"));
        // the slot a probe's stream asks for; none unless given
        QVERIFY(!body(Protocol::OpenAi, "llamacpp").contains("id_slot"));
        ServerDialect pinned = dialectFor("llamacpp");
        pinned.slot = 2;
        for (Protocol p : {Protocol::OpenAi, Protocol::OpenAiChat})
            QCOMPARE(
                QJsonDocument::fromJson(requestBody(p, request(), "m", pinned)).object().value("id_slot"),
                QJsonValue(2));
    }

    void othersGetNoSamplingExtras_data()
    {
        QTest::addColumn<QString>("server");
        for (const char *s : {"", "tgi", "triton", "batchpilot", "openai"})
            QTest::newRow(*s ? s : "unknown") << QString::fromLatin1(s);
    }
    void othersGetNoSamplingExtras()
    {
        QFETCH(QString, server);
        for (Protocol p : {Protocol::OpenAi, Protocol::OpenAiChat}) {
            const QJsonObject b = body(p, server.toStdString());
            QVERIFY(!b.contains("ignore_eos") && !b.contains("min_tokens"));
        }
        QVERIFY(describe(dialectFor(server.toStdString()), Protocol::OpenAiChat).empty());
    }

    // The unknown kind's bodies are exactly the plain ones.
    void noDialectIsThePlainBody()
    {
        QCOMPARE(requestBody(Protocol::OpenAi, request(), "m", dialectFor("")),
                 openAiCompletionBody(request(), "m"));
        QCOMPARE(requestBody(Protocol::OpenAiChat, request(), "m", dialectFor("")),
                 openAiChatBody(request(), "m"));
        QCOMPARE(requestBody(Protocol::Oip, request(), "m", dialectFor("tgi")), oipInferBody(request()));
    }
};

QTEST_GUILESS_MAIN(TestRemoteDialects)
#include "test_remote_dialects.moc"
