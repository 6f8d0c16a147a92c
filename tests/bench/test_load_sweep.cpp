// The parts of `batchpilot-bench load` between its flags and its printer
// (bench/load_sweep.h), which used to sit inside one function: the
// --compare items and their expansion into runs (token budgets, the prefix
// cache off and on), the refusals, and the two summaries over a sweep's
// runs (the best clean throughput within a p99 budget; the best goodput and
// the highest rate meeting an SLO attainment target).
#include "bench/load_bench.h"
#include "bench/load_sweep.h"

#include <QtTest>

#include <string>
#include <vector>

using namespace bp;
using namespace bp::bench;

namespace {

// Args as main() builds them, from "load" and the given flags.
Args argsOf(std::vector<std::string> flags)
{
    flags.insert(flags.begin(), {"batchpilot-bench", "load"});
    std::vector<char *> argv;
    for (auto &f : flags)
        argv.push_back(f.data());
    return Args(int(argv.size()), argv.data(), 2, loadStage());
}

std::vector<std::string> labels(const std::vector<LoadPolicy> &policies)
{
    std::vector<std::string> out;
    for (const auto &p : policies)
        out.push_back(p.label);
    return out;
}

// A run of policy `index` at `rate` whose p99 latency is about `p99Ms`.
LoadSweepRun run(std::size_t index, double rate, double requestsPerS, double p99Ms, double goodput = 0,
                 double attainment = 0)
{
    LoadSweepRun r;
    r.policy = index;
    r.rate = rate;
    r.result.offeredRate = rate - 2;
    r.result.requestsPerS = requestsPerS;
    r.result.outputTokensPerS = 10 * requestsPerS;
    r.result.latency.record(std::int64_t(p99Ms * 1e6));
    r.result.goodputPerS = goodput;
    r.result.attainment = attainment;
    return r;
}

std::vector<LoadPolicy> policiesNamed(const std::vector<std::string> &names)
{
    std::vector<LoadPolicy> out;
    for (const auto &n : names)
        out.push_back({BatchingConfig{}, n, n, std::nullopt});
    return out;
}

} // namespace

class TestLoadSweep : public QObject {
    Q_OBJECT
private slots:
    void compareItemsExpandIntoRuns()
    {
        const auto p =
            policiesFromArgs(argsOf({"--compare", "none,continuous", "--max-num-batched-tokens", "256,512",
                                     "--prefix-cache", "0,1", "--rates-continuous", "3,4"}));
        QVERIFY2(p, p ? "" : p.error().message.c_str());
        QCOMPARE(labels(*p), (std::vector<std::string>{"none", "continuous@256", "continuous@256+prefix",
                                                       "continuous@512", "continuous@512+prefix"}));
        QVERIFY((*p)[0].config.policy == PolicyKind::None);
        QVERIFY(!(*p)[0].ownRates);
        for (std::size_t i = 1; i < p->size(); ++i) {
            const LoadPolicy &c = (*p)[i];
            QCOMPARE(c.rateKey, std::string("continuous")); // --rates-continuous applies to every expansion
            QVERIFY(c.ownRates && *c.ownRates == (std::vector<std::string>{"3", "4"}));
            QCOMPARE(c.config.continuous.maxNumBatchedTokens, i <= 2 ? 256 : 512);
            QCOMPARE(c.config.prefixCache.enabled, i % 2 == 0);
        }
    }

    void theDefaultIsDynamicOnTheBase()
    {
        const auto p = policiesFromArgs(argsOf({"--max-batch", "8", "--delay-us", "300"}));
        QVERIFY(p);
        QCOMPARE(labels(*p), std::vector<std::string>{"dynamic"});
        QVERIFY((*p)[0].config.policy == PolicyKind::Dynamic);
        QCOMPARE((*p)[0].config.maxBatchSize, 8);
        QVERIFY((*p)[0].config.maxQueueDelay == std::chrono::microseconds(300));
    }

    void refusesWhatIsNotAPolicy()
    {
        const auto unknown = policiesFromArgs(argsOf({"--compare", "dynamic,fastest"}));
        QVERIFY(!unknown);
        QCOMPARE(unknown.error().rc, 2);
        QCOMPARE(unknown.error().message,
                 std::string("batchpilot-bench load: unknown policy 'fastest' in --compare"));

        const auto missing = policiesFromArgs(argsOf({"--compare", "/nonexistent/strategy.json"}));
        QVERIFY(!missing);
        QCOMPARE(missing.error().rc, 2);
        QVERIFY(missing.error().message.starts_with("batchpilot-bench load: "));

        const auto invalid = policiesFromArgs(argsOf({"--compare", "dynamic", "--max-batch", "0"}));
        QVERIFY(!invalid);
        QCOMPARE(invalid.error().rc, 2);
    }

    void bestUnderBudgetTakesTheCleanFastestWithinIt()
    {
        const auto policies = policiesNamed({"none", "dynamic"});
        std::vector<LoadSweepRun> runs{run(0, 10, 9, 50), run(0, 20, 18, 400), // none: 20 is over budget
                                       run(1, 10, 9, 20), run(1, 20, 19, 90),  // dynamic: both within
                                       run(1, 40, 30, 99)};
        runs.back().result.rejected = 1; // not clean: left out however fast
        const auto best = bestUnderBudget(runs, policies, false, 100);
        QCOMPARE(best.size(), std::size_t(2));
        QVERIFY(best.at("none").any);
        QCOMPARE(best.at("none").rate, 10.0);
        QCOMPARE(best.at("none").throughput, 9.0);
        QCOMPARE(best.at("dynamic").rate, 20.0);
        QCOMPARE(best.at("dynamic").offered, 18.0);
        QCOMPARE(best.at("dynamic").throughput, 19.0);
        QVERIFY(best.at("dynamic").p99 <= 100);
        // A decoder is measured in output tokens/s.
        QCOMPARE(bestUnderBudget(runs, policies, true, 100).at("dynamic").throughput, 190.0);
        // Nothing within a tight budget: no entry.
        QVERIFY(bestUnderBudget(runs, policies, false, 1).empty());
    }

    void bestGoodputAndTheHighestRateMeetingTheTarget()
    {
        const auto policies = policiesNamed({"dynamic"});
        const std::vector<LoadSweepRun> runs{run(0, 10, 10, 5, 9.5, 0.95), run(0, 20, 20, 5, 17, 0.85),
                                             run(0, 40, 25, 5, 12, 0.30)};
        const auto best = bestGoodput(runs, policies, 0.9);
        const BestGoodput &g = best.at("dynamic");
        QVERIFY(g.any);
        QCOMPARE(g.rate, 20.0); // the most goodput
        QCOMPARE(g.goodput, 17.0);
        QCOMPARE(g.attainment, 0.85);
        QVERIFY(g.attained);
        QCOMPARE(g.attainedRate, 10.0); // the only one at >= 90%
        QCOMPARE(g.attainedOffered, 8.0);
        QVERIFY(!bestGoodput(runs, policies, 0.99).at("dynamic").attained);
    }
};

QTEST_GUILESS_MAIN(TestLoadSweep)
#include "test_load_sweep.moc"
