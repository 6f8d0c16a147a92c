// app/rest/openai_codec on its own: the request's fields and errors, the
// completion object and chunks, and the streamed text that never splits a
// UTF-8 character yet adds up to the whole answer's text.
#include "app/rest/http_reply.h"
#include "app/rest/openai_chat.h"
#include "app/rest/openai_codec.h"

#include "engine/core/tokenizer.h"
#include "engine/model/bpe_tokenizer.h"

#include <QtTest>

#include <filesystem>
#include <fstream>

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
    m.maxSequenceLength = 200;
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
        QCOMPARE(text->prompts.size(), std::size_t(1));
        QCOMPARE(text->prompts[0].tokens, ByteTokenizer::encode("héllo")); // é is two bytes
        QCOMPARE(text->prompts[0].maxNewTokens, 7);
        QVERIFY(text->stream);
        QVERIFY(!text->includeUsage);
        auto ids = parseCompletionRequest(R"({"prompt": [5, 299]})", decoderLike());
        QVERIFY(ids.isOk());
        QCOMPARE(ids->prompts.size(), std::size_t(1));
        QCOMPARE(ids->prompts[0].tokens, (std::vector<TokenId>{5, 299}));
        QCOMPARE(ids->prompts[0].maxNewTokens, 16); // OpenAI's default
        QVERIFY(!ids->stream);
    }

    // A list of prompts (strings or token-id lists): one engine request per
    // prompt, each with max_tokens.
    void listsOfPromptsGiveOneRequestEach()
    {
        auto strings =
            parseCompletionRequest(R"({"prompt": ["ab", "cde", "f"], "max_tokens": 3})", decoderLike());
        QVERIFY2(strings.isOk(), strings.status().message().c_str());
        QCOMPARE(strings->prompts.size(), std::size_t(3));
        QCOMPARE(strings->prompts[1].tokens, ByteTokenizer::encode("cde"));
        for (const Request &r : strings->prompts)
            QCOMPARE(r.maxNewTokens, 3);
        auto ids = parseCompletionRequest(R"({"prompt": [[1, 2], [3]]})", decoderLike());
        QVERIFY2(ids.isOk(), ids.status().message().c_str());
        QCOMPARE(ids->prompts.size(), std::size_t(2));
        QCOMPARE(ids->prompts[1].tokens, (std::vector<TokenId>{3}));
        // One string in a list (genai-perf sends this shape): one prompt.
        auto one = parseCompletionRequest(R"({"prompt": ["hi"]})", decoderLike());
        QVERIFY(one.isOk());
        QCOMPARE(one->prompts.size(), std::size_t(1));
    }

    void streamOptions()
    {
        auto r = parseCompletionRequest(
            R"({"prompt": "a", "stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true}})",
            decoderLike());
        QVERIFY2(r.isOk(), r.status().message().c_str());
        QVERIFY(r->includeUsage);
        QVERIFY(r->continuousUsage);
        auto bad = parseCompletionRequest(R"({"prompt": "a", "stream_options": {"include_usage": 1}})",
                                          decoderLike());
        QVERIFY(!bad.isOk());
        QVERIFY(QString::fromStdString(bad.status().message()).contains("include_usage"));
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
        QTest::newRow("mixed prompt list")
            << QByteArray(R"({"prompt": ["a", [1, 2]]})") << "prompt[1] must be a string like prompt[0]";
        QTest::newRow("empty prompt list") << QByteArray(R"({"prompt": []})") << "'prompt' is an empty list";
        QTest::newRow("empty prompt in a list")
            << QByteArray(R"({"prompt": ["a", ""]})") << "prompt[1] is empty";
        QTest::newRow("token outside the vocabulary in a list")
            << QByteArray(R"({"prompt": [[1], [300]]})") << "prompt[1][0] = 300 is outside the vocabulary";
        QTest::newRow("n") << QByteArray(R"({"prompt": "a", "n": 2})") << "'n' must be 1";
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
        const auto o = completionObject(OpenAiEndpoint::Completions, "cmpl-1", 1700000000, "m",
                                        {{"abc", "length"}, {"d", "stop"}}, completionUsage(4, 3));
        QCOMPARE(o["object"].get<std::string>(), std::string("text_completion"));
        QCOMPARE(o["usage"]["total_tokens"].get<int>(), 7);
        QCOMPARE(o["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));
        QCOMPARE(o["choices"][1]["index"].get<int>(), 1);
        QCOMPARE(o["choices"][1]["text"].get<std::string>(), std::string("d"));
        const auto chat = completionObject(OpenAiEndpoint::Chat, "chatcmpl-1", 1700000000, "m",
                                           {{"hi", "stop"}}, completionUsage(4, 1));
        QCOMPARE(chat["object"].get<std::string>(), std::string("chat.completion"));
        QCOMPARE(chat["choices"][0]["message"]["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(chat["choices"][0]["message"]["content"].get<std::string>(), std::string("hi"));
        const auto c = completionChunk("cmpl-1", 1700000000, "m", 2, "a");
        QVERIFY(c["choices"][0]["finish_reason"].is_null());
        QCOMPARE(c["choices"][0]["index"].get<int>(), 2);
        const auto u = usageChunk(OpenAiEndpoint::Chat, "chatcmpl-1", 1700000000, "m", completionUsage(1, 2));
        QVERIFY(u["choices"].empty());
        QCOMPARE(u["object"].get<std::string>(), std::string("chat.completion.chunk"));
        QCOMPARE(sseEvent(nlohmann::json{{"a", 1}}), std::string("data: {\"a\":1}\n\n"));
        QCOMPARE(finishReason(3, 3), std::string("length"));
        QCOMPARE(finishReason(2, 3), std::string("stop"));
    }

    // The chat template of docs/rest.md, byte for byte.
    void chatTemplate()
    {
        QCOMPARE(chatPrompt({{"user", "Hi"}}), std::string("<|user|>\nHi\n<|assistant|>\n"));
        QCOMPARE(chatPrompt({{"system", "Be brief."}, {"user", "Hi"}}),
                 std::string("<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n"));
        auto r =
            parseChatRequest(R"({"model": "tiny-decoder", "messages": [{"role": "system", "content": "S"},
                                     {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
                                     "max_completion_tokens": 5, "max_tokens": 9, "stream": true,
                                     "stream_options": {"include_usage": true}, "temperature": 0.7, "seed": 1,
                                     "ignore_eos": true, "stop": null, "tools": [], "tool_choice": "none"})",
                             decoderLike());
        QVERIFY2(r.isOk(), r.status().message().c_str());
        QCOMPARE(r->endpoint, OpenAiEndpoint::Chat);
        QCOMPARE(r->prompts.size(), std::size_t(1));
        QCOMPARE(r->prompts[0].tokens,
                 ByteTokenizer::encode("<|system|>\nS\n<|user|>\na\nb\n<|assistant|>\n"));
        QCOMPARE(r->maxTokens, 5); // max_completion_tokens wins over max_tokens
        QVERIFY(r->stream && r->includeUsage);
        // Unset: what is left of the model's 200 positions after the prompt.
        auto unset = parseChatRequest(R"({"messages": [{"role": "user", "content": "Hi"}]})", decoderLike());
        QVERIFY(unset.isOk());
        QCOMPARE(unset->maxTokens, 100); // the model's limit (200 - 21 is more)
    }

    void chatRefusesWhatItCannotDo_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("reason");
        QTest::newRow("no messages") << QByteArray(R"({"max_tokens": 3})") << "'messages' is required";
        QTest::newRow("empty messages") << QByteArray(R"({"messages": []})") << "'messages' is empty";
        QTest::newRow("unknown role") << QByteArray(R"({"messages": [{"role": "robot", "content": "x"}]})")
                                      << "messages[0].role must be";
        QTest::newRow("image part")
            << QByteArray(
                   R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})")
            << "only text parts";
        QTest::newRow("tools") << QByteArray(
                                      R"({"messages": [{"role": "user", "content": "x"}], "tools": [{}]})")
                               << "'tools' is not supported";
        QTest::newRow("response_format json_object")
            << QByteArray(
                   R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})")
            << "'response_format' is not supported";
        QTest::newRow("unknown field")
            << QByteArray(R"({"messages": [{"role": "user", "content": "x"}], "foo": 1})")
            << "unknown field 'foo'";
        QTest::newRow("max_completion_tokens 0")
            << QByteArray(R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 0})")
            << "max_completion_tokens 0 is below 1";
    }
    // A Hugging Face model's own template renders the prompt; one that
    // raises (Gemma 2 refuses a system message) is a 400 with its message.
    void chatRendersTheModelsTemplate()
    {
        const char *root = std::getenv("BATCHPILOT_SOURCE_DIR");
        const std::filesystem::path source = std::string(root ? root : ".") + "/tests/fixtures/hf";
        const auto dir = std::filesystem::temp_directory_path() / "bp_openai_chat_template";
        std::filesystem::create_directories(dir);
        std::filesystem::copy_file(source / "llama-custom-chat" / "tokenizer.json", dir / "tokenizer.json",
                                   std::filesystem::copy_options::overwrite_existing);
        std::filesystem::copy_file(source / "templates" / "google-gemma-2-2b-it.jinja",
                                   dir / "chat_template.jinja",
                                   std::filesystem::copy_options::overwrite_existing);
        std::ofstream(dir / "tokenizer_config.json")
            << R"({"bos_token": "<|begin|>", "eos_token": "<|end|>"})";
        auto tok = BpeTokenizer::load((dir / "tokenizer.json").string());
        QVERIFY2(tok, tok.status().toString().c_str());
        ModelInfo model = decoderLike();
        model.vocabSize = (*tok)->vocabSize();
        model.tokenizer = *tok;
        auto ok = parseChatRequest(R"({"messages": [{"role": "user", "content": "Hi"}]})", model);
        QVERIFY2(ok, ok.status().message().c_str());
        const std::string want = "<|begin|><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n";
        QVERIFY(ok->prompts[0].tokens == (*tok)->encode(want, false));
        auto refused = parseChatRequest(
            R"({"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "Hi"}]})",
            model);
        QVERIFY(!refused);
        QCOMPARE(refused.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(refused.status().message().find("System role not supported") != std::string::npos,
                 refused.status().message().c_str());
        std::filesystem::remove_all(dir);
    }

    void chatRefusesWhatItCannotDo()
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, reason);
        auto r = parseChatRequest(body.toStdString(), decoderLike());
        QVERIFY(!r.isOk());
        QVERIFY2(QString::fromStdString(r.status().message()).contains(reason), r.status().message().c_str());
    }

    // OpenAI's error object, with the field the message names as `param`.
    void openAiErrorObject()
    {
        auto e = openAiError(HttpStatus::BadRequest, "field 'max_tokens' must be an integer, got string",
                             "invalid_argument");
        QCOMPARE(e["error"]["type"].get<std::string>(), std::string("invalid_request_error"));
        QCOMPARE(e["error"]["param"].get<std::string>(), std::string("max_tokens"));
        QCOMPARE(e["error"]["code"].get<std::string>(), std::string("invalid_argument"));
        QCOMPARE(openAiError(HttpStatus::BadRequest, "prompt[2] = 7 is outside", "x")["error"]["param"],
                 nlohmann::json("prompt"));
        QVERIFY(openAiError(HttpStatus::TooManyRequests, "queue is full", "queue_full")["error"]["param"]
                    .is_null());
        QCOMPARE(openAiError(HttpStatus::TooManyRequests, "q", "queue_full")["error"]["type"],
                 nlohmann::json("rate_limit_error"));
        QCOMPARE(openAiError(HttpStatus::Unauthorized, "q", "")["error"]["type"],
                 nlohmann::json("authentication_error"));
        QCOMPARE(openAiError(HttpStatus::ServiceUnavailable, "q", "")["error"]["type"],
                 nlohmann::json("server_error"));
        // A reply in the OpenAI style keeps its status and headers.
        const HttpReply plain = errorReply(Status(StatusCode::QueueFull, "full"));
        const HttpReply openAi = styled(plain, ErrorStyle::OpenAi);
        QCOMPARE(int(openAi.status), 429);
        QCOMPARE(openAi.header("Retry-After"), QByteArray("1"));
        const auto body = nlohmann::json::parse(openAi.body.toStdString());
        QCOMPARE(body["error"]["message"], nlohmann::json("full"));
        QCOMPARE(body["error"]["code"], nlohmann::json("queue_full"));
        QCOMPARE(styled(plain, ErrorStyle::Plain).body, plain.body);
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
