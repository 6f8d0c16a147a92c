// A Hugging Face decoder behind the OpenAI API of the real headless server:
// prompts are the model's own BPE tokens, chat messages go through its chat
// format, and the answer's text is the model's tokens decoded, streamed or
// not. The expected figures come from transformers 5.25 on the fixtures
// (tests/fixtures/hf/*/reference.json, written by tools/make_hf_fixtures.py):
//  - a text prompt counts as many prompt tokens as the reference tokenizer
//    gives it (the Llama-3 BOS included);
//  - a chat counts the reference chat template's tokens (Llama-3 headers,
//    Qwen2's ChatML);
//  - a greedy completion's text is transformers' decode of the reference's
//    greedy tokens, byte for byte, including the U+FFFD of a character cut
//    by the last token; streamed, its deltas join to the same text;
//  - a folder with a template of its own (llama-custom-chat) answers chat
//    through it; tools are a clear 400;
//  - a model without a chat template answers chat with an OpenAI 400 error;
//  - the official OpenAI Python client (tools/openai_client_check.py) gets
//    the same from the Qwen2 and the own-template folders: models, chat,
//    streamed chat with usage, completion. Skipped
//    where the `openai` package is not installed for python3 (or for the
//    interpreter BATCHPILOT_PYTHON names).
#include "headless_process.h"
#include "rest_test_util.h"

#include <QFile>
#include <QJsonArray>
#include <QProcess>
#include <QtTest>

namespace {

QString fixture(const QString &name)
{
    const QByteArray root = qgetenv("BATCHPILOT_SOURCE_DIR");
    return QString::fromUtf8(root.isEmpty() ? QByteArray(".") : root) + "/tests/fixtures/hf/" + name;
}

QJsonObject reference(const QString &name)
{
    QFile f(fixture(name) + "/reference.json");
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(f.fileName()));
    return QJsonDocument::fromJson(f.readAll()).object();
}

HttpResponse post(quint16 port, const QByteArray &path, const QJsonObject &body)
{
    return httpRequest(port, "POST", path, toJson(body), {}, 60000);
}

// The text of a streamed completion: the deltas of its SSE events joined.
QString streamedText(const QByteArray &body)
{
    QString text;
    for (const QByteArray &line : body.split('\n')) {
        if (!line.startsWith("data: ") || line == "data: [DONE]")
            continue;
        const QJsonArray choices = QJsonDocument::fromJson(line.mid(6)).object().value("choices").toArray();
        for (const QJsonValue &c : choices)
            text += c.toObject().value("text").toString();
    }
    return text;
}

} // namespace

class TestRestHfTokenizer : public QObject {
    Q_OBJECT

private slots:
    void llamaPromptsChatAndText()
    {
#ifndef BATCHPILOT_HAVE_TORCH
        QSKIP("built without libtorch (BATCHPILOT_TORCH=OFF)");
#endif
        const QJsonObject ref = reference("llama");
        HeadlessProcess server({"--model", "hf:" + fixture("llama"), "--device", "cpu"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const quint16 port = server.port();

        // A text prompt: the reference tokenizer's ids, BOS included.
        const QJsonObject first = ref.value("tokenizer").toArray().at(0).toObject();
        HttpResponse r = post(port, "/v1/completions",
                              {{"model", "llama"}, {"prompt", first.value("text")}, {"max_tokens", 2}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("usage").toObject().value("prompt_tokens").toInt(),
                 int(first.value("ids").toArray().size()));

        // A chat: the Llama-3 chat template's ids.
        const QJsonObject chat = ref.value("chat").toObject();
        r = post(port, "/v1/chat/completions",
                 {{"model", "llama"}, {"messages", chat.value("messages")}, {"max_tokens", 3}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("usage").toObject().value("prompt_tokens").toInt(),
                 int(chat.value("ids").toArray().size()));
        QCOMPARE(r.json().value("usage").toObject().value("completion_tokens").toInt(), 3);

        // Greedy tokens [157, 186, 225, 185, 225, 209] after prompt [311]:
        // transformers decodes them to "\uFFFD\uFFFD \uFFFD \x10" (two bytes
        // of a cut character, then one more).
        const QJsonObject generation = ref.value("generations").toArray().at(0).toObject();
        QCOMPARE(generation.value("prompt").toArray(), QJsonArray{311});
        const QString expected = QStringLiteral("\uFFFD\uFFFD \uFFFD \x10");
        const QJsonObject ask{{"model", "llama"}, {"prompt", QJsonArray{311}}, {"max_tokens", 6}};
        r = post(port, "/v1/completions", ask);
        QCOMPARE(r.status, 200);
        const QJsonObject choice = r.json().value("choices").toArray().at(0).toObject();
        QCOMPARE(choice.value("text").toString(), expected);

        QJsonObject streamed = ask;
        streamed.insert("stream", true);
        r = post(port, "/v1/completions", streamed);
        QCOMPARE(r.status, 200);
        QCOMPARE(streamedText(r.body), expected);
        QVERIFY(server.stop(SIGTERM));
    }

    void qwenChatIsChatMl()
    {
#ifndef BATCHPILOT_HAVE_TORCH
        QSKIP("built without libtorch (BATCHPILOT_TORCH=OFF)");
#endif
        const QJsonObject chat = reference("qwen2").value("chat").toObject();
        HeadlessProcess server({"--model", "hf:" + fixture("qwen2"), "--device", "cpu"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const HttpResponse r =
            post(server.port(), "/v1/chat/completions",
                 {{"model", "qwen2"}, {"messages", chat.value("messages")}, {"max_tokens", 2}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("usage").toObject().value("prompt_tokens").toInt(),
                 int(chat.value("ids").toArray().size()));
        QVERIFY(server.stop(SIGTERM));
    }

    // A folder as a user brings one: a Llama with its own byte-level BPE and a template
    // of its own (<|begin|>role ... <|end|>) answers chat through that
    // template, as transformers renders it; tools are refused clearly.
    void ownTemplateAnswersChat()
    {
#ifndef BATCHPILOT_HAVE_TORCH
        QSKIP("built without libtorch (BATCHPILOT_TORCH=OFF)");
#endif
        const QJsonObject chat = reference("llama-custom-chat").value("chat").toObject();
        HeadlessProcess server({"--model", "hf:" + fixture("llama-custom-chat"), "--device", "cpu"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const quint16 port = server.port();
        HttpResponse r =
            post(port, "/v1/chat/completions",
                 {{"model", "llama-custom-chat"}, {"messages", chat.value("messages")}, {"max_tokens", 3}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("usage").toObject().value("prompt_tokens").toInt(),
                 int(chat.value("ids").toArray().size()));
        QCOMPARE(r.json().value("usage").toObject().value("completion_tokens").toInt(), 3);
        const QJsonArray tools{QJsonObject{{"type", "function"}, {"function", QJsonObject{{"name", "f"}}}}};
        r = post(port, "/v1/chat/completions",
                 {{"model", "llama-custom-chat"}, {"messages", chat.value("messages")}, {"tools", tools}});
        QCOMPARE(r.status, 400);
        QVERIFY2(r.json().value("error").toObject().value("message").toString().contains(
                     "'tools' is not supported"),
                 r.body.constData());
        QVERIFY(server.stop(SIGTERM));
    }

    void noChatFormatIsAClearError()
    {
#ifndef BATCHPILOT_HAVE_TORCH
        QSKIP("built without libtorch (BATCHPILOT_TORCH=OFF)");
#endif
        HeadlessProcess server({"--model", "hf:" + fixture("mistral"), "--device", "cpu"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const quint16 port = server.port();
        const QJsonArray messages{QJsonObject{{"role", "user"}, {"content", "hi"}}};
        const HttpResponse r = post(port, "/v1/chat/completions",
                                    {{"model", "mistral"}, {"messages", messages}, {"max_tokens", 2}});
        QCOMPARE(r.status, 400);
        const QJsonObject error = r.json().value("error").toObject();
        QCOMPARE(error.value("type").toString(), QStringLiteral("invalid_request_error"));
        QVERIFY2(error.value("message").toString().contains("chat"),
                 qPrintable(error.value("message").toString()));
        // Completions still serve.
        QCOMPARE(
            post(port, "/v1/completions", {{"model", "mistral"}, {"prompt", "hi"}, {"max_tokens", 2}}).status,
            200);
        QVERIFY(server.stop(SIGTERM));
    }

    void officialOpenAiClient_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("qwen2 (ChatML)") << "qwen2";
        QTest::newRow("llama-custom-chat (its own template)") << "llama-custom-chat";
        QTest::newRow("mistral-sentencepiece ([INST], byte_fallback)") << "mistral-sentencepiece";
        QTest::newRow("qwen3 (Qwen 3's template)") << "qwen3";
        QTest::newRow("qwen3-moe (Qwen 3 MoE)") << "qwen3-moe";
        QTest::newRow("gemma3 (Gemma 3 template, sliding window)") << "gemma3";
    }
    void officialOpenAiClient()
    {
        QFETCH(QString, name);
#ifndef BATCHPILOT_HAVE_TORCH
        QSKIP("built without libtorch (BATCHPILOT_TORCH=OFF)");
#endif
        const QString python = qEnvironmentVariable("BATCHPILOT_PYTHON", QStringLiteral("python3"));
        QProcess probe;
        probe.start(python, {"-c", "import openai"});
        if (!probe.waitForFinished(60000) || probe.exitStatus() != QProcess::NormalExit ||
            probe.exitCode() != 0)
            QSKIP(qPrintable(QStringLiteral("the openai package is not installed for %1 (pip install openai; "
                                            "BATCHPILOT_PYTHON names another interpreter)")
                                 .arg(python)));
        HeadlessProcess server({"--model", "hf:" + fixture(name), "--device", "cpu"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const QByteArray root = qgetenv("BATCHPILOT_SOURCE_DIR");
        QProcess client;
        client.setProcessChannelMode(QProcess::MergedChannels);
        client.start(python, {QString::fromUtf8(root.isEmpty() ? QByteArray(".") : root) +
                                  "/tools/openai_client_check.py",
                              QStringLiteral("http://127.0.0.1:%1").arg(server.port()), "--reference",
                              fixture(name) + "/reference.json"});
        QVERIFY(client.waitForFinished(120000));
        const QString out = QString::fromUtf8(client.readAll());
        qInfo().noquote() << out;
        QCOMPARE(client.exitStatus(), QProcess::NormalExit);
        QVERIFY2(client.exitCode() == 0, qPrintable(out));
        QVERIFY(server.stop(SIGTERM));
    }
};

QTEST_GUILESS_MAIN(TestRestHfTokenizer)
#include "test_rest_hf_tokenizer.moc"
