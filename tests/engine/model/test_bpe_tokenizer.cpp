// Hugging Face tokenizers (engine/model/bpe_tokenizer.h) against what the
// tokenizers library answered for the fixtures (tools/make_hf_fixtures.py):
// a Llama-3-style (Split pattern, ignore_merges, <|begin_of_text|>), a
// Qwen-2-style (NFC, ChatML) and a GPT-2-style one; token ids with and
// without the tokenizer's own specials over Unicode, decomposed accents,
// whitespace runs, emoji and special tokens inside the text; decoding with
// and without specials; the chat prompt transformers renders. And what is
// refused, by name.
#include "engine/model/bpe_tokenizer.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace bp;

namespace {

std::string fixture(const std::string &name)
{
    const char *root = std::getenv("BATCHPILOT_SOURCE_DIR");
    return std::string(root ? root : ".") + "/tests/fixtures/hf/" + name;
}

nlohmann::json reference(const std::string &name)
{
    std::ifstream in(fixture(name) + "/reference.json");
    return nlohmann::json::parse(in);
}

QString show(const std::vector<TokenId> &ids)
{
    QStringList out;
    for (TokenId id : ids)
        out << QString::number(id);
    return out.join(',');
}

} // namespace

class TestBpeTokenizer : public QObject {
    Q_OBJECT
private slots:
    void matchesTheReference_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("llama-3 style") << "llama";
        QTest::newRow("qwen-2 style (NFC, ChatML)") << "qwen2";
        QTest::newRow("gpt-2 style (mistral fixture)") << "mistral";
        QTest::newRow("own template (llama-custom-chat)") << "llama-custom-chat";
        QTest::newRow("sentencepiece style, Mistral Nemo template") << "mistral-sentencepiece";
        QTest::newRow("qwen-3 style (<think> added tokens, Qwen 3 template)") << "qwen3";
        QTest::newRow("gemma style, Gemma 3 template") << "gemma3";
    }
    void matchesTheReference()
    {
        QFETCH(QString, name);
        auto tok = BpeTokenizer::load(fixture(name.toStdString()) + "/tokenizer.json");
        QVERIFY2(tok, tok.status().toString().c_str());
        const nlohmann::json ref = reference(name.toStdString());
        QCOMPARE((*tok)->vocabSize(), ref["vocab_size"].get<int>());
        int cases = 0;
        for (const auto &c : ref["tokenizer"]) {
            const std::string text = c["text"];
            const auto want = c["ids"].get<std::vector<TokenId>>();
            const auto wantPlain = c["ids_plain"].get<std::vector<TokenId>>();
            const auto got = (*tok)->encode(text, true);
            QVERIFY2(got == want, qPrintable(QStringLiteral("'%1': %2, want %3")
                                                 .arg(QString::fromStdString(text), show(got), show(want))));
            QVERIFY2((*tok)->encode(text, false) == wantPlain, qPrintable(QString::fromStdString(text)));
            QCOMPARE((*tok)->decodeAsTransformers(want, true), c["decoded"].get<std::string>());
            QCOMPARE((*tok)->decodeAsTransformers(want, false),
                     c["decoded_with_specials"].get<std::string>());
            ++cases;
        }
        QVERIFY(cases >= 10);
        if (ref.contains("chat")) {
            std::vector<ChatMessage> messages;
            for (const auto &m : ref["chat"]["messages"])
                messages.push_back({m["role"], m["content"]});
            auto prompt = (*tok)->chatPrompt(messages);
            QVERIFY2(prompt, prompt.status().toString().c_str());
            QCOMPARE(*prompt, ref["chat"]["prompt"].get<std::string>());
            QVERIFY((*tok)->chatPromptHasSpecials());
            QVERIFY((*tok)->encode(*prompt, false) == ref["chat"]["ids"].get<std::vector<TokenId>>());
        } else {
            auto prompt = (*tok)->chatPrompt({{"user", "hi"}});
            QCOMPARE(prompt.status().code(), StatusCode::InvalidArgument);
            QVERIFY(prompt.status().message().find("has no chat template") != std::string::npos);
        }
    }

    // SentencePiece-style BPE (Llama 2's Prepend + Replace normalizers,
    // Mistral v0.3's Metaspace with prepend_scheme first, Gemma's Replace
    // alone; byte_fallback for what the vocabulary lacks) against the
    // tokenizers library: ids with and without <s>, the decode
    // transformers gives (its leading space stripped) and decode() (kept).
    void sentencePieceStyle_data()
    {
        QTest::addColumn<QString>("style");
        QTest::newRow("llama 2") << "llama2";
        QTest::newRow("mistral v0.3") << "mistral-v03";
        QTest::newRow("gemma") << "gemma";
    }
    void sentencePieceStyle()
    {
        QFETCH(QString, style);
        auto tok = BpeTokenizer::load(fixture("sentencepiece/") + style.toStdString() + ".json");
        QVERIFY2(tok, tok.status().toString().c_str());
        QVERIFY((*tok)->describe().find("SentencePiece-style") != std::string::npos);
        const nlohmann::json ref = reference("sentencepiece")[style.toStdString()];
        QCOMPARE((*tok)->vocabSize(), ref["vocab_size"].get<int>());
        int fallbacks = 0;
        for (const auto &c : ref["cases"]) {
            const std::string text = c["text"];
            const auto want = c["ids"].get<std::vector<TokenId>>();
            const auto got = (*tok)->encode(text, true);
            QVERIFY2(got == want, qPrintable(QStringLiteral("'%1': %2, want %3")
                                                 .arg(QString::fromStdString(text), show(got), show(want))));
            QVERIFY2((*tok)->encode(text, false) == c["ids_plain"].get<std::vector<TokenId>>(), text.c_str());
            QCOMPARE((*tok)->decodeAsTransformers(want, true), c["decoded"].get<std::string>());
            QCOMPARE((*tok)->decodeAsTransformers(want, false),
                     c["decoded_with_specials"].get<std::string>());
            for (const auto &t : c["tokens"])
                fallbacks += t.get<std::string>().rfind("<0x", 0) == 0;
        }
        QVERIFY(fallbacks > 20); // byte_fallback was exercised
        // A chat through the family's real template, encoded as
        // apply_chat_template(tokenize=True) encodes it: <s> / <bos> matched
        // as a special token, the rest without a prefix added.
        const auto &chat = ref["chat"];
        std::ifstream src(fixture("templates/") + chat["template"].get<std::string>() + ".jinja");
        const std::string source((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
        auto tmpl = ChatTemplate::parse(source, chat["specials"].get<std::map<std::string, std::string>>());
        QVERIFY2(tmpl, tmpl.status().toString().c_str());
        std::vector<ChatMessage> messages;
        const nlohmann::json conversations = reference("templates")["conversations"];
        for (const auto &m : conversations[chat["conversation"].get<std::string>()])
            messages.push_back({m["role"], m["content"]});
        auto prompt = (*tmpl)->render(messages, true);
        QVERIFY2(prompt, prompt.status().toString().c_str());
        QCOMPARE(*prompt, chat["prompt"].get<std::string>());
        QVERIFY((*tok)->encode(*prompt, false) == chat["ids"].get<std::vector<TokenId>>());
        // A continuation keeps its space: "▁batch" is " batch".
        const auto batch = (*tok)->idOf("\u2581batch");
        QVERIFY(batch);
        QCOMPARE((*tok)->tokenBytes(*batch), std::string(" batch"));
    }

    // Streaming: token bytes one at a time, held back while a UTF-8 sequence
    // is incomplete, give the same text as decoding at once.
    void tokenBytesStreamLikeDecode()
    {
        auto tok = BpeTokenizer::load(fixture("qwen2") + "/tokenizer.json");
        QVERIFY(tok);
        const std::string text = "日本語のテキスト 🚀 naïve";
        const auto ids = (*tok)->encode(text, false);
        std::string held, out;
        for (TokenId id : ids) {
            held += (*tok)->tokenBytes(id);
            const std::size_t keep = incompleteUtf8Tail(held);
            out += held.substr(0, held.size() - keep);
            held.erase(0, held.size() - keep);
        }
        QVERIFY(held.empty());
        QCOMPARE(out, text);
        QCOMPARE((*tok)->tokenBytes(99999), std::string("\xEF\xBF\xBD"));
    }

    void refusesWhatItDoesNotImplement()
    {
        const auto dir = std::filesystem::temp_directory_path() / "bp_bpe_refuse";
        std::filesystem::create_directories(dir);
        auto write = [&](const nlohmann::json &j) {
            std::ofstream(dir / "tokenizer.json") << j.dump();
            return BpeTokenizer::load((dir / "tokenizer.json").string());
        };
        nlohmann::json base = nlohmann::json::parse(std::ifstream(fixture("llama") + "/tokenizer.json"));
        nlohmann::json j = base;
        j["model"]["type"] = "WordPiece";
        QVERIFY(write(j).status().message().find("model type WordPiece") != std::string::npos);
        j = base;
        j["model"]["type"] = "Unigram";
        QVERIFY(write(j).status().message().find("model type Unigram") != std::string::npos);
        j = base;
        j["pre_tokenizer"] = {{"type", "Whitespace"}};
        QVERIFY(write(j).status().message().find("pre-tokenizer Whitespace") != std::string::npos);
        j = base;
        j["decoder"] = {{"type", "WordPiece"}};
        QVERIFY(write(j).status().message().find("decoder WordPiece") != std::string::npos);
        j = base;
        j["normalizer"] = {{"type", "Lowercase"}};
        QVERIFY(write(j).status().message().find("normalizer Lowercase") != std::string::npos);
        j = base;
        j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
        QVERIFY(write(j).status().message().find("does not compile") != std::string::npos);
        std::ofstream(dir / "tokenizer.json") << "{not json";
        QCOMPARE(BpeTokenizer::load((dir / "tokenizer.json").string()).status().code(),
                 StatusCode::InvalidArgument);
        QCOMPARE(BpeTokenizer::load((dir / "missing.json").string()).status().code(), StatusCode::NotFound);
        std::filesystem::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TestBpeTokenizer)
#include "test_bpe_tokenizer.moc"
