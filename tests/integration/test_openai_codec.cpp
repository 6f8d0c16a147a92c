// app/rest/openai_codec on its own: the request's fields and errors, the
// completion object and chunks, and the streamed text that never splits a
// UTF-8 character yet adds up to the whole answer's text.
#include "app/rest/openai_codec.h"

#include "engine/tokenizer.h"

#include <QtTest>

using namespace bp;
using namespace bp::rest;

namespace {
ModelInfo decoderLike()
{
    ModelInfo m;
    m.name = "builtin:tiny-decoder";
    m.generative = true;
    m.vocabSize = 300;
    m.maxNewTokensLimit = 100;
    return m;
}
} // namespace

class TestOpenAiCodec : public QObject {
    Q_OBJECT
private slots:
    void parsesTextAndTokenPrompts()
    {
        auto text = parseCompletionRequest(R"({"prompt": "héllo", "max_tokens": 7, "stream": true,
                                               "temperature": 0, "model": "builtin:tiny-decoder"})",
                                           decoderLike());
        QVERIFY2(text.isOk(), text.status().message().c_str());
        QCOMPARE(text->request.tokens, ByteTokenizer::encode("héllo"));
        QCOMPARE(text->promptTokens, std::size_t(6)); // é is two bytes
        QCOMPARE(text->request.maxNewTokens, 7);
        QVERIFY(text->stream);
        auto ids = parseCompletionRequest(R"({"prompt": [5, 299]})", decoderLike());
        QVERIFY(ids.isOk());
        QCOMPARE(ids->request.tokens, (std::vector<TokenId>{5, 299}));
        QCOMPARE(ids->request.maxNewTokens, 16); // OpenAI's default
        QVERIFY(!ids->stream);
    }

    void refusesWhatItCannotDo_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("reason");
        QTest::newRow("max_tokens above the limit") << QByteArray(R"({"prompt": "a", "max_tokens": 101})")
                                                    << "max_tokens 101 is above the model's limit of 100";
        QTest::newRow("negative max_tokens")
            << QByteArray(R"({"prompt": "a", "max_tokens": -1})") << "max_tokens -1 is below 1";
        QTest::newRow("echo") << QByteArray(R"({"prompt": "a", "echo": true})") << "'echo' must be false";
        QTest::newRow("logprobs") << QByteArray(R"({"prompt": "a", "logprobs": 2})")
                                  << "'logprobs' is not supported";
        QTest::newRow("nested prompts")
            << QByteArray(R"({"prompt": [[1, 2]]})") << "prompt[0] must be a token id";
    }
    void refusesWhatItCannotDo()
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, reason);
        auto r = parseCompletionRequest(body.toStdString(), decoderLike());
        QVERIFY(!r.isOk());
        QVERIFY2(QString::fromStdString(r.status().message()).contains(reason), r.status().message().c_str());
    }

    void needsAGenerativeModel()
    {
        ModelInfo encoder = decoderLike();
        encoder.generative = false;
        auto r = parseCompletionRequest(R"({"prompt": "a"})", encoder);
        QVERIFY(!r.isOk());
        QVERIFY(QString::fromStdString(r.status().message()).contains("does not generate tokens"));
    }

    void objectAndChunks()
    {
        const auto o = completionObject("cmpl-1", 1700000000, "m", "abc", "length", 4, 3);
        QCOMPARE(o["usage"]["total_tokens"].get<int>(), 7);
        QCOMPARE(o["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));
        const auto c = completionChunk("cmpl-1", 1700000000, "m", "a");
        QVERIFY(c["choices"][0]["finish_reason"].is_null());
        QCOMPARE(sseEvent(nlohmann::json{{"a", 1}}), std::string("data: {\"a\":1}\n\n"));
        QCOMPARE(finishReason(3, 3), std::string("length"));
        QCOMPARE(finishReason(2, 3), std::string("stop"));
    }

    void streamedTextNeverSplitsACharacter()
    {
        // "a", é (2 bytes), € (3 bytes), 😀 (4 bytes), an id with no bytes, a stray continuation byte.
        std::vector<TokenId> tokens = ByteTokenizer::encode("aé€😀");
        tokens.push_back(280);
        tokens.push_back(0x80);
        tokens.push_back('z');
        TokenTextStream stream;
        std::string joined;
        std::vector<std::string> deltas;
        for (TokenId t : tokens) {
            deltas.push_back(stream.push(t));
            joined += deltas.back();
        }
        joined += stream.finish();
        QCOMPARE(joined, ByteTokenizer::decode(tokens));
        QCOMPARE(deltas[1], std::string()); // first byte of é: held
        QCOMPARE(deltas[2], std::string("é"));
        QCOMPARE(deltas[5], std::string("€"));
        QCOMPARE(deltas[9], std::string("😀"));
        for (const std::string &d : deltas) // each delta is valid UTF-8 on its own
            QCOMPARE(ByteTokenizer::decode(ByteTokenizer::encode(d)), d);
    }
};

QTEST_GUILESS_MAIN(TestOpenAiCodec)
#include "test_openai_codec.moc"
