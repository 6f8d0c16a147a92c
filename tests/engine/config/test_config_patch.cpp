// Config changes as field-level patches: a writer changes the
// fields it names, applied to the config in force under the engine lock, and
// never reverts a field it did not touch; every writer, controllers
// included, goes through validate().
#include "engine/config/config_json.h"
#include "engine/config/config_patch.h"
#include "engine/exec/engine.h"

#include <QtTest>

#include <thread>

using namespace bp;
using namespace std::chrono_literals;

namespace {

// Every field different from the defaults.
BatchingConfig everyFieldChanged()
{
    BatchingConfig c;
    c.policy = PolicyKind::Bucketed;
    c.maxBatchSize = 3;
    c.maxQueueDelay = 7ms;
    c.staticBatchSize = 5;
    c.staticPaddedLength = 99;
    c.staticFlushOnDrain = false;
    c.bucketEdges = {10, 20};
    c.queueCapacity = 77;
    c.instances = 2;
    c.memoryBatchLimit = 9;
    c.priorityAging = 3ms;
    c.adaptiveDelay = {true, 1ms, 30ms, 600ms, 2.0};
    c.slo.enabled = true;
    c.slo.p99Target = 11ms;
    c.slo.minBatch = 2;
    c.slo.maxBatch = 64;
    c.slo.minDelay = 1ms;
    c.slo.maxDelay = 40ms;
    c.slo.period = 3s;
    c.slo.batchStep = 3;
    c.slo.delayStep = 2ms;
    c.slo.decrease = 0.25;
    c.hybrid = {{4, 8}, 64, 20, 30ms};
    c.cache = {true, 50, 1 << 20};
    // ContinuousConfig is a StepBudget plus its own knobs (no longer an aggregate).
    c.continuous.maxNumSeqs = 4;
    c.continuous.maxNumBatchedTokens = 256;
    c.continuous.chunkedPrefill = false;
    c.continuous.prefillChunk = 32;
    c.continuous.decodeFirst = false;
    c.continuous.kvCacheTokens = 4096;
    c.continuous.priorityOrder = true;
    c.continuous.kvMemoryFraction = 0.5;
    c.prefixCache = {true, 32};
    c.goodput = {50ms, 5ms, 2s};
    return c;
}

std::unique_ptr<Engine> manualEngine(FakeClock &clock)
{
    EngineOptions o;
    o.backend = makeEchoBackend();
    o.clock = &clock;
    o.manualScheduling = true;
    return std::move(Engine::create(o).value());
}

} // namespace

class TestConfigPatch : public QObject {
    Q_OBJECT
private slots:
    void tableCoversEveryField()
    {
        const BatchingConfig a, b = everyFieldChanged();
        QCOMPARE(validate(b).message(), std::string());
        QCOMPARE(ConfigPatch::changedFields(a, b), ConfigPatch::allFieldNames());
        QCOMPARE(ConfigPatch::whole(b).appliedTo(a), b);
        QCOMPARE(ConfigPatch::diff(a, b).appliedTo(a), b);
        QVERIFY(ConfigPatch::diff(b, b).empty());
        // each field alone moves exactly that field
        for (const std::string &name : ConfigPatch::allFieldNames()) {
            const BatchingConfig one = ConfigPatch::fields(b, {name}).value().appliedTo(a);
            QCOMPARE(ConfigPatch::changedFields(a, one), std::vector<std::string>{name});
        }
        auto unknown = ConfigPatch::fields(b, {"max_batch"});
        QVERIFY(!unknown);
        QVERIFY(unknown.status().message().find("'max_batch'") != std::string::npos);
    }

    void memoryGuardPatchOnlyLowers()
    {
        BatchingConfig c;
        QCOMPARE(ConfigPatch::lowerMemoryBatchLimit(8).appliedTo(c).memoryBatchLimit, 8); // 0 = none: lowered
        c.memoryBatchLimit = 4;
        QCOMPARE(ConfigPatch::lowerMemoryBatchLimit(8).appliedTo(c).memoryBatchLimit, 4); // never raised
        c.memoryBatchLimit = 16;
        QCOMPARE(ConfigPatch::lowerMemoryBatchLimit(8).appliedTo(c).memoryBatchLimit, 8);
    }

    void jsonBodyNamesOnlyItsKeys()
    {
        auto patch =
            patchFromJson(nlohmann::json::parse(R"({"max_batch_size": 32, "slo": {"enabled": true}})"));
        QVERIFY(patch);
        QCOMPARE(patch->fieldNames(), (std::vector<std::string>{"max_batch_size", "slo.enabled"}));
        BatchingConfig base = everyFieldChanged();
        const BatchingConfig out = patch->appliedTo(base);
        QCOMPARE(out.maxBatchSize, 32);
        QCOMPARE(out.slo.p99Target, base.slo.p99Target); // a sibling in the same object stays
        QCOMPARE(ConfigPatch::changedFields(base, out), std::vector<std::string>{"max_batch_size"});
        QCOMPARE(patchFromJson(nlohmann::json::parse(R"({"batch": 1})")).status().message(),
                 std::string("unknown config field 'batch'"));
        QVERIFY(!patchFromJson(nlohmann::json::parse(R"({"max_batch_size": "8"})")));
    }

    // PUT /v1/config used to parse its body onto the config it read first
    // (configFromJson(body, engine.config())) and write the whole result, so
    // a change landing between the read and the write was reverted. Here the
    // body becomes a patch, another writer changes another field, and the
    // patch applies to the config in force.
    void restPutKeepsAConcurrentWritersField()
    {
        FakeClock clock;
        auto engine = manualEngine(clock);
        auto patch = patchFromJson(nlohmann::json::parse(R"({"max_batch_size": 32})")); // the handler's parse
        QVERIFY(patch);
        QVERIFY(engine->update(ConfigPatch::lowerMemoryBatchLimit(4),
                               std::string(kMemoryGuardOrigin))); // meanwhile
        auto updated = engine->update(*patch, "rest");
        QVERIFY(updated);
        QCOMPARE(updated->after.maxBatchSize, 32);
        QCOMPARE(updated->after.memoryBatchLimit, 4);
        QCOMPARE(updated->before.memoryBatchLimit, 4);
        QCOMPARE(updated->version, std::uint64_t(3));
        QCOMPARE(engine->config(), updated->after);
        QCOMPARE(engine->snapshot().configHistory.back().summary, std::string("max_batch_size 16→32"));
    }

    // Two writers of different fields at full speed on two threads: each
    // one's last value survives. With whole-config writes (read, edit,
    // reconfigure) each one kept reverting the other's field.
    void concurrentWritersOfDifferentFieldsBothSurvive()
    {
        FakeClock clock;
        auto engine = manualEngine(clock);
        constexpr int kWrites = 2000;
        auto writer = [&](const char *field, auto set) {
            for (int i = 1; i <= kWrites; ++i) {
                BatchingConfig values;
                set(values, i);
                if (!engine->update(ConfigPatch::fields(values, {field}).value(), "test"))
                    return false;
            }
            return true;
        };
        bool okA = false, okB = false;
        std::thread a([&] {
            okA = writer("queue_capacity", [](BatchingConfig &c, int i) { c.queueCapacity = 100 + i; });
        });
        std::thread b([&] {
            okB = writer("max_batch_size", [](BatchingConfig &c, int i) { c.maxBatchSize = 1 + i % 512; });
        });
        a.join();
        b.join();
        QVERIFY(okA && okB);
        QCOMPARE(engine->config().queueCapacity, 100 + kWrites);
        QCOMPARE(engine->config().maxBatchSize, 1 + kWrites % 512);
        QCOMPARE(engine->snapshot().configVersion, std::uint64_t(1 + 2 * kWrites));
    }

    // The memory guard, the SLO controller and an operator share one gate:
    // applyLocked validates whatever the origin (it skipped validate() for
    // the controllers before, although engine.h promised otherwise).
    void everyOriginIsValidated_data()
    {
        QTest::addColumn<QString>("origin");
        QTest::newRow("operator") << "gui";
        QTest::newRow("slo controller") << QString::fromStdString(std::string(kSloControllerOrigin));
        QTest::newRow("memory guard") << QString::fromStdString(std::string(kMemoryGuardOrigin));
    }
    void everyOriginIsValidated()
    {
        QFETCH(QString, origin);
        FakeClock clock;
        auto engine = manualEngine(clock);
        BatchingConfig bad;
        bad.maxBatchSize = 0;
        auto refused =
            engine->update(ConfigPatch::fields(bad, {"max_batch_size"}).value(), origin.toStdString());
        QVERIFY(!refused);
        QCOMPARE(refused.status().code(), StatusCode::InvalidArgument);
        QVERIFY(refused.status().message().find("max_batch_size") != std::string::npos);
        QCOMPARE(engine->config(), BatchingConfig{});
        QCOMPARE(engine->snapshot().configVersion, std::uint64_t(1));
    }

    // A patch is judged on the config it produces, so a field is valid or
    // not together with the fields in force (slo.min_batch above the
    // max_batch another writer set).
    void validatedAgainstTheConfigInForce()
    {
        FakeClock clock;
        auto engine = manualEngine(clock);
        BatchingConfig values;
        values.slo.maxBatch = 8;
        QVERIFY(engine->update(ConfigPatch::fields(values, {"slo.max_batch"}).value(), "rest"));
        values.slo.minBatch = 16;
        auto refused = engine->update(ConfigPatch::fields(values, {"slo.min_batch"}).value(), "gui");
        QVERIFY(!refused);
        QVERIFY(refused.status().message().find("slo.max_batch") != std::string::npos);
        QCOMPARE(engine->config().slo.maxBatch, 8);
    }
};

QTEST_APPLESS_MAIN(TestConfigPatch)
#include "test_config_patch.moc"
