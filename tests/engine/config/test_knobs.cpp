// The knob table is the one declaration of the batching knobs: validation,
// change summaries, JSON and docs/configuration.md must agree with it.
#include "engine/config/config_json.h"
#include "engine/config/knobs.h"
#include "engine/config/server_command.h"

#include <QtTest>

#include <fstream>
#include <set>
#include <sstream>

using namespace bp;

namespace {

const std::string kBegin = "<!-- knob-table:begin -->\n", kEnd = "<!-- knob-table:end -->";

std::string docPath()
{
    const char *src = std::getenv("BATCHPILOT_SOURCE_DIR");
    return std::string(src ? src : ".") + "/docs/configuration.md";
}

void leafKeys(const nlohmann::json &j, const std::string &prefix, std::set<std::string> &out)
{
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it->is_object())
            leafKeys(*it, key, out);
        else
            out.insert(key);
    }
}

} // namespace

class TestKnobs : public QObject {
    Q_OBJECT
private slots:
    void docsTableMatchesTheKnobTable()
    {
        std::ifstream in(docPath());
        QVERIFY2(in, ("cannot read " + docPath()).c_str());
        std::stringstream buf;
        buf << in.rdbuf();
        std::string doc = buf.str();
        const auto a = doc.find(kBegin), b = doc.find(kEnd);
        QVERIFY2(a != std::string::npos && b != std::string::npos && a < b, "knob-table markers missing");
        const std::string table = knobsMarkdown();
        const std::string current = doc.substr(a + kBegin.size(), b - a - kBegin.size());
        if (current != table && std::getenv("BATCHPILOT_UPDATE_DOCS")) {
            doc.replace(a + kBegin.size(), b - a - kBegin.size(), table);
            std::ofstream(docPath()) << doc;
            qInfo("rewrote the knob table in %s", docPath().c_str());
            return;
        }
        QVERIFY2(current == table,
                 ("docs/configuration.md's knob table differs from engine/config/knob_table.cpp; regenerate "
                  "it with: BATCHPILOT_UPDATE_DOCS=1 ctest --preset default -R test_knobs\n"
                  "expected:\n" +
                  table)
                     .c_str());
    }

    void everyJsonFieldIsAKnobAndBack()
    {
        std::set<std::string> json, table;
        leafKeys(toJson(BatchingConfig{}), "", json);
        for (const Knob &k : knobs())
            table.insert(std::string(k.key));
        for (const std::string &key : json)
            QVERIFY2(table.count(key), ("JSON field without a knob: " + key).c_str());
        for (const std::string &key : table)
            QVERIFY2(json.count(key), ("knob without a JSON field: " + key).c_str());
    }

    void defaultsAreValidAndEveryBoundIsEnforced()
    {
        const BatchingConfig defaults;
        QVERIFY(validate(defaults).isOk());
        for (const Knob &k : knobs()) {
            QVERIFY(findKnob(k.key) == &k);
            if (k.type == KnobType::Policy || k.type == KnobType::Bool)
                continue;
            const std::string label = k.label();
            auto expectRejected = [&](BatchingConfig c, const char *what) {
                const Status s = validate(c);
                QVERIFY2(!s, (label + ": " + what + " was accepted").c_str());
                QVERIFY2(s.message().starts_with(label), (label + ": " + s.message()).c_str());
            };
            if (k.type == KnobType::IntList) {
                BatchingConfig c = defaults;
                k.itemsMut(c).assign(1, int(k.hi) + 1);
                expectRejected(c, "an item above the range");
                c = defaults;
                k.itemsMut(c) = {2, 2};
                expectRejected(c, "a list that is not increasing");
                c = defaults;
                k.itemsMut(c).clear();
                expectRejected(c, "an empty list");
                continue;
            }
            if (k.loKnob.empty()) {
                BatchingConfig c = defaults;
                k.set(c, k.lo);
                QVERIFY2(validate(c).isOk() == (k.loKind == BoundKind::Inclusive) || !k.hiKnob.empty(),
                         (label + " at its lower bound").c_str());
                k.set(c, k.lo - 1);
                expectRejected(c, "a value below the range");
            }
            if (k.hiKnob.empty()) {
                BatchingConfig c = defaults;
                k.set(c, k.hi + (k.type == KnobType::Double ? 0.5 : 1));
                expectRejected(c, "a value above the range");
            }
        }
    }

    void crossFieldBounds()
    {
        BatchingConfig c;
        c.slo.minBatch = 64;
        c.slo.maxBatch = 32;
        QCOMPARE(QString::fromStdString(validate(c).message()),
                 QString("slo.max_batch = 32 is outside [64, 1024]"));
        c = {};
        c.adaptiveDelay.minDelay = std::chrono::milliseconds(30);
        QCOMPARE(QString::fromStdString(validate(c).message()),
                 QString("adaptive_delay.max_delay = 20ms is outside [30ms, 10s]"));
        c = {};
        c.maxQueueDelay = std::chrono::nanoseconds(-1); // not rounded into the range
        QVERIFY(!validate(c));
    }

    void gaugeNamesKeepTheirPublishedNames()
    {
        // Dashboards (packaging/grafana-dashboard.json) and scrapes rely on these.
        QCOMPARE(knobGaugeName(*findKnob("max_batch_size")), std::string("batchpilot_config_max_batch_size"));
        QCOMPARE(knobGaugeName(*findKnob("max_queue_delay_us")),
                 std::string("batchpilot_config_max_queue_delay_seconds"));
        QCOMPARE(knobGaugeName(*findKnob("slo.p99_target_us")),
                 std::string("batchpilot_config_slo_p99_target_seconds"));
        QCOMPARE(knobGaugeName(*findKnob("adaptive_delay.enabled")),
                 std::string("batchpilot_config_adaptive_delay_enabled"));
        QCOMPARE(knobGaugeName(*findKnob("bucket_edges")), std::string("batchpilot_config_bucket_edge"));
        BatchingConfig c;
        c.maxQueueDelay = std::chrono::milliseconds(2);
        QCOMPARE(knobGaugeValue(*findKnob("max_queue_delay_us"), c), 0.002);
    }

    void changeSummariesComeFromTheTable()
    {
        BatchingConfig a, b;
        b.maxBatchSize = 32;
        b.bucketEdges = {64, 256};
        b.slo.enabled = true;
        b.adaptiveDelay.fill = 0.5;
        QCOMPARE(
            QString::fromStdString(describeChange(a, b)),
            QString(
                "max_batch_size 16→32, bucket_edges 64,128,256,512,1024→64,256, adaptive_delay.fill 1→0.5, "
                "slo off→on"));
        QVERIFY(describeChange(a, a).empty());
    }

    // The server models' knobs are rows of the same table: their keys, the
    // "server" JSON object, their ranges and their launch flags come from it.
    void serverKnobsAreRowsOfTheTable()
    {
        for (ServerKind kind : {ServerKind::Vllm, ServerKind::Tgi, ServerKind::Sglang, ServerKind::Triton}) {
            const std::string prefix = "server." + std::string(serverKindName(kind)) + ".";
            BatchingConfig c;
            c.policy = kind == ServerKind::Triton ? PolicyKind::Dynamic : PolicyKind::Continuous;
            c.server.kind = kind;
            QVERIFY2(validate(c).isOk(), validate(c).message().c_str());
            const nlohmann::json server = toJson(c)["server"];
            QCOMPARE(server.size(), serverKnobs(kind).size() + 1); // + "kind"
            for (const Knob &k : serverKnobs(kind)) {
                QVERIFY(k.key.starts_with(prefix) && k.key.substr(prefix.size()) == k.name);
                QVERIFY(findKnob(k.key) == &k && findServerKnob(kind, k.name) == &k);
                QVERIFY2(server.contains(std::string(k.name)), std::string(k.key).c_str());
                if (k.type == KnobType::Bool || k.type == KnobType::Text || k.type == KnobType::IntList)
                    continue;
                BatchingConfig bad = c;
                k.set(bad, k.lo - 1);
                const Status s = validate(bad);
                QVERIFY2(!s && s.message().starts_with(k.label()), (k.label() + ": " + s.message()).c_str());
            }
            QVERIFY(configFromJson(toJson(c)).value() == c);
        }
        BatchingConfig c;
        c.policy = PolicyKind::Continuous;
        c.server.kind = ServerKind::Sglang;
        c.server.sglang.schedulePolicy = "random";
        QCOMPARE(validate(c).message(),
                 std::string("server.sglang.schedule_policy 'random' is not modelled: fcfs or lpm"));
        c.policy = PolicyKind::Dynamic;
        c.server.kind = ServerKind::Triton;
        c.maxBatchSize = 8;
        c.server.triton.preferredBatchSize = {4, 9};
        QCOMPARE(validate(c).message(),
                 std::string("server.triton.preferred_batch_size[1] = 9 is outside [1, 8]"));
        // BatchPilot's knobs are the live ones: a patch does not take a server's.
        QVERIFY(!ConfigPatch::fields(c, {"server.vllm.max_num_seqs"}));
    }

    void serverLaunchFlagsComeFromTheTable()
    {
        BatchingConfig c;
        c.policy = PolicyKind::Continuous;
        c.server.kind = ServerKind::Vllm;
        c.server.vllm.maxNumSeqs = 64;
        c.server.vllm.chunkedPrefill = false;
        QCOMPARE(serverLaunchText(c, "m"),
                 std::string("vllm serve m \\\n  --max-num-seqs 64 \\\n  --max-num-batched-tokens 2048 \\\n"
                             "  --no-enable-chunked-prefill\n"));
        c.server.kind = ServerKind::Sglang;
        c.server.sglang.chunkedPrefillSize = 0;
        QVERIFY(serverLaunchText(c, "m").find("--chunked-prefill-size -1") != std::string::npos);
        QCOMPARE(describeConfig(c), std::string("sglang max_running_requests=256 chunked_prefill_size=0 "
                                                "max_prefill_tokens=16384 schedule_policy=fcfs "
                                                "schedule_conservativeness=1"));
    }

    // The one-line description names the knobs of the config's own policy:
    // a continuous config its scheduler's, not a dynamic batcher's.
    void describeConfigNamesThePolicysKnobs()
    {
        BatchingConfig c;
        QCOMPARE(QString::fromStdString(describeConfig(c)),
                 QString("dynamic max_batch_size=16 max_queue_delay=5ms"));
        c.policy = PolicyKind::Continuous;
        c.continuous.maxNumSeqs = 8;
        c.continuous.maxNumBatchedTokens = 256;
        c.continuous.prefillChunk = 64;
        c.continuous.kvCacheTokens = 4096;
        c.continuous.decodeFirst = false;
        c.instances = 2;
        c.adaptiveDelay.enabled = true; // not the continuous scheduler's
        QCOMPARE(QString::fromStdString(describeConfig(c)),
                 QString("continuous max_num_seqs=8 max_num_batched_tokens=256 prefill_chunk=64 "
                         "kv_cache_tokens=4096 prefill_first instances=2"));
        c.continuous.chunkedPrefill = false;
        c.continuous.kvCacheTokens = 0;
        c.continuous.decodeFirst = true;
        c.continuous.priorityOrder = true;
        c.instances = 1;
        QCOMPARE(QString::fromStdString(describeConfig(c)),
                 QString("continuous max_num_seqs=8 max_num_batched_tokens=256 no_chunked_prefill "
                         "priority_order"));
        c.policy = PolicyKind::Bucketed;
        c.bucketEdges = {64, 256};
        c.cache.enabled = true;
        QCOMPARE(QString::fromStdString(describeConfig(c)),
                 QString("bucketed max_batch_size=16 max_queue_delay=5ms bucket_edges=64,256 "
                         "adaptive_delay cache"));
    }
};

QTEST_GUILESS_MAIN(TestKnobs)
#include "test_knobs.moc"
