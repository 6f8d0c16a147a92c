// Hugging Face decoders (engine/torch/llama_model.h) against the
// reference implementation's recorded answers (tests/fixtures/hf, made by
// tools/make_hf_fixtures.py with transformers): for a LlamaForCausalLM
// (untied, llama3 rope), a Qwen2ForCausalLM (tied, QKV bias) and a sharded
// MistralForCausalLM, in float32, the greedy tokens match exactly and every
// step's logits row is within 1e-4 x that row's largest |reference logit| —
// batched, alone, and stepped with chunked prefill and the prefix cache on
// (blocks shared by reference, a copy swapped for the kept one). And the
// hf-config path, the refusals, and the memory check.
#include "engine/model/backend.h"
#include "engine/model/bpe_tokenizer.h"
#include "engine/model/hf_config.h"
#include "engine/model/model_registry.h"
#include "engine/sim/calibration/calibration.h"
#include "engine/torch/kernels/head_dims.h"
#include "engine/torch/tiny_decoder.h"
#include "model_test_util.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

using namespace bp;
using namespace bp::testing;

namespace {

std::string fixture(const std::string &name)
{
    const char *root = std::getenv("BATCHPILOT_SOURCE_DIR");
    return std::string(root ? root : ".") + "/tests/fixtures/hf/" + name;
}

struct Expected {
    std::vector<TokenId> prompt, tokens;
    std::vector<std::vector<float>> logits;
    int sharedPrefix = 0;
};

std::vector<Expected> expected(const std::string &name, nlohmann::json *all = nullptr)
{
    std::ifstream in(fixture(name) + "/reference.json");
    const auto j = nlohmann::json::parse(in);
    if (all)
        *all = j;
    std::vector<Expected> out;
    for (const auto &g : j["generations"])
        out.push_back({g["prompt"], g["tokens"], g["logits"], g["shared_prefix"]});
    return out;
}

std::int64_t expectedParameters(const std::string &name)
{
    nlohmann::json all;
    expected(name, &all);
    return all["parameters"].get<std::int64_t>();
}

std::shared_ptr<Backend> load(const std::string &name)
{
    ModelSpec spec;
    spec.name = name;
    spec.device = "cpu";
    spec.threads = 1;
    spec.dtype = "float32";
    auto made = createBackend(spec);
    if (!made) {
        qWarning("%s", made.status().toString().c_str());
        return nullptr;
    }
    return *made;
}

// Empty when `row` is within 1e-4 of the reference's largest |logit|.
QString compareRow(const std::vector<float> &row, const std::vector<float> &ref)
{
    if (row.size() != ref.size())
        return QStringLiteral("%1 logits, reference %2").arg(row.size()).arg(ref.size());
    double scale = 0, worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        scale = std::max(scale, double(std::fabs(ref[i])));
        worst = std::max(worst, double(std::fabs(row[i] - ref[i])));
    }
    if (worst > 1e-4 * scale)
        return QStringLiteral("logits off by %1, limit %2").arg(worst).arg(1e-4 * scale);
    return {};
}

QString compare(const Expected &e, const std::vector<TokenId> &tokens,
                const std::vector<std::vector<float>> &logits)
{
    if (tokens != e.tokens)
        return QStringLiteral("tokens differ");
    for (std::size_t s = 0; s < e.logits.size(); ++s)
        if (QString d = compareRow(logits[s], e.logits[s]); !d.isEmpty())
            return QStringLiteral("step %1: %2").arg(s).arg(d);
    return {};
}

std::uint64_t blockHash(const std::vector<TokenId> &tokens, std::size_t end)
{
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < end; ++i)
        h = (h ^ std::uint64_t(tokens[i] + 1)) * 1099511628211ull;
    return h;
}

} // namespace

class TestHfModels : public QObject {
    Q_OBJECT
private slots:
    void matchesTransformers_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("LlamaForCausalLM") << "llama";
        QTest::newRow("Qwen2ForCausalLM") << "qwen2";
        QTest::newRow("MistralForCausalLM (sharded)") << "mistral";
        QTest::newRow("LlamaForCausalLM (own chat template, tied)") << "llama-custom-chat";
        QTest::newRow("MistralForCausalLM (SentencePiece-style tokenizer)") << "mistral-sentencepiece";
        QTest::newRow("Qwen3ForCausalLM (q/k norms)") << "qwen3";
        QTest::newRow("Qwen3MoeForCausalLM (8 experts, top 2)") << "qwen3-moe";
        QTest::newRow("Gemma3ForCausalLM (sliding window shorter than the prompts)") << "gemma3";
    }
    void matchesTransformers()
    {
        QFETCH(QString, name);
        nlohmann::json ref;
        const auto cases = expected(name.toStdString(), &ref);
        auto model = load("hf:" + fixture(name.toStdString()));
        QVERIFY(model);
        QCOMPARE(model->info().architecture, ref["architecture"].get<std::string>());
        QCOMPARE(model->info().parameters, ref["parameters"].get<std::int64_t>());
        QCOMPARE(model->info().vocabSize, ref["vocab_size"].get<int>());
        QVERIFY(model->info().tokenizer);
        auto *decoder = dynamic_cast<DecoderModel *>(model.get());
        QVERIFY(decoder);
        GenerateOptions withLogits;
        withLogits.keepLogits = true;
        // batched: every prompt in one request-level batch
        std::vector<Request> requests;
        for (const Expected &e : cases)
            requests.push_back(makeRequest(e.prompt, int(e.tokens.size())));
        BatchInput batch;
        for (const Request &r : requests)
            batch.requests.push_back(&r);
        std::vector<Generation> gens;
        QVERIFY(decoder->generate(batch, withLogits, gens).isOk());
        for (std::size_t i = 0; i < cases.size(); ++i)
            QVERIFY2(compare(cases[i], gens[i].tokens, gens[i].logits).isEmpty(),
                     qPrintable(QStringLiteral("batched prompt %1: %2")
                                    .arg(i)
                                    .arg(compare(cases[i], gens[i].tokens, gens[i].logits))));
        // alone
        for (std::size_t i = 0; i < cases.size(); ++i) {
            BatchInput one;
            one.requests = {&requests[i]};
            std::vector<Generation> g;
            QVERIFY(decoder->generate(one, withLogits, g).isOk());
            QVERIFY2(compare(cases[i], g[0].tokens, g[0].logits).isEmpty(),
                     qPrintable(QStringLiteral("prompt %1 alone: %2")
                                    .arg(i)
                                    .arg(compare(cases[i], g[0].tokens, g[0].logits))));
        }
        // stepped together: prompts in chunks of 5, every whole block of 4
        // published. Of the prompts that share a 20-token prefix, the first
        // computes it, the second starts from its kept blocks (shared by
        // reference), the third computes it again and its blocks are swapped
        // for the kept ones.
        QVERIFY(model->prepareKv({0, 0.9, 4}).isOk());
        StepModel &steps = *model->steps();
        struct Live {
            std::uint64_t id;
            const Expected *e;
            std::size_t fed = 0, published = 0;
            std::vector<TokenId> generated;
            std::vector<std::vector<float>> logits;
            bool started = false;
        };
        std::vector<Live> live;
        std::vector<std::size_t> sharing;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            live.push_back(Live{i + 1, &cases[i], 0, 0, {}, {}, false});
            if (cases[i].sharedPrefix > 0)
                sharing.push_back(i);
        }
        QVERIFY(sharing.size() >= 3);
        Live &first = live[sharing[0]], &reuser = live[sharing[1]];
        for (int round = 0; round < 300; ++round) {
            std::vector<StepItem> items;
            std::vector<Live *> who;
            for (Live &l : live) {
                if (l.generated.size() == l.e->tokens.size())
                    continue;
                const std::vector<TokenId> &p = l.e->prompt;
                StepItem item;
                item.sequence = l.id;
                item.logits = true;
                if (!l.started && &l == &reuser) {
                    if (first.published < std::size_t(l.e->sharedPrefix))
                        continue; // until the first has kept the prefix
                    for (std::size_t b = 4; b <= std::size_t(l.e->sharedPrefix); b += 4)
                        item.prefix.push_back(blockHash(p, b));
                    l.fed = l.published = std::size_t(l.e->sharedPrefix);
                }
                if (l.fed < p.size()) {
                    const std::size_t n = std::min<std::size_t>(5, p.size() - l.fed);
                    item.tokens.assign(p.begin() + std::ptrdiff_t(l.fed),
                                       p.begin() + std::ptrdiff_t(l.fed + n));
                    item.sample = l.fed + n == p.size();
                    for (std::size_t b = l.published + 4; b <= l.fed + n; b += 4)
                        item.publish.push_back({blockHash(p, b), std::int64_t(b - 4), 4});
                } else {
                    item.tokens = {l.generated.back()};
                }
                items.push_back(std::move(item));
                who.push_back(&l);
            }
            if (items.empty())
                break;
            std::vector<StepOutcome> out;
            QVERIFY(steps.step(items, out).isOk());
            for (std::size_t k = 0; k < items.size(); ++k) {
                Live &l = *who[k];
                QVERIFY2(out[k].status.isOk(), out[k].status.toString().c_str());
                l.started = true;
                if (l.fed < l.e->prompt.size()) {
                    l.fed += items[k].tokens.size();
                    if (!items[k].publish.empty())
                        l.published = std::size_t(items[k].publish.back().start + 4);
                }
                if (items[k].sample) {
                    l.generated.push_back(out[k].next);
                    l.logits.push_back(out[k].logits);
                }
            }
        }
        QVERIFY(reuser.started);
        for (const Live &l : live)
            QVERIFY2(compare(*l.e, l.generated, l.logits).isEmpty(),
                     qPrintable(QStringLiteral("stepped prompt %1: %2")
                                    .arg(l.id)
                                    .arg(compare(*l.e, l.generated, l.logits))));
        for (const Live &l : live)
            steps.release(l.id);
    }

    // Qwen 3's real chat template, as the fixtures ship it in
    // tokenizer_config.json / chat_template.jinja: every conversation (a
    // system message, multi-turn with a <think> block in an assistant turn,
    // one user message), the generation prompt on and off, byte-identical
    // to apply_chat_template; and the served prompt (chatPrompt) is the
    // generation-prompt one.
    void qwen3ChatTemplate_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("qwen3") << "qwen3";
        QTest::newRow("qwen3-moe") << "qwen3-moe";
    }
    void qwen3ChatTemplate()
    {
        QFETCH(QString, name);
        nlohmann::json ref;
        expected(name.toStdString(), &ref);
        auto tok = BpeTokenizer::load(fixture(name.toStdString()) + "/tokenizer.json");
        QVERIFY2(tok, tok.status().toString().c_str());
        QVERIFY((*tok)->chatTemplate());
        std::ifstream in(fixture("templates/reference.json"));
        const auto conversations = nlohmann::json::parse(in)["conversations"];
        int checked = 0;
        for (const auto &c : ref["chats"]) {
            std::vector<ChatMessage> messages;
            for (const auto &m : conversations[c["conversation"].get<std::string>()])
                messages.push_back({m["role"], m["content"]});
            const bool gen = c["add_generation_prompt"];
            auto prompt = (*tok)->chatTemplate()->render(messages, gen);
            QVERIFY2(prompt, prompt.status().toString().c_str());
            QCOMPARE(*prompt, c["prompt"].get<std::string>());
            if (gen) {
                auto served = (*tok)->chatPrompt(messages);
                QVERIFY(served);
                QCOMPARE(*served, c["prompt"].get<std::string>());
            }
            ++checked;
        }
        QCOMPARE(checked, 6);
    }

    // Qwen 3 MoE: the experts a step touches are counted (the cost model's
    // active-experts term); one token goes to top-k experts per MoE layer,
    // and a step of many distinct tokens touches more, at most all of them.
    void moeCountsActiveExperts()
    {
        auto model = load("hf:" + fixture("qwen3-moe"));
        QVERIFY(model);
        QCOMPARE(model->info().experts, 8);
        QCOMPARE(model->info().expertsPerToken, 2);
        QCOMPARE(model->info().moeLayers, 2); // layer 1 is in mlp_only_layers
        QVERIFY(model->prepareKv({0, 0.9, 4}).isOk());
        StepModel &steps = *model->steps();
        std::vector<StepOutcome> out;
        const std::int64_t before = model->expertsTouched();
        QVERIFY(steps.step({{1, {7}, true}}, out).isOk());
        QCOMPARE(model->expertsTouched() - before, std::int64_t(2 * 2)); // 2 layers x top 2
        std::vector<TokenId> many;
        for (int t = 0; t < 60; ++t)
            many.push_back(TokenId(5 + 6 * t));
        const std::int64_t mid = model->expertsTouched();
        QVERIFY(steps.step({{2, many, true}}, out).isOk());
        const std::int64_t touched = model->expertsTouched() - mid;
        QVERIFY2(touched > 4 && touched <= 2 * 8, qPrintable(QString::number(touched)));
        steps.release(1);
        steps.release(2);
        // The profile (measureBackend's iterations) measures the distinct
        // experts per MoE layer of each step it times: at least the top k of
        // one token, at most all 8, more for a step of more tokens; the
        // calibration keeps the routing and the measured counts.
        CalibrationGrid grid;
        grid.batchSizes = {1};
        grid.lengths = {8, 32};
        grid.newTokens = {2};
        grid.stepSequences = {1, 4};
        grid.stepChunk = 16;
        grid.warmup = 0;
        grid.repeats = 1;
        auto measured = measureBackend(*model, grid);
        QVERIFY2(measured, measured.status().toString().c_str());
        std::map<double, double> byTokens; // T -> measured X
        for (const CostObservation &o : *measured)
            if (o.kind == CostObservation::Kind::Iteration) {
                QVERIFY(o.activeExperts >= 2 && o.activeExperts <= 8);
                QCOMPARE(o.terms[std::size_t(CostModel::kIterationStart) + 6], o.activeExperts);
                byTokens[o.terms[std::size_t(CostModel::kIterationStart) + 2]] = o.activeExperts;
            }
        QVERIFY(byTokens.size() >= 3);
        QCOMPARE(byTokens.begin()->first, 1.0); // one decode: its top 2 in each layer
        QCOMPARE(byTokens.begin()->second, 2.0);
        QVERIFY(byTokens.rbegin()->second > 2);
        Calibration key = Calibration::forModel(model->info(), "", 1);
        auto calibration = calibrate(key, *measured);
        QVERIFY2(calibration, calibration.status().toString().c_str());
        QCOMPARE(calibration->cost.experts, 8);
        QCOMPARE(calibration->cost.expertsPerToken, 2);
        QVERIFY(calibration->cost.activeExperts.size() >= 3);
        // a dense model has no counter
        auto dense = load("hf:" + fixture("qwen3"));
        QVERIFY(dense);
        QCOMPARE(dense->expertsTouched(), std::int64_t(-1));
        QCOMPARE(dense->info().experts, 0);
    }

    // hf-config: the same model from its config.json alone, seeded random
    // weights through the same loader; the parameter count is the config's.
    void randomWeightsFromAConfig()
    {
        auto model = load("hf-config:" + fixture("llama") + "/config.json");
        QVERIFY(model);
        auto config = loadHfConfig(fixture("llama") + "/config.json");
        QVERIFY(config);
        QCOMPARE(model->info().parameters, config->parameterCount());
        QCOMPARE(model->info().kvBytesPerToken, config->kvBytesPerToken(4));
        const auto out = runBatch(*model, {makeRequest({1, 2, 3}, 4), makeRequest({5}, 2)});
        QCOMPARE(out[0].tokens.size(), std::size_t(4));
        QCOMPARE(out[1].tokens.size(), std::size_t(2));
        QVERIFY(model->info().tokenizer); // a tokenizer.json beside the config
        // Gemma 3's shape the same way: its own loader, its parameter count.
        auto gemma = load("hf-config:" + fixture("gemma3") + "/config.json");
        QVERIFY(gemma);
        QCOMPARE(gemma->info().architecture, std::string("Gemma3ForCausalLM"));
        QCOMPARE(gemma->info().parameters, expectedParameters("gemma3"));
        const auto g = runBatch(*gemma, {makeRequest({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3)});
        QCOMPARE(g[0].tokens.size(), std::size_t(3));
        // Qwen 3 MoE from its config alone: the count is the reference's
        // (transformers' own), and decoder_sparse_step is followed (every
        // second layer sparse: fewer parameters than all three).
        auto moe = load("hf-config:" + fixture("qwen3-moe") + "/config.json");
        QVERIFY(moe);
        nlohmann::json ref;
        expected("qwen3-moe", &ref);
        QCOMPARE(moe->info().parameters, ref["parameters"].get<std::int64_t>());
        QVERIFY(!runBatch(*moe, {makeRequest({1, 2, 3}, 3)})[0].tokens.empty());
        auto j = nlohmann::json::parse(std::ifstream(fixture("qwen3-moe") + "/config.json"));
        j["mlp_only_layers"] = nlohmann::json::array();
        j["decoder_sparse_step"] = 2;
        auto sparse = parseHfConfig(j, "config.json");
        QVERIFY(sparse);
        QCOMPARE(sparse->moeLayers(), 1); // layer 1 only ((1 + 1) % 2 == 0)
        QVERIFY(sparse->moeLayer(1) && !sparse->moeLayer(0) && !sparse->moeLayer(2));
        j["num_experts_per_tok"] = 9;
        QVERIFY(parseHfConfig(j, "config.json").status().message().find("num_experts_per_tok") !=
                std::string::npos);
    }

    // The Qwen 3 shapes in resources/configs/hf: the parameter counts
    // transformers 5.25 gives for these config.json files (its models built
    // on the meta device), and 30B-A3B's 3.3 B active per token.
    void qwen3Shapes()
    {
        const char *root = std::getenv("BATCHPILOT_SOURCE_DIR");
        const std::string dir = std::string(root ? root : ".") + "/resources/configs/hf/";
        auto dense = loadHfConfig(dir + "qwen3-8b/config.json");
        QVERIFY2(dense, dense.status().toString().c_str());
        QCOMPARE(dense->parameterCount(), std::int64_t(8190735360));
        QCOMPARE(dense->activeParameterCount(), dense->parameterCount());
        QVERIFY(dense->qkNorm && !dense->qkvBias && dense->headDim == 128);
        auto moe = loadHfConfig(dir + "qwen3-30b-a3b/config.json");
        QVERIFY2(moe, moe.status().toString().c_str());
        QCOMPARE(moe->parameterCount(), std::int64_t(30532122624));
        QCOMPARE(moe->activeParameterCount(), std::int64_t(3353032704));
        QCOMPARE(moe->moeLayers(), 48);
        QCOMPARE(moe->experts, 128);
        QCOMPARE(moe->expertsPerToken, 8);
        auto scaled = loadHfConfig(dir + "qwen3-30b-a3b-4layers/config.json");
        QVERIFY(scaled);
        QCOMPARE(scaled->parameterCount(), std::int64_t(3114814464));
        QVERIFY(moe->describe().find("48 MoE layers of 128 experts (top 8, MLP 768)") != std::string::npos);
    }

    void refusals()
    {
        const auto dir = std::filesystem::temp_directory_path() / "bp_hf_refusals";
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        ModelSpec spec;
        spec.device = "cpu";
        spec.name = "hf:" + (dir / "missing").string();
        QCOMPARE(createBackend(spec).status().code(), StatusCode::NotFound);
        auto config = nlohmann::json::parse(std::ifstream(fixture("llama") + "/config.json"));
        auto write = [&](const nlohmann::json &j) {
            std::ofstream(dir / "config.json") << j.dump();
            spec.name = "hf-config:" + (dir / "config.json").string();
            return createBackend(spec).status();
        };
        nlohmann::json j = config;
        j["architectures"] = {"GPTNeoXForCausalLM"};
        QVERIFY(write(j).message().find("GPTNeoXForCausalLM is not one BatchPilot runs") !=
                std::string::npos);
        j = config;
        j["rope_parameters"]["rope_type"] = "yarn";
        QVERIFY(write(j).message().find("rope type yarn") != std::string::npos);
        j = config;
        j["num_key_value_heads"] = 3;
        QVERIFY(write(j).message().find("multiple of num_key_value_heads") != std::string::npos);
        // A head size no attention kernel handles is refused at load, before
        // any weight is made (the CPU kernel's limit is 512; CUDA's sizes are
        // 32, 64, 96, 128 and 256, kernels/head_dims.h).
        j = config;
        j["head_dim"] = 520;
        const Status wide = write(j);
        QCOMPARE(wide.code(), StatusCode::InvalidArgument);
        QVERIFY2(wide.message().find("head size 520 is outside the CPU paged-attention kernel's 1..512") !=
                     std::string::npos,
                 wide.message().c_str());
        QVERIFY(kernels::headDimProblem(80, true).find("no CUDA paged-attention kernel") !=
                std::string::npos);
        QVERIFY(kernels::headDimProblem(128, true).empty());
        QVERIFY(kernels::headDimProblem(80, false).empty());
        // Llama 3 70B's shape: refused before anything is allocated, saying what it needs
        j = config;
        j["hidden_size"] = 8192;
        j["intermediate_size"] = 28672;
        j["num_hidden_layers"] = 80;
        j["num_attention_heads"] = 64;
        j["num_key_value_heads"] = 8;
        j["head_dim"] = 128;
        j["vocab_size"] = 128256;
        const Status big = write(j);
        QCOMPARE(big.code(), StatusCode::ResourceExhausted);
        QVERIFY2(big.message().find("GiB") != std::string::npos &&
                     big.message().find("free") != std::string::npos,
                 big.message().c_str());
        // a checkpoint whose tensor does not have the config's shape
        std::filesystem::copy(fixture("qwen2"), dir / "qwen2", std::filesystem::copy_options::recursive);
        auto qwen = nlohmann::json::parse(std::ifstream(dir / "qwen2" / "config.json"));
        qwen["intermediate_size"] = 96;
        std::ofstream(dir / "qwen2" / "config.json") << qwen.dump();
        spec.name = "hf:" + (dir / "qwen2").string();
        const Status shape = createBackend(spec).status();
        QVERIFY2(shape.message().find("config.json says") != std::string::npos, shape.message().c_str());
        std::filesystem::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TestHfModels)
#include "test_hf_models.moc"
