// The headless server's NVML gauges: with an NVML library
// (the fake one of tests/app, through BATCHPILOT_NVML_LIBRARY, reporting
// FAKE_NVML_SAMPLE) /metrics carries batchpilot_gpu_* and /v1/stats "gpu";
// without one (no library) both leave them out and everything else works.
// Also what the server says at start (the model and its notes, where the
// gauges come from) and the model's dtype and KV bytes per token in
// /v1/stats, the OIP model metadata and the session report.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QtTest>

namespace {

constexpr unsigned long long kGiB = 1ull << 30;

QProcessEnvironment withNvml(const QString &library)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("BATCHPILOT_NVML_LIBRARY", library);
    // 73% busy, 41% of the time reading or writing memory, 3 of 80 GiB used.
    env.insert("FAKE_NVML_SAMPLE", QStringLiteral("73,41,%1,%2").arg(3 * kGiB).arg(80 * kGiB));
    return env;
}

const QList<QByteArray> kGauges = {"batchpilot_gpu_utilization_ratio",
                                   "batchpilot_gpu_memory_bandwidth_utilization_ratio",
                                   "batchpilot_gpu_memory_used_bytes", "batchpilot_gpu_memory_total_bytes"};

} // namespace

class TestRestGpuGauges : public QObject {
    Q_OBJECT
private slots:
    void gaugesFromNvml()
    {
        HeadlessProcess server({"--model", "builtin:echo"}, withNvml(QStringLiteral(FAKE_NVML_PATH)));
        QVERIFY2(server.start(), qPrintable(server.output()));
        const quint16 port = server.port();

        const HttpResponse metrics = httpRequest(port, "GET", "/metrics");
        QCOMPARE(metrics.status, 200);
        const QByteArray labels = "{gpu=\"0\",name=\"Fake GPU 0\"}";
        QCOMPARE(metricValue(metrics.body, "batchpilot_gpu_utilization_ratio" + labels), 0.73);
        QCOMPARE(metricValue(metrics.body, "batchpilot_gpu_memory_bandwidth_utilization_ratio" + labels),
                 0.41);
        QCOMPARE(metricValue(metrics.body, "batchpilot_gpu_memory_used_bytes" + labels), double(3 * kGiB));
        QCOMPARE(metricValue(metrics.body, "batchpilot_gpu_memory_total_bytes" + labels), double(80 * kGiB));
        for (const QByteArray &name : kGauges)
            QVERIFY2(metrics.body.contains("# TYPE " + name + " gauge\n"), name.constData());

        const HttpResponse stats = httpRequest(port, "GET", "/v1/stats");
        QCOMPARE(stats.status, 200);
        const QJsonObject gpu = stats.json().value("gpu").toObject();
        QCOMPARE(gpu.value("index").toInt(), 0);
        QCOMPARE(gpu.value("name").toString(), QStringLiteral("Fake GPU 0"));
        QCOMPARE(gpu.value("utilization_ratio").toDouble(), 0.73);
        QCOMPARE(gpu.value("memory_bandwidth_utilization_ratio").toDouble(), 0.41);
        QCOMPARE(gpu.value("memory_used_bytes").toDouble(), double(3 * kGiB));
        QCOMPARE(gpu.value("memory_total_bytes").toDouble(), double(80 * kGiB));

        QVERIFY(server.stop(SIGTERM));
        QCOMPARE(server.exitCode(), 0);
        QVERIFY2(server.output().contains("batchpilot: GPU gauges: GPU 0 (Fake GPU 0), from NVML\n"),
                 qPrintable(server.output()));
    }

    void absentWithoutNvml()
    {
        HeadlessProcess server({"--model", "builtin:echo"},
                               withNvml(QStringLiteral("/nonexistent/libnvidia-ml.so.1")));
        QVERIFY2(server.start(), qPrintable(server.output()));
        const quint16 port = server.port();
        QCOMPARE(httpRequest(port, "POST", "/v1/infer", inferBody({1, 2, 3})).status, 200);

        const HttpResponse metrics = httpRequest(port, "GET", "/metrics");
        QCOMPARE(metrics.status, 200);
        QVERIFY(!metrics.body.contains("batchpilot_gpu_"));
        QVERIFY(metricValue(metrics.body, "batchpilot_requests_accepted_total") >= 1); // the rest is there
        const HttpResponse stats = httpRequest(port, "GET", "/v1/stats");
        QCOMPARE(stats.status, 200);
        QVERIFY(!stats.json().contains("gpu"));
        QVERIFY(stats.json().value("completed").toInt() >= 1);

        QVERIFY(server.stop(SIGTERM));
        QCOMPARE(server.exitCode(), 0);
        // Said once at start, never per request.
        const QString out = server.output();
        QCOMPARE(
            out.count("GPU gauges: none (/nonexistent/libnvidia-ml.so.1: cannot open shared object file"), 1);
        QCOMPARE(out.count("libnvidia-ml"), 1);
    }

    // The model's facts: said at start (stderr; stdout has only the
    // listening line), and in /v1/stats, the OIP metadata and the report.
    void modelFacts()
    {
        HeadlessProcess server({"--model", "builtin:echo"}, withNvml(QString())); // empty: NVML not tried
        QVERIFY2(server.start(), qPrintable(server.output()));
        const quint16 port = server.port();
        QVERIFY2(server.output().contains("batchpilot: model builtin:echo on cpu: float32\n"),
                 qPrintable(server.output()));
        QVERIFY(server.output().contains("batchpilot: GPU gauges: off (BATCHPILOT_NVML_LIBRARY is empty)\n"));

        const QJsonObject stats = httpRequest(port, "GET", "/v1/stats").json();
        QCOMPARE(stats.value("dtype").toString(), QStringLiteral("float32"));
        QCOMPARE(stats.value("kv_bytes_per_token").toInt(-1), 0); // echo keeps no KV cache
        const QJsonObject meta =
            httpRequest(port, "GET", "/v2/models/echo").json().value("parameters").toObject();
        QCOMPARE(meta.value("dtype").toString(), QStringLiteral("float32"));
        QCOMPARE(meta.value("kv_bytes_per_token").toInt(-1), 0);

        const HttpResponse report = httpRequest(port, "GET", "/v1/sessions/1/report?format=json");
        QCOMPARE(report.status, 200);
        const QJsonObject session = report.json().value("session").toObject();
        QCOMPARE(session.value("dtype").toString(), QStringLiteral("float32"));
        QCOMPARE(session.value("kv_bytes_per_token").toInt(-1), 0);
        const HttpResponse html = httpRequest(port, "GET", "/v1/sessions/1/report?format=html");
        QCOMPARE(html.status, 200);
        QVERIFY(html.body.contains("float32, no KV cache"));
        QVERIFY(server.stop(SIGTERM));
    }

    // A decoder: its KV cache per token, and the backend's notes (the KV
    // cache it sized at start) before the listening line.
    void decoderNotes()
    {
#ifndef BATCHPILOT_HAVE_TORCH
        QSKIP("built without libtorch (BATCHPILOT_TORCH=OFF)");
#endif
        HeadlessProcess server({"--model", "builtin:tiny-decoder", "--preset", "test", "--device", "cpu"},
                               withNvml(QString()));
        QVERIFY2(server.start(), qPrintable(server.output()));
        const QJsonObject stats = httpRequest(server.port(), "GET", "/v1/stats").json();
        QCOMPARE(stats.value("dtype").toString(), QStringLiteral("float32")); // auto on the CPU
        QVERIFY(stats.value("kv_bytes_per_token").toInt() > 0);
        const QString out = server.output();
        QVERIFY2(
            out.contains(QStringLiteral(
                "batchpilot: model builtin:tiny-decoder on cpu: GPT-2 (pre-LN, tied LM head), float32, ")),
            qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("bytes of KV cache per token")), qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("batchpilot: KV cache: ")), qPrintable(out));
        QVERIFY(server.stop(SIGTERM));
    }
};

QTEST_GUILESS_MAIN(TestRestGpuGauges)
#include "test_rest_gpu_gauges.moc"
