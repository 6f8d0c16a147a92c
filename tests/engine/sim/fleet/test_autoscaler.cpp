// Autoscaler policies: HPA's algorithm (tolerance,
// stabilization windows, bounds, starting replicas at zero), a plan's
// schedule asked for a cold start early, and Holt's forecast ahead of a ramp.
#include "engine/sim/fleet/autoscaler.h"
#include "engine/sim/fleet/fleet_watch.h"

#include <QtTest>

using namespace bp;

namespace {

FleetObservation at(double t, int ready, double waiting, int starting = 0)
{
    FleetObservation o;
    o.atS = t;
    o.ready = ready;
    o.starting = starting;
    o.waiting = waiting;
    return o;
}

ReactiveKnobs queueKnobs()
{
    ReactiveKnobs k;
    k.metric = ScaleMetric::QueueDepth;
    k.target = 4;
    k.bounds = {1, 10};
    return k;
}

} // namespace

class TestAutoscaler : public QObject {
    Q_OBJECT

private slots:
    void reactiveScalesByTheRatioOfValueToTarget()
    {
        ReactivePolicy p(queueKnobs());
        // 2 replicas, 20 waiting: 10 per replica against 4 -> ceil(2 x 2.5) = 5.
        const ScaleDecision d = p.decide(at(0, 2, 20));
        QCOMPARE(d.replicas, 5);
        QVERIFY2(d.why.find("2 -> 5") != std::string::npos, d.why.c_str());
    }

    void reactiveHoldsInsideTheTolerance()
    {
        ReactivePolicy p(queueKnobs());
        QCOMPARE(p.decide(at(0, 4, 17.5)).replicas, 4); // 4.375 per replica: +9%, inside 10%
        QCOMPARE(p.decide(at(15, 4, 18)).replicas, 5);  // 4.5: +12.5%, outside
    }

    void reactiveClampsToItsBounds()
    {
        ReactivePolicy p(queueKnobs());
        QCOMPARE(p.decide(at(0, 4, 400)).replicas, 10);
        ReactivePolicy q(queueKnobs());
        QCOMPARE(q.decide(at(0, 4, 16)).replicas, 4); // at the target
        // The queue empties: 1 is recommended (the minimum), but the 4 of
        // 15 s ago is inside the 300 s scale-down window.
        QCOMPARE(q.decide(at(15, 4, 0)).replicas, 4);
    }

    void scaleDownWaitsForTheHighestRecommendationOfTheWindow()
    {
        ReactiveKnobs k = queueKnobs();
        k.downWindowS = 60;
        ReactivePolicy p(k);
        QCOMPARE(p.decide(at(0, 6, 24)).replicas, 6); // at target: 6 recommended
        QCOMPARE(p.decide(at(15, 6, 0)).replicas, 6); // 1 recommended, 6 still in the window
        QCOMPARE(p.decide(at(30, 6, 8)).replicas, 6); // 2
        QCOMPARE(p.decide(at(61, 6, 8)).replicas, 2); // the 6 at t=0 left the window; highest since: 2
    }

    void aFreshPolicyDoesNotScaleDownBeforeItsWindow()
    {
        ReactivePolicy p(queueKnobs());                // down window 300 s
        QCOMPARE(p.decide(at(0, 3, 0)).replicas, 3);   // an idle fleet of 3, first seen
        QCOMPARE(p.decide(at(299, 3, 0)).replicas, 3); // the size it found is still in the window
        QCOMPARE(p.decide(at(300, 3, 0)).replicas, 1); // a whole window of "1": down
    }

    void startingReplicasCountAtZeroSoABurstScalesUpOnce()
    {
        ReactivePolicy p(queueKnobs());
        QCOMPARE(p.decide(at(0, 2, 40)).replicas, 10);
        // The 8 new replicas are still starting, the queue is as long: the
        // per-replica value over 10 replicas is 4, the target.
        QCOMPARE(p.decide(at(15, 2, 40, 8)).replicas, 10);
    }

    void scaleFromZeroOnLoad()
    {
        ReactiveKnobs k = queueKnobs();
        k.bounds = {0, 10};
        ReactivePolicy p(k);
        QCOMPARE(p.decide(at(0, 0, 0)).replicas, 0);
        FleetObservation o = at(15, 0, 0);
        o.arrivalRate = 0.5;
        QCOMPARE(p.decide(o).replicas, 1);
    }

    void kvUsageIsARatioPerReadyReplica()
    {
        ReactiveKnobs k;
        k.metric = ScaleMetric::KvUsage;
        k.target = 0.6;
        k.bounds = {1, 10};
        ReactivePolicy p(k);
        FleetObservation o = at(0, 3, 0);
        o.kvUsage = 0.9; // 0.9 / 0.6 = 1.5 -> ceil(4.5) = 5
        QCOMPARE(p.decide(o).replicas, 5);
        k.target = 1.5;
        QVERIFY(!validate(k));
    }

    void scheduledAsksForTheSlotOneLeadAhead()
    {
        ScheduledKnobs k;
        k.replicas = {1, 1, 4, 2};
        k.slotS = 3600;
        k.leadS = 300;
        QVERIFY(validate(k));
        ScheduledPolicy p(k);
        QCOMPARE(p.decide(at(3600 + 3000, 1, 0)).replicas, 1); // slot 1, 600 s before slot 2
        QCOMPARE(p.decide(at(3600 + 3400, 1, 0)).replicas, 4); // within the lead of slot 2
        QCOMPARE(p.slotReplicas(4 * 3600 + 10), 1);            // the schedule repeats
    }

    void predictiveScalesBeforeARampArrives()
    {
        PredictiveKnobs k;
        k.replicaRate = 2;
        k.horizonS = 120;
        k.periodS = 15;
        k.bounds = {1, 50};
        PredictivePolicy p(k);
        ReactivePolicy r([] {
            ReactiveKnobs rk;
            rk.metric = ScaleMetric::RequestRate;
            rk.target = 2;
            rk.bounds = {1, 50};
            return rk;
        }());
        int predicted = 0, reacted = 0;
        for (int i = 0; i < 20; ++i) { // the rate grows by 1 req/s each period
            FleetObservation o = at(i * 15.0, std::max(1, predicted), 0);
            o.arrivalRate = 2 + i;
            predicted = p.decide(o).replicas;
            o.ready = std::max(1, reacted);
            reacted = r.decide(o).replicas;
        }
        // At 21 req/s the reactive policy holds what served 20 req/s (10:
        // 21 over 20 is inside its tolerance); the forecast 120 s ahead
        // (29 req/s: Holt has caught the trend of 1 req/s per period) asks
        // for 15.
        QCOMPARE(reacted, 10);
        QCOMPARE(predicted, 15);
        QVERIFY(std::abs(p.forecast() - 29) < 2);
    }

    void aRoundOfScrapesIsOneObservation()
    {
        const auto scrape = [](std::string url, std::string text) {
            auto parsed = prom::parse(text);
            if (!parsed)
                qFatal("%s", parsed.status().message().c_str());
            return ServerScrape{std::move(url), std::move(*parsed), {}};
        };
        const auto vllm = [](int served) {
            return "vllm:num_requests_waiting{model_name=\"m\"} 3\n"
                   "vllm:num_requests_running{model_name=\"m\"} 5\n"
                   "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n"
                   "vllm:request_success_total{finished_reason=\"length\"} " +
                   std::to_string(served) + "\n";
        };
        const auto batchpilot = [](int accepted) {
            return "batchpilot_queue_depth 2\nbatchpilot_waiting_sequences 2\nbatchpilot_running_sequences "
                   "4\n"
                   "batchpilot_kv_cache_usage_ratio 0.3\nbatchpilot_requests_accepted_total " +
                   std::to_string(accepted) + "\n";
        };
        FleetObserver observer;
        FleetObservation o = observer.observe(100, {scrape("a", vllm(100)), scrape("b", batchpilot(50))});
        QCOMPARE(o.ready, 2);
        QCOMPARE(o.waiting, 5.0);
        QCOMPARE(o.running, 9.0);
        QVERIFY(std::abs(o.kvUsage - 0.4) < 1e-9);
        QCOMPARE(o.arrivalRate, 0.0); // no counter to difference yet
        // 10 s later: 30 and 10 more requests; a third server does not answer.
        o = observer.observe(110, {scrape("a", vllm(130)), scrape("b", batchpilot(60)),
                                   ServerScrape{"c", std::nullopt, "connection refused"}});
        QCOMPARE(o.ready, 2);
        QVERIFY(std::abs(o.arrivalRate - 4.0) < 1e-9);
        QCOMPARE(observer.readings().size(), std::size_t(3));
        QCOMPARE(observer.readings()[0].server, std::string("vllm"));
        QCOMPARE(observer.readings()[2].error, std::string("connection refused"));
        // A restarted server (its counter went down) starts its rate over.
        o = observer.observe(120, {scrape("a", vllm(5)), scrape("b", batchpilot(70))});
        QVERIFY(std::abs(o.arrivalRate - 1.0) < 1e-9);
    }

    void badKnobsAreRefusedWithAReason()
    {
        ReactiveKnobs k = queueKnobs();
        k.target = 0;
        QVERIFY(std::string(validate(k).message()).find("target") != std::string::npos);
        k = queueKnobs();
        k.bounds = {5, 2};
        QVERIFY(!validate(k));
        PredictiveKnobs pk;
        pk.alpha = 0;
        QVERIFY(!validate(pk));
        ScheduledKnobs sk;
        QVERIFY(!validate(sk));
        QVERIFY(!parseScaleMetric("cpu"));
        QCOMPARE(parseScaleMetric("kv").value(), ScaleMetric::KvUsage);
    }
};

QTEST_GUILESS_MAIN(TestAutoscaler)
#include "test_autoscaler.moc"
