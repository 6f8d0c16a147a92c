// The policies as pure functions: queue views, config and `now` in, decision out.
#include "engine/sched/policy.h"

#include <QtTest>

using namespace bp;
using namespace std::chrono_literals;

Q_DECLARE_METATYPE(bp::PolicyKind)

namespace {
const TimePoint t0 = TimePoint(1000s);

QueueView qv(std::size_t size, TimePoint oldest)
{
    QueueView v;
    v.size = size;
    v.oldestArrival = oldest;
    return v;
}

BatchingConfig cfg(PolicyKind p)
{
    BatchingConfig c;
    c.policy = p;
    c.maxBatchSize = 4;
    c.maxQueueDelay = 10ms;
    c.staticBatchSize = 3;
    return c;
}
} // namespace

class TestPolicy : public QObject {
    Q_OBJECT
private slots:
    void emptyQueuesNeverDispatch_data()
    {
        QTest::addColumn<PolicyKind>("policy");
        QTest::newRow("none") << PolicyKind::None;
        QTest::newRow("static") << PolicyKind::Static;
        QTest::newRow("dynamic") << PolicyKind::Dynamic;
        QTest::newRow("bucketed") << PolicyKind::Bucketed;
    }
    void emptyQueuesNeverDispatch()
    {
        QFETCH(PolicyKind, policy);
        std::vector<QueueView> q(3);
        Decision d = decide(q, cfg(policy), t0, false);
        QVERIFY(!d.dispatch);
        QVERIFY(!d.wakeAt);
        QVERIFY(!decide(q, cfg(policy), t0, true).dispatch);
    }

    void noneTakesOneFromOldestQueue()
    {
        std::vector<QueueView> q{qv(5, t0 + 2ms), qv(1, t0)};
        Decision d = decide(q, cfg(PolicyKind::None), t0 + 3ms, false);
        QVERIFY(d.dispatch);
        QCOMPARE(d.dispatch->queue, 1);
        QCOMPARE(d.dispatch->count, 1);
        QCOMPARE(d.dispatch->reason, DispatchReason::Single);
    }

    void staticWaitsForFullBatch()
    {
        const BatchingConfig c = cfg(PolicyKind::Static);
        std::vector<QueueView> q{qv(2, t0)};
        // however long it waits, 2 of 3 never leaves
        Decision d = decide(q, c, t0 + 1h, false);
        QVERIFY(!d.dispatch);
        QVERIFY(!d.wakeAt);
        q[0].size = 3;
        d = decide(q, c, t0, false);
        QVERIFY(d.dispatch);
        QCOMPARE(d.dispatch->count, 3);
        QCOMPARE(d.dispatch->reason, DispatchReason::StaticFull);
        q[0].size = 7; // takes exactly N
        QCOMPARE(decide(q, c, t0, false).dispatch->count, 3);
    }

    void staticDrainFlushIsASetting()
    {
        BatchingConfig c = cfg(PolicyKind::Static);
        std::vector<QueueView> q{qv(2, t0)};
        Decision d = decide(q, c, t0, true);
        QVERIFY(d.dispatch);
        QCOMPARE(d.dispatch->count, 2);
        QCOMPARE(d.dispatch->reason, DispatchReason::Drain);
        c.staticFlushOnDrain = false;
        QVERIFY(!decide(q, c, t0, true).dispatch);
    }

    void dynamicFlushesAtMaxSize()
    {
        std::vector<QueueView> q{qv(4, t0)};
        Decision d = decide(q, cfg(PolicyKind::Dynamic), t0, false);
        QVERIFY(d.dispatch);
        QCOMPARE(d.dispatch->count, 4);
        QCOMPARE(d.dispatch->reason, DispatchReason::Full);
        q[0].size = 9;
        QCOMPARE(decide(q, cfg(PolicyKind::Dynamic), t0, false).dispatch->count, 4);
    }

    void dynamicFlushesAtDelay()
    {
        const BatchingConfig c = cfg(PolicyKind::Dynamic);
        std::vector<QueueView> q{qv(2, t0)};
        Decision d = decide(q, c, t0 + 9ms, false);
        QVERIFY(!d.dispatch);
        QVERIFY(d.wakeAt);
        QCOMPARE(*d.wakeAt, t0 + 10ms);
        d = decide(q, c, t0 + 10ms, false);
        QVERIFY(d.dispatch);
        QCOMPARE(d.dispatch->count, 2);
        QCOMPARE(d.dispatch->reason, DispatchReason::DelayExpired);
        QCOMPARE(*d.dispatch->intendedAt, t0 + 10ms);
    }

    void dynamicZeroDelayDispatchesAtOnce()
    {
        BatchingConfig c = cfg(PolicyKind::Dynamic);
        c.maxQueueDelay = 0ms;
        std::vector<QueueView> q{qv(1, t0)};
        QVERIFY(decide(q, c, t0, false).dispatch);
    }

    void dynamicDrainFlushesPartial()
    {
        std::vector<QueueView> q{qv(2, t0)};
        Decision d = decide(q, cfg(PolicyKind::Dynamic), t0, true);
        QVERIFY(d.dispatch);
        QCOMPARE(d.dispatch->reason, DispatchReason::Drain);
    }

    void bucketedPicksMostOverdue()
    {
        const BatchingConfig c = cfg(PolicyKind::Bucketed);
        // bucket 0 full but young; bucket 2 expired long ago
        std::vector<QueueView> q{qv(4, t0 + 20ms), qv(1, t0 + 15ms), qv(2, t0)};
        Decision d = decide(q, c, t0 + 21ms, false);
        QVERIFY(d.dispatch);
        QCOMPARE(d.dispatch->queue, 2);
        QCOMPARE(d.dispatch->reason, DispatchReason::DelayExpired);
        // once bucket 2 is gone the full bucket goes next
        q[2].size = 0;
        d = decide(q, c, t0 + 21ms, false);
        QCOMPARE(d.dispatch->queue, 0);
        QCOMPARE(d.dispatch->reason, DispatchReason::Full);
    }

    void bucketedWakesAtEarliestDue()
    {
        const BatchingConfig c = cfg(PolicyKind::Bucketed);
        std::vector<QueueView> q{qv(1, t0 + 5ms), qv(0, TimePoint{}), qv(1, t0 + 2ms)};
        Decision d = decide(q, c, t0 + 3ms, false);
        QVERIFY(!d.dispatch);
        QCOMPARE(*d.wakeAt, t0 + 12ms);
    }
};

QTEST_APPLESS_MAIN(TestPolicy)
#include "test_policy.moc"
