// import-config, the inverse of export-config (engine/config/config_import.h):
//  - import(export(config)) gives back every knob the export maps, on every
//    format, policy and a spread of values (data-driven), and the export
//    maps what each format can carry (no vacuous identity);
//  - hand-written files and Triton's served JSON read as the server means
//    them; flags BatchPilot does not model are kept, never an error;
//  - malformed input fails with the line it is on.
#include "engine/config/config_import.h"
#include "engine/config/config_rules.h"
#include "engine/config/knobs.h"

#include <QtTest>

#include <algorithm>

using namespace bp;
using namespace std::chrono_literals;

Q_DECLARE_METATYPE(std::string)

namespace {

// A config whose every knob a format can carry differs from the default.
BatchingConfig variant(const std::string &name, PolicyKind policy)
{
    BatchingConfig c;
    c.policy = policy;
    if (name == "defaults")
        return c;
    c.maxBatchSize = 24;
    c.maxQueueDelay = 7ms;
    c.staticBatchSize = 12;
    c.queueCapacity = 900;
    c.instances = 3;
    c.cache.enabled = true;
    c.cache.maxBytes = 1 << 24;
    c.hybrid.staticSizes = {4, 12};
    c.continuous.maxNumSeqs = 48;
    c.continuous.maxNumBatchedTokens = 1024;
    c.continuous.chunkedPrefill = false;
    c.continuous.kvCacheTokens = 32768;
    if (name == "fine-delay")
        c.maxQueueDelay = std::chrono::nanoseconds(2'500'500); // 2500.5 µs: not whole µs or ms
    if (name == "capped")
        c.memoryBatchLimit = 4;
    if (name == "one-size") {
        c.hybrid.staticSizes = {24}; // reads as static on Triton
        c.continuous.kvCacheTokens = 0;
    }
    return c;
}

bool sameValue(const Knob &k, const BatchingConfig &a, const BatchingConfig &b)
{
    return k.type == KnobType::IntList ? k.items(a) == k.items(b) : k.get(a) == k.get(b);
}

} // namespace

class TestConfigImport : public QObject {
    Q_OBJECT
private slots:
    void importOfExportIsTheIdentity_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("policy");
        QTest::addColumn<std::string>("variant");
        for (int f = 0; f < 7; ++f)
            for (int p = 0; p < 6; ++p)
                for (const char *v : {"defaults", "custom", "fine-delay", "capped", "one-size"})
                    QTest::addRow("%s/%s/%s", serverFormatName(ServerFormat(f)).data(),
                                  policyName(PolicyKind(p)).data(), v)
                        << f << p << std::string(v);
    }
    void importOfExportIsTheIdentity()
    {
        QFETCH(int, format);
        QFETCH(int, policy);
        QFETCH(std::string, variant);
        const BatchingConfig original = ::variant(variant, PolicyKind(policy));
        QVERIFY(validate(original));
        const ExportedConfig out = exportConfig(original, ServerFormat(format));
        QCOMPARE(detectServerFormat(out.text), std::optional<ServerFormat>(ServerFormat(format)));
        auto imported = importConfig(out.text, ServerFormat(format));
        QVERIFY2(imported, (imported.status().message() + "\n" + out.text).c_str());
        QVERIFY(validate(imported->config));
        for (const std::string &key : out.mapped) {
            const Knob *k = findKnob(key);
            QVERIFY(k);
            QVERIFY2(std::count(imported->knobs.begin(), imported->knobs.end(), key) == 1,
                     (key + " was mapped but not read back\n" + out.text).c_str());
            QVERIFY2(sameValue(*k, original, imported->config),
                     (key + ": exported " + formatKnobValue(*k, original) + ", imported " +
                      formatKnobValue(*k, imported->config) + "\n" + out.text)
                         .c_str());
        }
    }

    // The identity above is not vacuous: each format maps what it carries.
    void exportMapsWhatEachFormatCarries_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("policy");
        QTest::addColumn<QStringList>("keys");
        QTest::newRow("triton") << int(ServerFormat::Triton) << int(PolicyKind::Dynamic)
                                << QStringList{"policy",         "max_batch_size", "max_queue_delay_us",
                                               "queue_capacity", "instances",      "cache.enabled"};
        QTest::newRow("triton hybrid") << int(ServerFormat::Triton) << int(PolicyKind::Hybrid)
                                       << QStringList{"policy", "max_batch_size", "hybrid.static_sizes"};
        QTest::newRow("triton static") << int(ServerFormat::Triton) << int(PolicyKind::Static)
                                       << QStringList{"policy", "static_batch_size"};
        QTest::newRow("vllm") << int(ServerFormat::Vllm) << int(PolicyKind::Continuous)
                              << QStringList{"continuous.max_num_seqs", "continuous.max_num_batched_tokens",
                                             "continuous.chunked_prefill"};
        QTest::newRow("tgi") << int(ServerFormat::Tgi) << int(PolicyKind::Continuous)
                             << QStringList{"continuous.max_num_seqs", "continuous.max_num_batched_tokens",
                                            "continuous.kv_cache_tokens", "queue_capacity"};
        QTest::newRow("torchserve") << int(ServerFormat::TorchServe) << int(PolicyKind::Dynamic)
                                    << QStringList{"policy", "max_batch_size", "max_queue_delay_us",
                                                   "instances"};
        QTest::newRow("ray-serve") << int(ServerFormat::RayServe) << int(PolicyKind::Dynamic)
                                   << QStringList{"policy", "max_batch_size", "max_queue_delay_us",
                                                  "instances", "queue_capacity"};
    }
    void exportMapsWhatEachFormatCarries()
    {
        QFETCH(int, format);
        QFETCH(int, policy);
        QFETCH(QStringList, keys);
        const ExportedConfig out =
            exportConfig(::variant("custom", PolicyKind(policy)), ServerFormat(format));
        for (const QString &key : keys)
            QVERIFY2(std::count(out.mapped.begin(), out.mapped.end(), key.toStdString()) == 1,
                     qPrintable(key));
    }

    // What a format cannot carry is not claimed: a rounded delay, a batch
    // size the memory cap set, a policy the syntax cannot tell.
    void lossyFieldsAreNotMapped()
    {
        auto mapped = [](const BatchingConfig &c, ServerFormat f, const char *key) {
            const auto m = exportConfig(c, f).mapped;
            return std::count(m.begin(), m.end(), std::string(key)) == 1;
        };
        QVERIFY(
            !mapped(variant("fine-delay", PolicyKind::Dynamic), ServerFormat::Triton, "max_queue_delay_us"));
        QVERIFY(!mapped(variant("fine-delay", PolicyKind::Dynamic), ServerFormat::TorchServe,
                        "max_queue_delay_us"));
        QVERIFY(
            mapped(variant("fine-delay", PolicyKind::Dynamic), ServerFormat::RayServe, "max_queue_delay_us"));
        QVERIFY(!mapped(variant("capped", PolicyKind::Dynamic), ServerFormat::Triton, "max_batch_size"));
        QVERIFY(!mapped(variant("custom", PolicyKind::Bucketed), ServerFormat::Triton, "policy"));
        QVERIFY(!mapped(variant("one-size", PolicyKind::Hybrid), ServerFormat::Triton, "policy"));
        const std::string text =
            exportConfig(variant("custom", PolicyKind::Bucketed), ServerFormat::Triton).text;
        QVERIFY2(text.find("#   policy = bucketed: the syntax reads back as policy dynamic") !=
                     std::string::npos,
                 text.c_str());
    }

    void vllmCommandAsOperatorsWriteIt()
    {
        const std::string cmd =
            "# our production server\n"
            "vllm serve meta-llama/Llama-3.1-8B-Instruct \\\n"
            "    --tensor-parallel-size 2 --max-model-len=8192 \\\n"
            "    --max-num-seqs 256 --enable-chunked-prefill \\\n"
            "    --gpu-memory-utilization 0.9 --num-gpu-blocks-override 1000 --block-size 32 \\\n"
            "    --scheduling-policy priority --disable-log-requests\n";
        QCOMPARE(detectServerFormat(cmd), std::optional<ServerFormat>(ServerFormat::Vllm));
        auto r = importConfig(cmd, ServerFormat::Vllm);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->config.policy, PolicyKind::Continuous);
        QCOMPARE(r->config.continuous.maxNumSeqs, 256);
        QVERIFY(r->config.continuous.chunkedPrefill);
        QCOMPARE(r->config.continuous.kvCacheTokens, 32000);
        QVERIFY(r->config.continuous.priorityOrder);
        QCOMPARE(r->settings["max_model_len"], nlohmann::json(8192));
        QCOMPARE(r->settings["tensor_parallel_size"], nlohmann::json(2));
        QCOMPARE(r->settings["gpu_memory_utilization"], nlohmann::json(0.9));
        QCOMPARE(r->settings["disable_log_requests"], nlohmann::json(true));
    }

    void tgiCommandAsOperatorsWriteIt()
    {
        const std::string cmd =
            "text-generation-launcher --model-id bigscience/bloom-560m --port 8080 "
            "--max-batch-prefill-tokens 4096 --max-batch-total-tokens 100000 "
            "--waiting-served-ratio 0.3 --max-waiting-tokens 20 --max-concurrent-requests 128";
        auto r = importConfig(cmd, ServerFormat::Tgi);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->config.continuous.maxNumBatchedTokens, 4096);
        QCOMPARE(r->config.continuous.kvCacheTokens, 100000);
        QCOMPARE(r->config.queueCapacity, 128);
        QCOMPARE(r->settings["waiting_served_ratio"], nlohmann::json(0.3));
        QCOMPARE(r->settings["max_waiting_tokens"], nlohmann::json(20));
    }

    void llamaServerCommandAsOperatorsWriteIt()
    {
        const std::string cmd = "# the chat box\n"
                                "./build/bin/llama-server -m models/qwen2-0.5b-q8_0.gguf --host 0.0.0.0 \\\n"
                                "    -np 4 -c 16384 -b 1024 -ub 256 --cache-reuse 256 -t 8 --metrics \\\n"
                                "    --temp -1 --flash-attn on\n";
        QCOMPARE(detectServerFormat(cmd), std::optional<ServerFormat>(ServerFormat::LlamaCpp));
        auto r = importConfig(cmd, ServerFormat::LlamaCpp);
        QVERIFY2(r, r.status().message().c_str());
        QVERIFY(validate(r->config));
        QCOMPARE(r->config.policy, PolicyKind::Continuous);
        QCOMPARE(r->config.server.kind, ServerKind::LlamaCpp);
        const LlamaCppKnobs &k = r->config.server.llamacpp;
        QCOMPARE(k.nParallel, 4);
        QCOMPARE(k.nCtx, 16384);
        QCOMPARE(k.nBatch, 1024);
        QCOMPARE(k.nUbatch, 256);
        QCOMPARE(k.nCacheReuse, 256);
        // -np without -kvu: each slot has n_ctx / n_parallel (llama-server's
        // own rule; only -np auto shares the cache), and a note says so.
        QVERIFY(!k.kvUnified);
        QCOMPARE(r->settings["kv_unified"], nlohmann::json(false));
        // The BatchPilot knobs the rows stand for.
        QCOMPARE(r->config.continuous.maxNumSeqs, 4);
        QCOMPARE(r->config.continuous.maxNumBatchedTokens, 1024);
        QCOMPARE(r->config.continuous.kvCacheTokens, 16384);
        // Other flags are kept, with their values, and listed in a note.
        QCOMPARE(r->settings["m"], nlohmann::json("models/qwen2-0.5b-q8_0.gguf"));
        QCOMPARE(r->settings["t"], nlohmann::json(8));
        QCOMPARE(r->settings["temp"], nlohmann::json(-1));
        QCOMPARE(r->settings["metrics"], nlohmann::json(true));
        QCOMPARE(r->settings["flash_attn"], nlohmann::json("on"));
        auto noted = [&](const std::string &part) {
            return std::any_of(r->notes.begin(), r->notes.end(),
                               [&](const std::string &n) { return n.find(part) != std::string::npos; });
        };
        QVERIFY(noted("without --kv-unified"));
        QVERIFY(noted("not modelled: -m, --host, -t, --metrics, --temp, --flash-attn"));

        // Long forms, --flag=value, a unified cache, and its negation.
        auto u =
            importConfig("llama-server --parallel=8 --ctx-size 8192 --kv-unified", ServerFormat::LlamaCpp);
        QVERIFY2(u, u.status().message().c_str());
        QCOMPARE(u->config.server.llamacpp.nParallel, 8);
        QVERIFY(u->config.server.llamacpp.kvUnified);
        auto n = importConfig("llama-server -np 2 -c 4096 -no-kvu", ServerFormat::LlamaCpp);
        QVERIFY(n);
        QVERIFY(!n->config.server.llamacpp.kvUnified);
        // -np -1 is the server's auto: 4 slots sharing one cache; -c 0 the
        // model's context, which only the server knows.
        auto a = importConfig("llama-server -np -1 -c 0", ServerFormat::LlamaCpp);
        QVERIFY2(a, a.status().message().c_str());
        QCOMPARE(a->config.server.llamacpp.nParallel, 4);
        QVERIFY(a->config.server.llamacpp.kvUnified);
        QVERIFY(std::count(a->knobs.begin(), a->knobs.end(), "server.llamacpp.n_ctx") == 0);
        // A value outside the knob's range is a note, not a failure.
        auto big = importConfig("llama-server -np 9000", ServerFormat::LlamaCpp);
        QVERIFY(big);
        QCOMPARE(big->config.server.llamacpp.nParallel, LlamaCppKnobs{}.nParallel);
        QVERIFY(!big->notes.empty());
    }

    void ollamaEnvironment()
    {
        // As a systemd override writes it; other OLLAMA_ variables are kept.
        const std::string env = "[Service]\n"
                                "Environment=\"OLLAMA_HOST=0.0.0.0:11434\"\n"
                                "Environment=\"OLLAMA_NUM_PARALLEL=3\"\n"
                                "Environment=\"OLLAMA_CONTEXT_LENGTH=2048\"\n"
                                "Environment=\"OLLAMA_MAX_QUEUE=64\"\n";
        QCOMPARE(detectServerFormat(env), std::optional<ServerFormat>(ServerFormat::Ollama));
        auto r = importConfig(env, ServerFormat::Ollama);
        QVERIFY2(r, r.status().message().c_str());
        QVERIFY(validate(r->config));
        const LlamaCppKnobs &k = r->config.server.llamacpp;
        QCOMPARE(k.nParallel, 3);
        // Each request gets OLLAMA_CONTEXT_LENGTH of its own: n_ctx is it
        // times the slots, not shared.
        QCOMPARE(k.nCtx, 6144);
        QVERIFY(!k.kvUnified);
        QCOMPARE(r->config.continuous.maxNumSeqs, 3);
        QCOMPARE(r->config.continuous.kvCacheTokens, 6144);
        QCOMPARE(r->settings["OLLAMA_HOST"], nlohmann::json("0.0.0.0:11434"));
        QCOMPARE(r->settings["OLLAMA_MAX_QUEUE"], nlohmann::json(64));
        // OLLAMA_MAX_QUEUE: read, and said to be not modelled; the queue
        // capacity stays BatchPilot's default.
        QVERIFY(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string &n) {
            return n.find("OLLAMA_MAX_QUEUE read but not modelled") != std::string::npos;
        }));
        QCOMPARE(r->config.queueCapacity, BatchingConfig{}.queueCapacity);
        // Without OLLAMA_NUM_PARALLEL, Ollama's default of 1.
        auto d = importConfig("export OLLAMA_CONTEXT_LENGTH=8192\n", ServerFormat::Ollama);
        QVERIFY2(d, d.status().message().c_str());
        QCOMPARE(d->config.server.llamacpp.nParallel, 1);
        QCOMPARE(d->config.server.llamacpp.nCtx, 8192);
    }

    // A llama-server model's own knobs (what tune --target picks) go out as
    // its flags and come back the same.
    void llamaCppServerKnobsRoundTrip()
    {
        BatchingConfig c;
        c.policy = PolicyKind::Continuous;
        c.server.kind = ServerKind::LlamaCpp;
        c.server.llamacpp = LlamaCppKnobs{6, 12288, 1024, 256, false, 64};
        QVERIFY(validate(c));
        const std::string text = exportConfig(c, ServerFormat::LlamaCpp).text;
        auto r = importConfig(text, *detectServerFormat(text));
        QVERIFY2(r, (r.status().message() + "\n" + text).c_str());
        QCOMPARE(r->config.server.llamacpp, c.server.llamacpp);
        c.server.llamacpp.kvUnified = true;
        r = importConfig(exportConfig(c, ServerFormat::LlamaCpp).text, ServerFormat::LlamaCpp);
        QVERIFY(r);
        QCOMPARE(r->config.server.llamacpp, c.server.llamacpp);
        // Ollama carries the slots and each request's context.
        c.server.llamacpp.kvUnified = false;
        const std::string env = exportConfig(c, ServerFormat::Ollama).text;
        r = importConfig(env, *detectServerFormat(env));
        QVERIFY2(r, (r.status().message() + "\n" + env).c_str());
        QCOMPARE(r->format, ServerFormat::Ollama);
        QCOMPARE(r->config.server.llamacpp.nParallel, 6);
        QCOMPARE(r->config.server.llamacpp.nCtx, 12288);
    }

    // GET /v2/models/NAME/config: the ModelConfig message as JSON with
    // proto field names, 64-bit fields as numbers and every primitive field
    // printed (triton-inference-server/core src/model_config_utils.cc,
    // ModelConfigToJson; fields from common protobuf/model_config.proto).
    void tritonServedJson()
    {
        const auto j = nlohmann::json::parse(R"({
          "name": "llama", "platform": "", "backend": "python", "version_policy": {"latest": {"num_versions": 1}},
          "max_batch_size": 16,
          "input": [{"name": "input_ids", "data_type": "TYPE_INT64", "format": "FORMAT_NONE", "dims": [-1],
                     "is_shape_tensor": false, "allow_ragged_batch": false, "optional": false}],
          "output": [],
          "batch_input": [], "batch_output": [],
          "optimization": {"priority": "PRIORITY_DEFAULT", "input_pinned_memory": {"enable": true},
                           "output_pinned_memory": {"enable": true}, "gather_kernel_buffer_threshold": 0,
                           "eager_batching": false},
          "dynamic_batching": {"preferred_batch_size": [4, 8], "max_queue_delay_microseconds": 100,
                               "preserve_ordering": false, "priority_levels": 0, "default_priority_level": 0,
                               "default_queue_policy": {"timeout_action": "REJECT",
                                                        "default_timeout_microseconds": 0,
                                                        "allow_timeout_override": false, "max_queue_size": 64},
                               "priority_queue_policy": {}},
          "instance_group": [{"name": "llama_0", "kind": "KIND_GPU", "count": 2, "gpus": [0, 1],
                              "secondary_devices": [], "profile": [], "passive": false, "host_policy": ""}],
          "default_model_filename": "", "cc_model_filenames": {}, "metric_tags": {}, "parameters": {},
          "model_warmup": [],
          "response_cache": {"enable": true}
        })");
        auto r = tritonFromJson(j);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->config.policy, PolicyKind::Hybrid);
        QCOMPARE(r->config.maxBatchSize, 16);
        QCOMPARE(r->config.hybrid.staticSizes, (std::vector<int>{4, 8}));
        QCOMPARE(r->config.maxQueueDelay, Duration(100us));
        QCOMPARE(r->config.queueCapacity, 64);
        QCOMPARE(r->config.instances, 4); // count 2 on each of two GPUs
        QVERIFY(r->config.cache.enabled);
        QCOMPARE(r->settings["backend"], nlohmann::json("python"));
        QCOMPARE(r->settings["dynamic_batching.preferred_batch_size"], nlohmann::json({4, 8}));
        // The same document as text through import-config.
        auto t = importConfig(j.dump(2), ServerFormat::Triton);
        QVERIFY(t);
        QCOMPARE(t->config, r->config);
    }

    void valuesOutsideBatchPilotsRangesAreNotedNotFatal()
    {
        auto r = importConfig("max_batch_size: 4096\ndynamic_batching { }\n", ServerFormat::Triton);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->settings["max_batch_size"], nlohmann::json(4096));
        QCOMPARE(r->config.maxBatchSize, BatchingConfig{}.maxBatchSize);
        QVERIFY(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string &n) {
            return n.rfind("line 1: max_batch_size 4096", 0) == 0;
        }));
    }

    void knobValuesRoundTrip()
    {
        const BatchingConfig c = variant("custom", PolicyKind::Hybrid);
        std::vector<std::string> keys;
        for (const Knob &k : knobs())
            keys.emplace_back(k.key);
        const nlohmann::json v = knobValues(c, keys);
        auto back = applyKnobValues(v);
        QVERIFY2(back, back.status().message().c_str());
        QCOMPARE(*back, c);
        QVERIFY(!applyKnobValues(nlohmann::json{{"no_such_knob", 1}}));
        QVERIFY(!applyKnobValues(nlohmann::json{{"max_batch_size", 5000}}));
    }

    void malformedInputNamesTheLine_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<std::string>("text");
        QTest::addColumn<std::string>("error");
        const int triton = int(ServerFormat::Triton), vllm = int(ServerFormat::Vllm),
                  tgi = int(ServerFormat::Tgi), ts = int(ServerFormat::TorchServe),
                  ray = int(ServerFormat::RayServe);
        QTest::newRow("pbtxt open brace")
            << triton << std::string("max_batch_size: 8\ndynamic_batching {\n  x: 1\n")
            << std::string("line 2: the '{' of dynamic_batching is never closed");
        QTest::newRow("pbtxt word") << triton << std::string("name: \"m\"\nmax_batch_size: eight\n")
                                    << std::string(
                                           "line 2: max_batch_size takes a whole number, not 'eight'");
        QTest::newRow("pbtxt no colon") << triton << std::string("\n\nmax_batch_size 8\n")
                                        << std::string("line 3: expected a value after 'max_batch_size'");
        QTest::newRow("pbtxt list") << triton
                                    << std::string("dynamic_batching {\n preferred_batch_size: [ 4 8 ]\n}")
                                    << std::string(
                                           "line 2: expected ',' or ']' in the list of preferred_batch_size");
        QTest::newRow("vllm no value")
            << vllm << std::string("vllm serve m \\\n  --max-num-seqs \\\n  --max-model-len 512")
            << std::string("line 2: --max-num-seqs needs a value");
        QTest::newRow("vllm not a number")
            << vllm << std::string("vllm serve m\n--max-num-seqs abc")
            << std::string("line 2: --max-num-seqs takes a whole number, not 'abc'");
        QTest::newRow("vllm quote") << vllm << std::string("vllm serve 'm --max-num-seqs 4")
                                    << std::string("line 1: the quote ' is never closed");
        QTest::newRow("vllm policy") << vllm << std::string("vllm serve m --scheduling-policy lifo")
                                     << std::string(
                                            "line 1: --scheduling-policy is fcfs or priority, not 'lifo'");
        QTest::newRow("tgi real") << tgi << std::string("text-generation-launcher --max-batch-size 1.5")
                                  << std::string("line 1: --max-batch-size takes a whole number, not '1.5'");
        QTest::newRow("yaml no colon") << ts << std::string("batchSize: 8\nmaxBatchDelay 5\n")
                                       << std::string("line 2: expected 'key: value', got 'maxBatchDelay 5'");
        QTest::newRow("yaml number") << ts << std::string("minWorkers: 1\nbatchSize: many\n")
                                     << std::string("line 2: batchSize takes a whole number, not 'many'");
        QTest::newRow("ray positional")
            << ray << std::string("@serve.deployment\nclass A:\n  @serve.batch(max_batch_size=8,\n     0.01)")
            << std::string("line 4: @serve.batch takes keyword arguments, got '0.01'");
        const int llama = int(ServerFormat::LlamaCpp), ollama = int(ServerFormat::Ollama);
        QTest::newRow("llama-server word") << llama << std::string("llama-server -m m.gguf \\\n  -np many")
                                           << std::string("line 2: -np takes a whole number, not 'many'");
        QTest::newRow("llama-server no value")
            << llama << std::string("llama-server -m m.gguf -c") << std::string("line 1: -c needs a value");
        QTest::newRow("llama-server nothing")
            << llama << std::string("# nothing here\n")
            << std::string("no llama-server flags or OLLAMA_ variables found");
        QTest::newRow("ollama word") << ollama << std::string("OLLAMA_HOST=x\nOLLAMA_NUM_PARALLEL=four\n")
                                     << std::string(
                                            "line 2: OLLAMA_NUM_PARALLEL takes a whole number, not 'four'");
        QTest::newRow("ray paren") << ray << std::string("\n@serve.batch(max_batch_size=8\n")
                                   << std::string("line 2: the '(' of @serve.batch is never closed");
        QTest::newRow("ray number") << ray
                                    << std::string(
                                           "@serve.batch(max_batch_size=8, batch_wait_timeout_s=soon)")
                                    << std::string("line 1: batch_wait_timeout_s takes a number, not 'soon'");
    }
    void malformedInputNamesTheLine()
    {
        QFETCH(int, format);
        QFETCH(std::string, text);
        QFETCH(std::string, error);
        auto r = importConfig(text, ServerFormat(format));
        QVERIFY2(!r, "accepted malformed input");
        QCOMPARE(r.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(r.status().message() == error, r.status().message().c_str());
    }
};

QTEST_GUILESS_MAIN(TestConfigImport)
#include "test_config_import.moc"
