// Gemma 3's text model as config.json and its folder describe it
// (engine/model/gemma3_config.h, tests/fixtures/hf/gemma3 made by
// tools/make_hf_fixtures.py with transformers 5.25): which layers are local
// and their windows, the rope of each layer type, the parameter count
// transformers gives (the fixture's, and Gemma-3-4B's shape in the Hub's
// older format), what is refused by name; and Gemma 3's chat template as it
// ships, rendered byte for byte as apply_chat_template renders it (a system
// message folded into the first user turn, multi-turn, the generation
// prompt on and off) and encoded to the same ids.
#include "engine/model/bpe_tokenizer.h"
#include "engine/model/hf_config.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace bp;

namespace {

std::string source(const std::string &path)
{
    const char *root = std::getenv("BATCHPILOT_SOURCE_DIR");
    return std::string(root ? root : ".") + "/" + path;
}

nlohmann::json readJson(const std::string &path)
{
    std::ifstream in(source(path));
    return nlohmann::json::parse(in);
}

std::string refusal(const nlohmann::json &config)
{
    auto parsed = parseHfConfig(config, "config.json");
    return parsed ? std::string() : parsed.status().message();
}

} // namespace

class TestGemma3Config : public QObject {
    Q_OBJECT
private slots:
    // transformers 5's layout: layer_types and rope_parameters per layer type.
    void theFixturesConfig()
    {
        auto c = loadHfConfig(source("tests/fixtures/hf/gemma3/config.json"));
        QVERIFY2(c, c.status().toString().c_str());
        QVERIFY(c->gemma3);
        const Gemma3Shape &g = *c->gemma3;
        QCOMPARE(g.layerWindows, (std::vector<int>{8, 0, 8}));
        QCOMPARE(g.localTypes, (std::vector<bool>{true, false, true}));
        QCOMPARE(g.localLayers(), 2);
        QCOMPARE(g.queryPreAttnScalar, 24.0);
        QCOMPARE(g.finalLogitSoftcap, 5.0);
        QCOMPARE(g.globalRopeTheta, 1e6);
        QCOMPARE(g.globalRopeFactor, 4.0);
        QCOMPARE(g.localRopeTheta, 1e4);
        QCOMPARE(g.localRopeFactor, 1.0);
        QVERIFY(c->tieEmbeddings);
        QCOMPARE(c->eosTokenIds, (std::vector<int>{1, 560}));
        const auto ref = readJson("tests/fixtures/hf/gemma3/reference.json");
        QCOMPARE(c->parameterCount(), ref["parameters"].get<std::int64_t>());
        QVERIFY(c->describe().find("sliding window 8 on 2 of 3 layers") != std::string::npos);
    }

    // The Hub's layout (transformers 4.50): sliding_window_pattern,
    // rope_local_base_freq, rope_scaling for the global layers. The count is
    // what transformers 5.25's Gemma3ForCausalLM has for this config.
    void gemma3_4bShape()
    {
        auto c = loadHfConfig(source("resources/configs/hf/gemma-3-4b/config.json"));
        QVERIFY2(c, c.status().toString().c_str());
        QCOMPARE(c->parameterCount(), std::int64_t(3880263168));
        const Gemma3Shape &g = *c->gemma3;
        QCOMPARE(g.localLayers(), 29);
        for (int l = 0; l < c->layers; ++l)
            QCOMPARE(g.layerWindows[std::size_t(l)], (l + 1) % 6 == 0 ? 0 : 1024);
        QCOMPARE(g.globalRopeFactor, 8.0);
        QCOMPARE(g.globalRopeTheta, 1e6);
        QCOMPARE(g.localRopeTheta, 1e4);
        QCOMPARE(g.finalLogitSoftcap, 0.0);
        QCOMPARE(c->kvBytesPerToken(2), std::int64_t(34) * 2 * 4 * 256 * 2);
    }

    void refusals()
    {
        const auto base = readJson("tests/fixtures/hf/gemma3/config.json");
        auto with = [&](auto change) {
            nlohmann::json j = base;
            change(j);
            return refusal(j);
        };
        QVERIFY(refusal(base).empty());
        QVERIFY(with([](auto &j) {
                    j["architectures"] = {"Gemma3ForConditionalGeneration"};
                }).find("not the vision tower") != std::string::npos);
        QVERIFY(with([](auto &j) {
                    j["architectures"] = {"Gemma3ForSequenceClassification"};
                }).find("Gemma3ForSequenceClassification is not one BatchPilot runs") != std::string::npos);
        QVERIFY(with([](auto &j) { j["attn_logit_softcapping"] = 50.0; }).find("attn_logit_softcapping") !=
                std::string::npos);
        QVERIFY(with([](auto &j) {
                    j["use_bidirectional_attention"] = true;
                }).find("use_bidirectional_attention") != std::string::npos);
        QVERIFY(with([](auto &j) { j["hidden_activation"] = "silu"; }).find("hidden_activation silu") !=
                std::string::npos);
        QVERIFY(with([](auto &j) {
                    j["rope_parameters"]["full_attention"]["rope_type"] = "yarn";
                }).find("rope type yarn") != std::string::npos);
        QVERIFY(with([](auto &j) {
                    j["layer_types"][1] = "chunked_attention";
                }).find("layer type chunked_attention") != std::string::npos);
        QVERIFY(with([](auto &j) { j["layer_types"].erase(0); }).find("names 2 layers, not 3") !=
                std::string::npos);
        QVERIFY(with([](auto &j) { j["sliding_window"] = 0; }).find("sliding_window must be positive") !=
                std::string::npos);
        // A window that covers every position is no window.
        nlohmann::json wide = base;
        wide["sliding_window"] = 128;
        auto c = parseHfConfig(wide, "config.json");
        QVERIFY(c);
        QCOMPARE(c->gemma3->localLayers(), 0);
        QCOMPARE(c->gemma3->localTypes, (std::vector<bool>{true, false, true}));
    }

    void chatTemplateAsItShips()
    {
        auto tok = BpeTokenizer::load(source("tests/fixtures/hf/gemma3/tokenizer.json"));
        QVERIFY2(tok, tok.status().toString().c_str());
        const ChatTemplate *chat = (*tok)->chatTemplate();
        QVERIFY(chat);
        const auto ref = readJson("tests/fixtures/hf/gemma3/reference.json");
        int cases = 0;
        for (const auto &c : ref["chats"]) {
            std::vector<ChatMessage> messages;
            for (const auto &m : c["messages"])
                messages.push_back({m["role"], m["content"]});
            auto prompt = chat->render(messages, c["add_generation_prompt"].get<bool>());
            QVERIFY2(prompt, prompt.status().toString().c_str());
            QCOMPARE(*prompt, c["prompt"].get<std::string>());
            QVERIFY((*tok)->encode(*prompt, false) == c["ids"].get<std::vector<TokenId>>());
            ++cases;
        }
        QCOMPARE(cases, 6);
        // The template's own refusal: roles that do not alternate.
        auto wrong = chat->render({{"user", "a"}, {"user", "b"}});
        QCOMPARE(wrong.status().code(), StatusCode::InvalidArgument);
        QVERIFY(wrong.status().message().find("Conversation roles must alternate") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestGemma3Config)
#include "test_gemma3_config.moc"
