// SGLang's published settings (engine/sim/calibration/remote_settings.h sglangSettings)
// on fixtures written from SGLang's GET /get_server_info (http_server.py:
// the server args, the scheduler's max_total_num_tokens and
// max_req_input_len, and `internal_states`, one entry per data-parallel
// rank, where newer releases keep the scheduler's own values):
//  - the settings under SGLang's names, as serverConfigFromSettings reads
//    them (the KV pool, max_total_num_tokens there, as max_total_tokens),
//    the BatchPilot knobs they set, the model length, and a config that
//    simulates the server with them;
//  - a value null at the top level is taken from internal_states;
//  - chunked_prefill_size -1 is chunking off;
//  - no secret of the server args (api_key) is kept;
//  - an answer that is not SGLang's is refused.
#include "engine/sim/calibration/remote_calibrate.h"
#include "engine/sim/calibration/remote_settings.h"

#include <QtTest>

using namespace bp;

namespace {

// A recent release's answer, trimmed to the fields around the scheduler's
// (and a key the client must not keep).
nlohmann::json recentServerInfo()
{
    return nlohmann::json::parse(R"({"model_path": "qwen/qwen2.5-0.5b-instruct",
        "tokenizer_path": "qwen/qwen2.5-0.5b-instruct", "context_length": null, "dtype": "auto",
        "kv_cache_dtype": "auto", "mem_fraction_static": 0.836, "max_running_requests": 128,
        "max_queued_requests": null, "max_total_tokens": null, "chunked_prefill_size": 8192,
        "max_prefill_tokens": 16384, "schedule_policy": "fcfs", "schedule_conservativeness": 1.0,
        "page_size": 1, "tp_size": 1, "api_key": "secret-key", "enable_mixed_chunk": false,
        "disable_radix_cache": false, "status": "ready", "max_total_num_tokens": 20480,
        "max_req_input_len": 20474,
        "internal_states": [{"max_running_requests": 128, "max_total_tokens": 20480, "chunked_prefill_size": 8192,
                             "max_prefill_tokens": 16384, "last_gen_throughput": 0.0}],
        "version": "0.5.6"})");
}

} // namespace

class TestRemoteSettings : public QObject {
    Q_OBJECT
private slots:
    void sglangServerInfo()
    {
        const auto models = nlohmann::json::parse(R"({"object": "list", "data": [
            {"id": "qwen/qwen2.5-0.5b-instruct", "object": "model", "created": 1, "owned_by": "sglang",
             "root": "qwen/qwen2.5-0.5b-instruct", "max_model_len": 32768}]})");
        auto s = sglangSettings(recentServerInfo(), &models, "qwen/qwen2.5-0.5b-instruct");
        QVERIFY2(s, s.status().message().c_str());
        QCOMPARE(s->server, std::string("sglang"));
        QCOMPARE(s->source, std::string("GET /get_server_info + GET /v1/models"));
        // SGLang's names, as serverConfigFromSettings reads them
        QCOMPARE(s->settings["max_running_requests"], nlohmann::json(128));
        QCOMPARE(s->settings["chunked_prefill_size"], nlohmann::json(8192));
        QCOMPARE(s->settings["max_prefill_tokens"], nlohmann::json(16384));
        QCOMPARE(s->settings["max_total_tokens"], nlohmann::json(20480)); // max_total_num_tokens
        QCOMPARE(s->settings["schedule_policy"], nlohmann::json("fcfs"));
        QCOMPARE(s->settings["schedule_conservativeness"], nlohmann::json(1.0));
        QVERIFY(!s->settings.contains("api_key"));
        QVERIFY(!s->settings.contains("context_length")); // null: the model's own, from /v1/models
        QCOMPARE(s->kvCapacityTokens, std::optional<std::int64_t>(20480));
        QCOMPARE(s->maxModelLen, std::optional<std::int64_t>(32768));
        // the BatchPilot knobs they set
        QCOMPARE(s->knobs["policy"].get<std::string>(), std::string("continuous"));
        QCOMPARE(s->knobs["continuous.max_num_seqs"].get<int>(), 128);
        QCOMPARE(s->knobs["continuous.kv_cache_tokens"].get<int>(), 20480);
        QCOMPARE(s->knobs["continuous.prefill_chunk"].get<int>(), 8192);
        QCOMPARE(s->knobs["continuous.max_num_batched_tokens"].get<int>(), 16384);
        QCOMPARE(prefillChunkOf(*s), 8192);
        QVERIFY(s->notes.empty());
        // the config that simulates the server: SGLang's scheduler with them
        auto c = serverCurrentConfig("sglang", *s, std::nullopt);
        QVERIFY2(c, c.status().message().c_str());
        QCOMPARE(c->server.kind, ServerKind::Sglang);
        QCOMPARE(c->server.sglang.maxRunningRequests, 128);
        QCOMPARE(c->server.sglang.chunkedPrefillSize, 8192);
        QCOMPARE(c->server.sglang.maxPrefillTokens, 16384);
        QCOMPARE(c->server.sglang.maxTotalTokens, std::int64_t(20480));
        // stored with a calibration and read back
        auto back = serverSettingsFromJson(toJson(*s));
        QVERIFY2(back, back.status().message().c_str());
        QCOMPARE(*back, *s);
    }

    // An older answer: max_running_requests null among the server args (not
    // given), the scheduler's own in internal_states; chunking off (-1); the
    // context length given; read at /server_info.
    void sglangValuesFromInternalStates()
    {
        auto j = recentServerInfo();
        j["max_running_requests"] = nullptr;
        j["internal_states"][0]["max_running_requests"] = 48;
        j["chunked_prefill_size"] = -1;
        j["context_length"] = 4096;
        auto s = sglangSettings(j, nullptr, "", "/server_info");
        QVERIFY2(s, s.status().message().c_str());
        QCOMPARE(s->source, std::string("GET /server_info"));
        QCOMPARE(s->settings["max_running_requests"], nlohmann::json(48));
        QCOMPARE(s->knobs["continuous.max_num_seqs"].get<int>(), 48);
        QCOMPARE(s->knobs["continuous.chunked_prefill"].get<bool>(), false);
        QVERIFY(!s->knobs.contains("continuous.prefill_chunk"));
        QCOMPARE(prefillChunkOf(*s), 0);
        QCOMPARE(s->maxModelLen, std::optional<std::int64_t>(4096));
        auto c = serverCurrentConfig("sglang", *s, std::nullopt);
        QVERIFY2(c, c.status().message().c_str());
        QCOMPARE(c->server.sglang.chunkedPrefillSize, 0); // off
        QCOMPARE(c->server.sglang.maxRunningRequests, 48);

        // Nothing about the running cap at all: said so.
        j["internal_states"][0].erase("max_running_requests");
        auto n = sglangSettings(j, nullptr, "");
        QVERIFY(n);
        QVERIFY(!n->knobs.contains("continuous.max_num_seqs"));
        QCOMPARE(n->notes.size(), std::size_t(1));
    }

    void notSglang()
    {
        QVERIFY(!sglangSettings(nlohmann::json{{"model_id", "x"}, {"max_total_tokens", 2048}}, nullptr, ""));
        QVERIFY(!sglangSettings(nlohmann::json::array(), nullptr, ""));
    }
};

QTEST_GUILESS_MAIN(TestRemoteSettings)
#include "test_remote_settings.moc"
