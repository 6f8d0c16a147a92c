// export-config's formats parsed back: Triton config.pbtxt (a small
// protobuf-text reader below), vLLM and TGI command lines (flags), TorchServe
// model-config.yaml (key: value) and Ray Serve decorators (keyword
// arguments); each field checked against the config, across policies. And
// the knob table's promise: every knob appears in every export, mapped or
// listed as having no equivalent, never dropped.
#include "engine/config/config_export.h"
#include "engine/config/knobs.h"

#include <QtTest>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>

using namespace bp;

namespace {

// --- protobuf text format, enough for config.pbtxt ------------------------
// Flattens to "a.b.c" -> values; repeated fields collect every value.
class Pbtxt {
public:
    explicit Pbtxt(const std::string &text) { tokenize(text); }
    bool parse(std::multimap<std::string, std::string> &out)
    {
        m_out = &out;
        return fields("", false) && m_pos == m_tokens.size();
    }

private:
    void tokenize(const std::string &s)
    {
        for (std::size_t i = 0; i < s.size();) {
            const char c = s[i];
            if (c == '#') {
                while (i < s.size() && s[i] != '\n')
                    ++i;
            } else if (std::isspace(static_cast<unsigned char>(c))) {
                ++i;
            } else if (std::strchr(":{}[],", c)) {
                m_tokens.emplace_back(1, c);
                ++i;
            } else {
                std::size_t j = i;
                while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' ||
                                        s[j] == '.' || s[j] == '-'))
                    ++j;
                if (j == i) { // an unexpected character: make parsing fail
                    m_tokens.emplace_back("\x01");
                    ++i;
                    continue;
                }
                m_tokens.push_back(s.substr(i, j - i));
                i = j;
            }
        }
    }
    bool at(const char *t) const { return m_pos < m_tokens.size() && m_tokens[m_pos] == t; }
    bool isName() const
    {
        return m_pos < m_tokens.size() &&
               (std::isalpha(static_cast<unsigned char>(m_tokens[m_pos][0])) || m_tokens[m_pos][0] == '_');
    }
    bool fields(const std::string &prefix, bool nested)
    {
        while (m_pos < m_tokens.size() && !(nested && at("}"))) {
            if (!isName())
                return false;
            const std::string name = prefix + m_tokens[m_pos++];
            const bool colon = at(":");
            if (colon)
                ++m_pos;
            if (at("{")) {
                ++m_pos;
                if (!fields(name + ".", true) || !at("}"))
                    return false;
                ++m_pos;
            } else if (at("[")) {
                ++m_pos;
                while (!at("]")) {
                    if (at("{")) {
                        ++m_pos;
                        if (!fields(name + ".", true) || !at("}"))
                            return false;
                        ++m_pos;
                    } else if (m_pos < m_tokens.size() && colon) {
                        m_out->emplace(name, m_tokens[m_pos++]);
                    } else {
                        return false;
                    }
                    if (at(","))
                        ++m_pos;
                }
                ++m_pos;
            } else if (colon && m_pos < m_tokens.size()) {
                m_out->emplace(name, m_tokens[m_pos++]);
            } else {
                return false;
            }
        }
        return true;
    }

    std::vector<std::string> m_tokens;
    std::size_t m_pos = 0;
    std::multimap<std::string, std::string> *m_out = nullptr;
};

std::multimap<std::string, std::string> pbtxt(const std::string &text)
{
    std::multimap<std::string, std::string> out;
    if (!Pbtxt(text).parse(out))
        qFatal("config.pbtxt does not parse:\n%s", text.c_str());
    return out;
}

std::vector<std::string> all(const std::multimap<std::string, std::string> &m, const std::string &key)
{
    std::vector<std::string> v;
    for (auto [a, b] = m.equal_range(key); a != b; ++a)
        v.push_back(a->second);
    return v;
}

std::string one(const std::multimap<std::string, std::string> &m, const std::string &key)
{
    const auto v = all(m, key);
    return v.size() == 1 ? v[0] : "<" + std::to_string(v.size()) + " values>";
}

// --- a shell command: "--flag value" / "--flag" ----------------------------
std::map<std::string, std::string> flags(const std::string &text, std::string &program)
{
    std::string joined;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#')
            continue;
        if (!line.empty() && line.back() == '\\')
            line.pop_back();
        joined += line + " ";
    }
    std::istringstream words(joined);
    std::vector<std::string> w;
    for (std::string s; words >> s;)
        w.push_back(s);
    std::map<std::string, std::string> out;
    program = w.empty() ? "" : w[0];
    for (std::size_t i = 1; i < w.size(); ++i)
        if (w[i].rfind("--", 0) == 0)
            out[w[i]] = i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0 ? w[i + 1] : "";
    return out;
}

// --- "key: value  # comment" ---------------------------------------------
std::map<std::string, std::string> yaml(const std::string &text)
{
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find('#'));
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(' '));
        v.erase(v.find_last_not_of(' ') + 1);
        out[line.substr(0, colon)] = v;
    }
    return out;
}

// --- Python keyword arguments of one decorator -----------------------------
std::map<std::string, std::string> decoratorArgs(const std::string &text, const std::string &decorator)
{
    std::map<std::string, std::string> out;
    const std::regex call("@" + std::regex_replace(decorator, std::regex("\\."), "\\.") + "\\(([^)]*)\\)");
    std::smatch m;
    if (!std::regex_search(text, m, call))
        return out;
    const std::string args = m[1];
    const std::regex kv("(\\w+)=([^,]+)");
    for (auto it = std::sregex_iterator(args.begin(), args.end(), kv); it != std::sregex_iterator(); ++it)
        out[(*it)[1]] = (*it)[2];
    return out;
}

BatchingConfig withPolicy(PolicyKind p)
{
    BatchingConfig c;
    c.policy = p;
    return c;
}

std::string expectedSeqs(const BatchingConfig &c, int requestBatch)
{
    for (const Knob &k : knobs())
        if (k.key == "max_num_seqs" || k.key.ends_with(".max_num_seqs"))
            return std::to_string(int(k.get(c)));
    return std::to_string(requestBatch);
}

} // namespace

class TestConfigExport : public QObject {
    Q_OBJECT
private slots:
    void names()
    {
        for (const char *n : {"triton", "vllm", "tgi", "torchserve", "ray-serve", "llamacpp", "ollama"}) {
            const auto f = parseServerFormat(n);
            QVERIFY(f);
            QCOMPARE(serverFormatName(*f), std::string_view(n));
        }
        QVERIFY(!parseServerFormat("kserve"));
    }

    void tritonDynamic()
    {
        BatchingConfig c;
        c.maxBatchSize = 24;
        c.maxQueueDelay = std::chrono::microseconds(2500);
        c.queueCapacity = 900;
        c.instances = 3;
        const auto m = pbtxt(exportConfig(c, ServerFormat::Triton).text);
        QCOMPARE(one(m, "max_batch_size"), std::string("24"));
        QCOMPARE(one(m, "dynamic_batching.max_queue_delay_microseconds"), std::string("2500"));
        QCOMPARE(one(m, "dynamic_batching.default_queue_policy.max_queue_size"), std::string("900"));
        QCOMPARE(one(m, "instance_group.count"), std::string("3"));
        QVERIFY(all(m, "dynamic_batching.preferred_batch_size").empty()); // Triton: as large as possible
        QVERIFY(all(m, "response_cache.enable").empty());
    }

    void tritonPolicies()
    {
        auto st = withPolicy(PolicyKind::Static);
        st.staticBatchSize = 12;
        auto m = pbtxt(exportConfig(st, ServerFormat::Triton).text);
        QCOMPARE(one(m, "max_batch_size"), std::string("12"));
        QCOMPARE(all(m, "dynamic_batching.preferred_batch_size"), std::vector<std::string>{"12"});

        m = pbtxt(exportConfig(withPolicy(PolicyKind::Hybrid), ServerFormat::Triton).text);
        QCOMPARE(all(m, "dynamic_batching.preferred_batch_size"),
                 (std::vector<std::string>{"8", "16", "32"}));
        QCOMPARE(one(m, "max_batch_size"),
                 std::string("32")); // the largest static size beats max_batch_size 16

        m = pbtxt(exportConfig(withPolicy(PolicyKind::None), ServerFormat::Triton).text);
        QCOMPARE(one(m, "max_batch_size"), std::string("1"));
        QVERIFY(all(m, "dynamic_batching.max_queue_delay_microseconds").empty());

        BatchingConfig guarded;
        guarded.memoryBatchLimit = 4;
        guarded.cache.enabled = true;
        const std::string text = exportConfig(guarded, ServerFormat::Triton).text;
        m = pbtxt(text);
        QCOMPARE(one(m, "max_batch_size"), std::string("4"));
        QCOMPARE(one(m, "response_cache.enable"), std::string("true"));
        QVERIFY(text.find("--cache-config local,size=67108864") != std::string::npos);
    }

    void vllm()
    {
        BatchingConfig c;
        c.maxBatchSize = 48;
        std::string program;
        const std::string text = exportConfig(c, ServerFormat::Vllm).text;
        const auto f = flags(text, program);
        QCOMPARE(program, std::string("vllm"));
        QCOMPARE(f.at("--max-num-seqs"), expectedSeqs(c, 48));
        QVERIFY(text.find("--max-num-batched-tokens") != std::string::npos); // set, or why not
        QVERIFY(text.find("chunked-prefill") != std::string::npos);
    }

    void tgi()
    {
        BatchingConfig c;
        c.maxBatchSize = 20;
        c.queueCapacity = 256;
        std::string program;
        const std::string text = exportConfig(c, ServerFormat::Tgi).text;
        const auto f = flags(text, program);
        QCOMPARE(program, std::string("text-generation-launcher"));
        QCOMPARE(f.at("--max-batch-size"), expectedSeqs(c, 20));
        QCOMPARE(f.at("--max-concurrent-requests"), std::string("256"));
        QCOMPARE(f.at("--model-id"), std::string("\"$MODEL_ID\""));
        for (const char *flag : {"--max-batch-prefill-tokens", "--max-batch-total-tokens",
                                 "--waiting-served-ratio", "--max-waiting-tokens"})
            QVERIFY2(text.find(flag) != std::string::npos, flag);
    }

    void llamacpp()
    {
        BatchingConfig c = withPolicy(PolicyKind::Continuous);
        c.continuous.maxNumSeqs = 8;
        c.continuous.maxNumBatchedTokens = 256;
        c.continuous.kvCacheTokens = 16384;
        std::string program;
        const ExportedConfig out = exportConfig(c, ServerFormat::LlamaCpp);
        const auto f = flags(out.text, program);
        QCOMPARE(program, std::string("llama-server"));
        QCOMPARE(f.at("--parallel"), std::string("8"));
        QCOMPARE(f.at("--batch-size"), std::string("256"));
        QCOMPARE(f.at("--ubatch-size"), std::string("256")); // at most the batch
        QCOMPARE(f.at("--ctx-size"), std::string("16384"));
        QVERIFY(f.count("--kv-unified"));   // BatchPilot's KV budget is one pool
        QVERIFY(!f.count("--cache-reuse")); // 0: off, not written
        for (const char *k : {"policy", "continuous.max_num_seqs", "continuous.max_num_batched_tokens",
                              "continuous.kv_cache_tokens", "continuous.chunked_prefill"})
            QVERIFY2(std::count(out.mapped.begin(), out.mapped.end(), k) == 1, k);
        // No KV budget: -c is left to the server, and said so.
        c.continuous.kvCacheTokens = 0;
        const ExportedConfig open = exportConfig(c, ServerFormat::LlamaCpp);
        QVERIFY(!flags(open.text, program).count("--ctx-size"));
        QVERIFY(std::count(open.unmapped.begin(), open.unmapped.end(), "continuous.kv_cache_tokens") == 1);
        // A config that simulates llama-server writes its own knobs.
        BatchingConfig l = withPolicy(PolicyKind::Continuous);
        l.server.kind = ServerKind::LlamaCpp;
        l.server.llamacpp = LlamaCppKnobs{2, 4096, 512, 128, false, 256};
        const auto g = flags(exportConfig(l, ServerFormat::LlamaCpp).text, program);
        QCOMPARE(g.at("--parallel"), std::string("2"));
        QCOMPARE(g.at("--ubatch-size"), std::string("128"));
        QCOMPARE(g.at("--cache-reuse"), std::string("256"));
        QVERIFY(g.count("--no-kv-unified"));
    }

    void ollama()
    {
        BatchingConfig c = withPolicy(PolicyKind::Continuous);
        c.continuous.maxNumSeqs = 4;
        c.continuous.kvCacheTokens = 16384;
        const ExportedConfig out = exportConfig(c, ServerFormat::Ollama);
        QVERIFY2(out.text.find("\nOLLAMA_NUM_PARALLEL=4\n") != std::string::npos, out.text.c_str());
        QVERIFY2(out.text.find("\nOLLAMA_CONTEXT_LENGTH=4096\n") != std::string::npos, out.text.c_str());
        QVERIFY(std::count(out.mapped.begin(), out.mapped.end(), "continuous.kv_cache_tokens") == 1);
        // Not a multiple of the slots: written rounded down, not mapped.
        c.continuous.kvCacheTokens = 16385;
        const ExportedConfig odd = exportConfig(c, ServerFormat::Ollama);
        QVERIFY(odd.text.find("\nOLLAMA_CONTEXT_LENGTH=4096\n") != std::string::npos);
        QVERIFY(std::count(odd.unmapped.begin(), odd.unmapped.end(), "continuous.kv_cache_tokens") == 1);
        // The queue bound is explained, not written.
        QVERIFY(out.text.find("OLLAMA_MAX_QUEUE=") == std::string::npos);
        QVERIFY(out.text.find("OLLAMA_MAX_QUEUE bounds") != std::string::npos);
    }

    void torchserve()
    {
        BatchingConfig c;
        c.maxBatchSize = 32;
        c.maxQueueDelay = std::chrono::milliseconds(7);
        c.instances = 2;
        auto y = yaml(exportConfig(c, ServerFormat::TorchServe).text);
        QCOMPARE(y.at("batchSize"), std::string("32"));
        QCOMPARE(y.at("maxBatchDelay"), std::string("7"));
        QCOMPARE(y.at("minWorkers"), std::string("2"));
        QCOMPARE(y.at("maxWorkers"), std::string("2"));
        // TorchServe counts whole milliseconds: 400 µs must not become "no wait"
        c.maxQueueDelay = std::chrono::microseconds(400);
        y = yaml(exportConfig(c, ServerFormat::TorchServe).text);
        QCOMPARE(y.at("maxBatchDelay"), std::string("1"));
    }

    void rayServe()
    {
        BatchingConfig c;
        c.maxBatchSize = 10;
        c.maxQueueDelay = std::chrono::microseconds(2500);
        c.instances = 2;
        c.queueCapacity = 300;
        const std::string text = exportConfig(c, ServerFormat::RayServe).text;
        const auto batch = decoratorArgs(text, "serve.batch");
        QCOMPARE(batch.at("max_batch_size"), std::string("10"));
        QCOMPARE(std::stod(batch.at("batch_wait_timeout_s")), 0.0025);
        const auto dep = decoratorArgs(text, "serve.deployment");
        QCOMPARE(dep.at("num_replicas"), std::string("2"));
        QCOMPARE(dep.at("max_queued_requests"), std::string("300"));
        QVERIFY(std::stoi(dep.at("max_ongoing_requests")) >= 10);
        QVERIFY(text.find("async def __call__(self, requests):") != std::string::npos);
    }

    void everyKnobAppears_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("policy");
        for (int f = 0; f < 7; ++f)
            for (int p = 0; p < 5; ++p)
                QTest::addRow("%s/%s", serverFormatName(ServerFormat(f)).data(),
                              policyName(PolicyKind(p)).data())
                    << f << p;
    }
    void everyKnobAppears()
    {
        QFETCH(int, format);
        QFETCH(int, policy);
        BatchingConfig c = withPolicy(PolicyKind(policy));
        c.adaptiveDelay.enabled = true;
        const ExportedConfig out = exportConfig(c, ServerFormat(format));
        QCOMPARE(out.mapped.size() + out.unmapped.size(), knobs().size());
        for (const Knob &k : knobs()) {
            const std::string key(k.key);
            const bool mapped = std::count(out.mapped.begin(), out.mapped.end(), key) == 1;
            const bool unmapped = std::count(out.unmapped.begin(), out.unmapped.end(), key) == 1;
            QVERIFY2(mapped != unmapped, key.c_str());
            QVERIFY2(out.text.find(key) != std::string::npos, (key + " is not in the export").c_str());
            if (unmapped)
                QVERIFY2(out.text.find("#   " + key + " = " + formatKnobValue(k, c)) != std::string::npos,
                         key.c_str());
        }
        // The adaptive delay is explained, not just listed.
        QVERIFY(out.text.find("fixed delay") != std::string::npos ||
                out.text.find("adaptive_delay.enabled = true") != std::string::npos);
    }

    void unmappedListsValueAndReason()
    {
        const std::string text = exportConfig(withPolicy(PolicyKind::Bucketed), ServerFormat::Triton).text;
        QVERIFY2(text.find("#   bucket_edges = [64,128,256,512,1024]: Triton batches regardless of length") !=
                     std::string::npos,
                 text.c_str());
        QVERIFY(text.find("# Reference: https://docs.nvidia.com/") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestConfigExport)
#include "test_config_export.moc"
