// Autoscaler manifests: a plan's schedule and each policy
// as KEDA and HPA YAML. The documents themselves are validated against the
// vendored schemas by tests/k8s/validate_manifests.py; this checks what the
// schemas cannot: the cron expressions, the queries, the thresholds.
#include "engine/sim/fleet/autoscale_export.h"
#include "engine/sim/fleet/fleet_export.h"

#include <QtTest>

#include <nlohmann/json.hpp>

using namespace bp;

namespace {

bool has(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

std::size_t count(const std::string &text, const std::string &part)
{
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++n;
    return n;
}

} // namespace

class TestAutoscaleExport : public QObject {
    Q_OBJECT

private slots:
    // plan --export keda: the hour-of-day schedule as one cron trigger per
    // run of equal hours, each asked a cold start (3 min) early.
    void plansScheduleAsCronTriggers()
    {
        std::vector<int> daily(24, 1);
        for (int h = 6; h < 18; ++h)
            daily[std::size_t(h)] = 3;
        for (int h = 18; h < 24; ++h)
            daily[std::size_t(h)] = 2;
        const nlohmann::json plan = {{"slo", "p99 <= 2 s"}, {"peak_replicas", 3}, {"daily_schedule", daily}};
        auto yaml = exportFleetPlan(plan, "keda");
        QVERIFY2(yaml, yaml ? "" : yaml.status().message().c_str());
        QVERIFY(has(*yaml, "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\n"));
        QVERIFY(has(*yaml, "batchpilot plan (SLO p99 <= 2 s)"));
        QCOMPARE(count(*yaml, "- type: cron\n"), std::size_t(3));
        QVERIFY(has(*yaml,
                    "start: \"57 23 * * *\"\n        end: \"57 5 * * *\"\n        desiredReplicas: \"1\""));
        QVERIFY(has(*yaml,
                    "start: \"57 5 * * *\"\n        end: \"57 17 * * *\"\n        desiredReplicas: \"3\""));
        QVERIFY(has(*yaml,
                    "start: \"57 17 * * *\"\n        end: \"57 23 * * *\"\n        desiredReplicas: \"2\""));
        QVERIFY(has(*yaml, "timezone: UTC\n"));
        QVERIFY(has(*yaml, "minReplicaCount: 1\n"));
        QVERIFY(has(*yaml, "maxReplicaCount: 3\n"));
        QVERIFY(isFleetExportFormat("keda"));
        QVERIFY(!isFleetExportFormat("helm"));

        // A plan whose windows give no daily schedule has nothing to say as cron.
        auto none = exportFleetPlan(nlohmann::json{{"peak_replicas", 2}}, "keda");
        QVERIFY(!none);
        QVERIFY(has(none.status().message(), "no hour-of-day schedule"));
    }

    void cronRunsCoverTheDay()
    {
        ScheduledKnobs k;
        k.replicas = {2, 2, 0, 4}; // 6 h slots
        k.slotS = 6 * 3600;
        k.leadS = 0;
        k.bounds = {0, 100};
        auto runs = cronRuns(k);
        QVERIFY(runs);
        // 00:00-12:00 two, 12:00-18:00 none (no trigger: minReplicaCount), 18:00-24:00 four.
        QCOMPARE(runs->size(), std::size_t(2));
        QCOMPARE((*runs)[0].startMinute, 0);
        QCOMPARE((*runs)[0].endMinute, 720);
        QCOMPARE((*runs)[0].replicas, 2);
        QCOMPARE((*runs)[1].startMinute, 1080);
        QCOMPARE((*runs)[1].endMinute, 0);
        QCOMPARE(cronAt(1080), std::string("0 18 * * *"));
        QCOMPARE(cronAt(-3), std::string("57 23 * * *"));

        // A lead of 90 s asks two whole minutes early; a cycle shorter than a
        // day repeats (4 slots of 15 min, 24 times a day).
        k.replicas = {1, 2, 2, 1};
        k.slotS = 900;
        k.leadS = 90;
        runs = cronRuns(k);
        QVERIFY(runs);
        QCOMPARE(runs->size(), std::size_t(49)); // 24 runs of 2; the 1s join across cycles: 25
        QCOMPARE((*runs)[0].startMinute, 1438);
        QCOMPARE((*runs)[0].endMinute, 13);

        // The same count all day: two halves (a trigger's start and end must differ).
        k.replicas = {3};
        k.slotS = 3600;
        runs = cronRuns(k);
        QVERIFY(runs);
        QCOMPARE(runs->size(), std::size_t(2));

        // Slots that do not divide a day, or are not whole minutes: a clear error.
        k.replicas = {1, 2};
        k.slotS = 7 * 60;
        QVERIFY(!cronRuns(k));
        QVERIFY(has(cronRuns(k).status().message(), "does not divide a day"));
        k.slotS = 90.5;
        QVERIFY(!cronRuns(k));
        // Nothing asked at any time: no trigger to write.
        k.replicas = {0};
        k.slotS = 3600;
        QVERIFY(!cronRuns(k));
    }

    void reactiveAsKedaAndHpa()
    {
        ReactiveKnobs k;
        k.metric = ScaleMetric::QueueDepth;
        k.target = 4;
        k.downWindowS = 600;
        ManifestTarget t;
        auto keda = exportAutoscaler(k, "keda", t);
        QVERIFY(keda);
        QVERIFY(has(*keda,
                    "query: 'sum(vllm:num_requests_waiting{namespace=\"default\",pod=~\"vllm-[a-z0-9]+-"
                    "[a-z0-9]+\"})'"));
        QVERIFY(has(*keda, "metricType: AverageValue\n"));
        QVERIFY(has(*keda, "threshold: \"4\"\n"));
        QVERIFY(has(*keda, "serverAddress: http://prometheus.monitoring:9090\n"));
        QVERIFY(has(*keda, "pollingInterval: 15\n"));
        QVERIFY(has(*keda, "scaleDown:\n          stabilizationWindowSeconds: 600\n"));
        QVERIFY(!has(*keda, "The policy's tolerance"));

        // KV usage is a mean: compared as it is (Value); another tolerance is a comment.
        k.metric = ScaleMetric::KvUsage;
        k.target = 0.7;
        k.tolerance = 0.2;
        keda = exportAutoscaler(k, "keda", t);
        QVERIFY(keda);
        QVERIFY(has(*keda, "avg(vllm:kv_cache_usage_perc{"));
        QVERIFY(has(*keda, "metricType: Value\n"));
        QVERIFY(has(*keda, "threshold: \"0.7\"\n"));
        QVERIFY(has(*keda, "# The policy's tolerance 0.2"));
        auto hpa = exportAutoscaler(k, "hpa", t);
        QVERIFY(hpa);
        QVERIFY(has(*hpa, "name: vllm:kv_cache_usage_perc\n"));
        QVERIFY(has(*hpa, "averageValue: \"700m\"\n"));
        QVERIFY(has(*hpa, "prometheus-adapter"));

        // The rate: a counter's rate, named without _total by the adapter.
        k.metric = ScaleMetric::RequestRate;
        k.target = 2;
        t.server = "sglang";
        keda = exportAutoscaler(k, "keda", t);
        QVERIFY(keda);
        QVERIFY(has(*keda, "sum(rate(sglang:num_requests_total{"));
        hpa = exportAutoscaler(k, "hpa", t);
        QVERIFY(hpa);
        QVERIFY(has(*hpa, "name: sglang:num_requests\n"));

        t.server = "tgi";
        k.metric = ScaleMetric::KvUsage;
        QVERIFY(!exportAutoscaler(k, "keda", t));
        t.server = "triton";
        QVERIFY(!exportAutoscaler(k, "keda", t));
        t = ManifestTarget{};
        t.deployment = "Bad Name";
        QVERIFY(!exportAutoscaler(ReactiveKnobs{}, "hpa", t));
        QVERIFY(!exportAutoscaler(ReactiveKnobs{}, "helm", ManifestTarget{}));
    }

    void scheduledAndPredictive()
    {
        ScheduledKnobs s;
        s.replicas = {1, 2};
        s.slotS = 43200;
        QVERIFY(!exportAutoscaler(s, "hpa", ManifestTarget{})); // HPA has no schedule
        ManifestTarget t;
        t.timezone = "Europe/Paris";
        auto keda = exportAutoscaler(s, "keda", t);
        QVERIFY(keda);
        QVERIFY(has(*keda, "timezone: Europe/Paris\n"));
        QVERIFY(
            has(*keda, "start: \"0 12 * * *\"\n        end: \"0 0 * * *\"\n        desiredReplicas: \"2\""));

        PredictiveKnobs p;
        p.replicaRate = 1.5;
        p.headroom = 1.25;
        auto rate = exportAutoscaler(p, "keda", ManifestTarget{});
        QVERIFY(rate);
        QVERIFY(has(*rate, "not expressible"));
        QVERIFY(has(*rate, "sum(rate(vllm:request_success_total{"));
        QVERIFY(has(*rate, "threshold: \"1.2\"\n"));
        auto hpa = exportAutoscaler(p, "hpa", ManifestTarget{});
        QVERIFY(hpa);
        QVERIFY(has(*hpa, "averageValue: \"1200m\"\n"));
    }
};

QTEST_GUILESS_MAIN(TestAutoscaleExport)
#include "test_autoscale_export.moc"
