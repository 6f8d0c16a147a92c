// The Prometheus text reader and the mapping of each server's metric names
// to one set of series (engine/telemetry/prometheus_text.h, target_metrics.h).
// The expositions below are written from the servers' documented metric
// names (vLLM "Production Metrics", Triton "Metrics" + the TensorRT-LLM
// backend's custom metrics, TGI "Metrics" reference, SGLang "Production
// Metrics"); BatchPilot's own /metrics is checked against the real server
// in tests/integration/test_remote_replay.cpp.
#include "engine/telemetry/prometheus_text.h"
#include "engine/telemetry/target_metrics.h"

#include <QTest>

#include <cmath>

using namespace bp;

namespace {

// Two scrapes of a vLLM server with two engines behind one endpoint.
const char *kVllm1 = R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
vllm:num_requests_waiting{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.25
# HELP vllm:iteration_tokens_total Histogram of number of tokens per engine_step.
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
vllm:iteration_tokens_total_bucket{le="512.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 9.0
vllm:iteration_tokens_total_bucket{le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:iteration_tokens_total_sum{model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000.0
vllm:iteration_tokens_total_count{model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.128902e+06
)";
const char *kVllm2Tail = R"(# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_sum{model_name="m"} 1900.0
vllm:iteration_tokens_total_count{model_name="m"} 16.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 7
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.9
)";

const char *kTriton1 =
    R"(# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="ensemble",version="1"} 100
# HELP nv_inference_count Number of inferences performed (does not include cached requests)
# TYPE nv_inference_count counter
nv_inference_count{model="tensorrt_llm",version="1"} 400
# HELP nv_inference_exec_count Number of model executions performed (does not include cached requests)
# TYPE nv_inference_exec_count counter
nv_inference_exec_count{model="tensorrt_llm",version="1"} 50
# HELP nv_inference_pending_request_count Instantaneous number of pending requests awaiting execution per-model.
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 7
nv_inference_pending_request_count{model="ensemble",version="1"} 1
# HELP nv_trt_llm_request_metrics TRT LLM request metrics
# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="scheduled",version="1"} 5
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="waiting",version="1"} 2
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="max",version="1"} 64
# HELP nv_trt_llm_kv_cache_block_metrics TRT LLM KV cache block metrics
# TYPE nv_trt_llm_kv_cache_block_metrics gauge
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used",model="tensorrt_llm",version="1"} 30
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="tensorrt_llm",version="1"} 120
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="tokens_per",model="tensorrt_llm",version="1"} 64
)";
const char *kTriton2 = R"(# TYPE nv_inference_count counter
nv_inference_count{model="tensorrt_llm",version="1"} 700
# TYPE nv_inference_exec_count counter
nv_inference_exec_count{model="tensorrt_llm",version="1"} 80
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 0
)";

const char *kTgi = R"(# TYPE tgi_batch_current_max_tokens gauge
tgi_batch_current_max_tokens 4096
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 8
# TYPE tgi_queue_size gauge
tgi_queue_size 2
# TYPE tgi_request_count counter
tgi_request_count 1234
# TYPE tgi_batch_next_size histogram
tgi_batch_next_size_bucket{le="1"} 3
tgi_batch_next_size_bucket{le="+Inf"} 9
tgi_batch_next_size_sum 40
tgi_batch_next_size_count 9
)";

const char *kSglang = R"(# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
# HELP sglang:token_usage The token usage
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28
# HELP sglang:cache_hit_rate The cache hit rate
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.007507552643049313
)";

// BatchPilot's own /metrics under policy continuous (the generation
// gauges and step counters of the shared contract), two
// scrapes; then the same names under a request-level policy.
const char *kBatchpilot1 = R"(# TYPE batchpilot_queue_depth gauge
batchpilot_queue_depth 5
# TYPE batchpilot_batch_size histogram
batchpilot_batch_size_bucket{le="1"} 2
batchpilot_batch_size_bucket{le="+Inf"} 10
batchpilot_batch_size_sum 60
batchpilot_batch_size_count 10
# TYPE batchpilot_config_policy gauge
batchpilot_config_policy{policy="dynamic"} 0
batchpilot_config_policy{policy="continuous"} 1
# TYPE batchpilot_running_sequences gauge
batchpilot_running_sequences 12
# TYPE batchpilot_waiting_sequences gauge
batchpilot_waiting_sequences 5
# TYPE batchpilot_kv_cache_usage_ratio gauge
batchpilot_kv_cache_usage_ratio 0.75
# TYPE batchpilot_kv_cache_tokens gauge
batchpilot_kv_cache_tokens 3072
# TYPE batchpilot_tokens_per_step gauge
batchpilot_tokens_per_step 40
# TYPE batchpilot_steps_total counter
batchpilot_steps_total 100
# TYPE batchpilot_step_tokens_total counter
batchpilot_step_tokens_total 2000
)";
const char *kBatchpilot2 = R"(# TYPE batchpilot_queue_depth gauge
batchpilot_queue_depth 0
# TYPE batchpilot_batch_size histogram
batchpilot_batch_size_sum 100
batchpilot_batch_size_count 15
# TYPE batchpilot_config_policy gauge
batchpilot_config_policy{policy="dynamic"} 0
batchpilot_config_policy{policy="continuous"} 1
# TYPE batchpilot_running_sequences gauge
batchpilot_running_sequences 3
# TYPE batchpilot_waiting_sequences gauge
batchpilot_waiting_sequences 0
# TYPE batchpilot_kv_cache_usage_ratio gauge
batchpilot_kv_cache_usage_ratio 0
# TYPE batchpilot_kv_cache_tokens gauge
batchpilot_kv_cache_tokens 900
# TYPE batchpilot_tokens_per_step gauge
batchpilot_tokens_per_step 35
# TYPE batchpilot_steps_total counter
batchpilot_steps_total 140
# TYPE batchpilot_step_tokens_total counter
batchpilot_step_tokens_total 3200
)";
const char *kBatchpilotDynamic = R"(# TYPE batchpilot_queue_depth gauge
batchpilot_queue_depth 7
# TYPE batchpilot_config_policy gauge
batchpilot_config_policy{policy="dynamic"} 1
batchpilot_config_policy{policy="continuous"} 0
# TYPE batchpilot_running_sequences gauge
batchpilot_running_sequences 0
# TYPE batchpilot_waiting_sequences gauge
batchpilot_waiting_sequences 0
# TYPE batchpilot_kv_cache_usage_ratio gauge
batchpilot_kv_cache_usage_ratio 0
# TYPE batchpilot_tokens_per_step gauge
batchpilot_tokens_per_step 0
)";

prom::Exposition parsed(const char *text)
{
    auto e = prom::parse(text);
    if (!e)
        qFatal("parse failed: %s", e.status().message().c_str());
    return *e;
}

} // namespace

class TestPrometheusText : public QObject {
    Q_OBJECT

private slots:
    void readsSamplesLabelsTypesAndHelp()
    {
        auto e = prom::parse("# HELP a_total Requests \\\\ with \\n escapes.\n"
                             "# TYPE a_total counter\n"
                             "a_total{path=\"/v1/\\\"x\\\"\",code=\"200\",} 1.5e3 1700000000000\n"
                             "\n"
                             "# a plain comment\n"
                             "b   -Inf\n"
                             "c{} NaN\r\n"
                             "d +Inf\n");
        QVERIFY2(e, e.status().message().c_str());
        QCOMPARE(e->samples.size(), std::size_t(4));
        const prom::Sample &a = e->samples[0];
        QCOMPARE(a.name, std::string("a_total"));
        QCOMPARE(a.labels.at("path"), std::string("/v1/\"x\""));
        QCOMPARE(a.labels.at("code"), std::string("200"));
        QCOMPARE(a.value, 1500.0);
        QCOMPARE(*a.timestampMs, std::int64_t(1700000000000));
        QCOMPARE(e->types.at("a_total"), prom::MetricType::Counter);
        QCOMPARE(e->help.at("a_total"), std::string("Requests \\ with \n escapes."));
        QVERIFY(std::isinf(e->samples[1].value) && e->samples[1].value < 0);
        QVERIFY(std::isnan(e->samples[2].value));
        QVERIFY(std::isinf(e->samples[3].value) && e->samples[3].value > 0);
        QCOMPARE(*e->sum("a_total", {{"code", "200"}}), 1500.0);
        QVERIFY(!e->sum("a_total", {{"code", "500"}}));
        QVERIFY(!e->sum("nothing"));
    }

    void rejectsMalformedLines_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("error");
        QTest::newRow("no value") << QByteArray("ok 1\nbad\n") << "line 2: sample 'bad' has no value";
        QTest::newRow("not a number") << QByteArray("x one\n") << "line 1: 'one' is not a number";
        QTest::newRow("bad name") << QByteArray("9x 1\n") << "line 1: expected a metric name";
        QTest::newRow("unterminated label")
            << QByteArray("x{a=\"1} 2\n") << "unterminated value of label 'a'";
        QTest::newRow("unquoted label")
            << QByteArray("x{a=1} 2\n") << "expected '\"' to open the value of label 'a'";
        QTest::newRow("duplicate label") << QByteArray("x{a=\"1\",a=\"2\"} 2\n") << "label 'a' given twice";
        QTest::newRow("bad escape") << QByteArray("x{a=\"\\t\"} 2\n") << "unknown escape";
        QTest::newRow("missing comma")
            << QByteArray("x{a=\"1\" b=\"2\"} 2\n") << "expected ',' or '}' after label 'a'";
        QTest::newRow("bad timestamp") << QByteArray("x 1 soon\n") << "'soon' is not a timestamp";
        QTest::newRow("trailing text") << QByteArray("x 1 2 3\n") << "unexpected text after the timestamp";
        QTest::newRow("unknown type") << QByteArray("# TYPE x meter\nx 1\n") << "unknown metric type 'meter'";
        QTest::newRow("second type") << QByteArray("# TYPE x gauge\n# TYPE x gauge\n")
                                     << "line 2: second TYPE line";
        QTest::newRow("type after samples")
            << QByteArray("x 1\n# TYPE x gauge\n") << "line 2: TYPE line for 'x' after its samples";
        QTest::newRow("bad char in name") << QByteArray("x-y 1\n") << "bad character after metric name 'x'";
    }

    void rejectsMalformedLines()
    {
        QFETCH(QByteArray, text);
        QFETCH(QString, error);
        auto e = prom::parse(std::string_view(text.constData(), std::size_t(text.size())));
        QVERIFY(!e);
        QCOMPARE(e.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(QString::fromStdString(e.status().message()).contains(error), e.status().message().c_str());
    }

    void detectsEachServer()
    {
        QCOMPARE(detectServer(parsed(kVllm1)), std::string("vllm"));
        QCOMPARE(detectServer(parsed(kTriton1)), std::string("triton"));
        QCOMPARE(detectServer(parsed(kTgi)), std::string("tgi"));
        QCOMPARE(detectServer(parsed(kSglang)), std::string("sglang"));
        QCOMPARE(detectServer(parsed("batchpilot_queue_depth 3\n")), std::string("batchpilot"));
        QCOMPARE(detectServer(parsed("process_cpu_seconds_total 3\n")), std::string());
    }

    void mapsVllm()
    {
        TargetMetricsMapper m;
        const TargetSample a = m.map(parsed(kVllm1), std::chrono::seconds(1));
        QCOMPARE(a.server, std::string("vllm"));
        QCOMPARE(*a.running, 16.0); // two engines summed
        QCOMPARE(*a.waiting, 3.0);
        QCOMPARE(*a.queue, 3.0);
        QCOMPARE(*a.batchSize, 16.0);
        QCOMPARE(*a.kvUsage, 0.375); // averaged
        QVERIFY(!a.tokensPerStep);   // a rate needs two scrapes
        QCOMPARE(a.at, Duration(std::chrono::seconds(1)));
        const TargetSample b = m.map(parsed(kVllm2Tail), std::chrono::seconds(2));
        QCOMPARE(*b.tokensPerStep, 150.0); // (1900 - 1000) / (16 - 10)
        QCOMPARE(*b.kvUsage, 0.9);         // the older gauge name
        QVERIFY(!b.waiting);               // not exposed in this scrape
    }

    void mapsTriton()
    {
        TargetMetricsMapper m;
        const TargetSample a = m.map(parsed(kTriton1), {});
        QCOMPARE(a.server, std::string("triton"));
        QCOMPARE(*a.queue, 8.0);
        QCOMPARE(*a.running, 5.0);
        QCOMPARE(*a.waiting, 2.0);
        QCOMPARE(*a.kvUsage, 0.25); // used / max blocks
        QVERIFY(!a.batchSize);
        const TargetSample b = m.map(parsed(kTriton2), {});
        QCOMPARE(*b.batchSize, 10.0); // (700 - 400) inferences / (80 - 50) executions
        QCOMPARE(*b.queue, 0.0);
        QCOMPARE(*b.waiting, 0.0); // no TensorRT-LLM metrics: the pending count
        // No execution in between: no batch size (not a zero).
        QVERIFY(!m.map(parsed(kTriton2), {}).batchSize);
        // A restarted server (counters went down) starts over.
        QVERIFY(!m.map(parsed(kTriton1), {}).batchSize);
    }

    void mapsTgiAndSglang()
    {
        TargetMetricsMapper m;
        const TargetSample t = m.map(parsed(kTgi), {});
        QCOMPARE(t.server, std::string("tgi"));
        QCOMPARE(*t.batchSize, 8.0);
        QCOMPARE(*t.running, 8.0);
        QCOMPARE(*t.queue, 2.0);
        QCOMPARE(*t.waiting, 2.0);
        QVERIFY(!t.kvUsage);
        QVERIFY(!t.tokensPerStep);
        const TargetSample s = m.map(parsed(kSglang), {});
        QCOMPARE(s.server, std::string("sglang"));
        QCOMPARE(*s.running, 8.0);
        QCOMPARE(*s.batchSize, 8.0);
        QCOMPARE(*s.queue, 4.0);
        QCOMPARE(*s.kvUsage, 0.28);
        QCOMPARE(*s.prefixCacheHitRate, 0.007507552643049313); // sglang:cache_hit_rate
    }

    // The server's prefix-cache hit rate. vLLM V1 exports token
    // counters (prometheus_client adds `_total` on the wire): the rate
    // between two scrapes; V0 a gauge.
    void mapsPrefixCacheHitRates()
    {
        TargetMetricsMapper m;
        const char *first = "# TYPE vllm:prefix_cache_queries counter\n"
                            "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1000\n"
                            "# TYPE vllm:prefix_cache_hits counter\n"
                            "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 100\n";
        const char *second = "# TYPE vllm:prefix_cache_queries counter\n"
                             "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 3000\n"
                             "# TYPE vllm:prefix_cache_hits counter\n"
                             "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 1300\n";
        QVERIFY(!m.map(parsed(first), {}).prefixCacheHitRate);        // a rate needs two scrapes
        QCOMPARE(*m.map(parsed(second), {}).prefixCacheHitRate, 0.6); // 1200 hits / 2000 queried tokens
        TargetMetricsMapper v0;
        const TargetSample old = v0.map(
            parsed("# TYPE vllm:gpu_prefix_cache_hit_rate gauge\nvllm:gpu_prefix_cache_hit_rate 0.42\n"), {});
        QCOMPARE(*old.prefixCacheHitRate, 0.42);
        QVERIFY(!m.map(parsed(kVllm1), {}).prefixCacheHitRate); // not exported
    }

    void mapsBatchPilotsGenerationSeries()
    {
        TargetMetricsMapper m;
        const TargetSample a = m.map(parsed(kBatchpilot1), std::chrono::seconds(1));
        QCOMPARE(a.server, std::string("batchpilot"));
        QCOMPARE(*a.queue, 5.0);
        QCOMPARE(*a.running, 12.0);
        QCOMPARE(*a.waiting, 5.0);
        QCOMPARE(*a.kvUsage, 0.75);
        QVERIFY(!a.batchSize);     // Δ series: a second scrape is needed
        QVERIFY(!a.tokensPerStep); // the counters are there: not the window gauge
        const TargetSample b = m.map(parsed(kBatchpilot2), std::chrono::seconds(2));
        QCOMPARE(*b.batchSize, 8.0);      // (100 - 60) / (15 - 10)
        QCOMPARE(*b.tokensPerStep, 30.0); // (3200 - 2000) / (140 - 100)
        QCOMPARE(*b.running, 3.0);
        QCOMPARE(*b.waiting, 0.0);
        QVERIFY(!b.kvUsage); // ratio 0 with tokens held: no capacity set, no ratio
        // No step in between: no tokens per step (not a zero).
        QVERIFY(!m.map(parsed(kBatchpilot2), {}).tokensPerStep);

        // The window gauge stands in where the counters are not exported.
        TargetMetricsMapper gaugeOnly;
        const TargetSample g = gaugeOnly.map(parsed("batchpilot_config_policy{policy=\"continuous\"} 1\n"
                                                    "batchpilot_running_sequences 2\n"
                                                    "batchpilot_kv_cache_usage_ratio 0\n"
                                                    "batchpilot_kv_cache_tokens 0\n"
                                                    "batchpilot_tokens_per_step 17.5\n"),
                                             {});
        QCOMPARE(*g.tokensPerStep, 17.5);
        QCOMPARE(*g.kvUsage, 0.0); // an empty cache under a capacity
        QCOMPARE(*g.running, 2.0);

        // A request-level policy exports the generation gauges as zeros:
        // they are not running sequences, and waiting is the queue.
        TargetMetricsMapper d;
        const TargetSample r = d.map(parsed(kBatchpilotDynamic), {});
        QVERIFY(!r.running && !r.kvUsage && !r.tokensPerStep);
        QCOMPARE(*r.queue, 7.0);
        QCOMPARE(*r.waiting, 7.0);
    }

    void unknownServerMapsToNothing()
    {
        TargetMetricsMapper m;
        const TargetSample t = m.map(parsed("# TYPE up gauge\nup 1\n"), {});
        QCOMPARE(t.server, std::string());
        QVERIFY(!t.batchSize && !t.queue && !t.running && !t.waiting && !t.kvUsage && !t.tokensPerStep);
    }
};

QTEST_GUILESS_MAIN(TestPrometheusText)
#include "test_prometheus_text.moc"
