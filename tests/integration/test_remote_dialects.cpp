// The OpenAI bodies a calibration sends to each kind of server
// (app/remote/remote_codec.h ServerDialect), without a network:
//  - TGI: the completions prompt as text (chatText), since TGI's
//    /v1/completions takes no token ids;
//  - any other kind, or none: the prompt as token ids, as before.
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
