// Calibration quality and the one way to time a
// backend (backend_timing.h), with synthetic timings: a fake backend moves
// a FakeClock by a scripted cost, so the measurement path is the real one
// and the timings are exact.
//  - On a quiet machine a batch costs the same every time: no warning.
//  - Other work on the cores makes repeated runs of one batch differ: the
//    run-to-run spread gives it away, with how to get a clean calibration.
//  - Load that comes and goes between cells keeps the repeats of each cell
//    alike but bends the fit: the fit error gives it away.
#include "engine/sim/calibration/backend_timing.h"
#include "engine/sim/calibration/calibration.h"
#include "engine/sim/calibration/statistics.h"

#include <QtTest>

#include <cmath>
#include <mutex>

using namespace bp;
using namespace std::chrono_literals;

namespace {

// pass(b, L) = 1 ms + 50 us·b + 0.2 us·b·L, times factor(run).
class ScriptedBackend final : public Backend {
public:
    ScriptedBackend(FakeClock &clock, std::function<double(int run)> factor)
        : m_clock(clock), m_factor(std::move(factor))
    {
        m_info.name = "test:scripted";
        m_info.maxSequenceLength = 1024;
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        const double b = double(input.requests.size()), L = input.paddedLength;
        const double seconds = (1e-3 + 50e-6 * b + 0.2e-6 * b * L) * m_factor(m_runs++);
        m_clock.advance(fromSeconds(seconds));
        out.assign(input.requests.size(), SequenceResult{});
        return Status::ok();
    }
    int runs() const { return m_runs; }

private:
    FakeClock &m_clock;
    std::function<double(int)> m_factor;
    ModelInfo m_info;
    int m_runs = 0;
};

// A generative backend that prefills a batch in two chunks of rows (as the
// paged step does above its prefill budget): the first half's first tokens
// come after 10 ms, the second half's after 20 ms; then one decode step of
// 1 ms per further token for every row.
class ChunkedPrefillBackend final : public Backend {
public:
    explicit ChunkedPrefillBackend(FakeClock &clock) : m_clock(clock)
    {
        m_info.name = "test:chunked";
        m_info.generative = true;
        m_info.maxSequenceLength = 1024;
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        const std::size_t b = input.requests.size();
        const int n = input.requests.front()->maxNewTokens;
        out.assign(b, SequenceResult{});
        for (std::size_t i = 0; i < b; ++i) {
            out[i].tokens.assign(std::size_t(n), 1);
            out[i].firstTokenAfter = i < b / 2 ? 10ms : 20ms;
            out[i].lastTokenAfter = 20ms + (n - 1) * 1ms;
        }
        m_clock.advance(out.front().lastTokenAfter);
        return Status::ok();
    }

private:
    FakeClock &m_clock;
    ModelInfo m_info;
};

Calibration calibrated(ScriptedBackend &backend, FakeClock &clock)
{
    CalibrationGrid grid = CalibrationGrid::quick();
    grid.repeats = 4;
    auto observations = measureBackend(backend, grid, {}, nullptr, clock);
    if (!observations)
        qFatal("measure: %s", observations.status().message().c_str());
    Calibration key = Calibration::forModel(backend.info(), "", 1);
    key.source = "profile (quick)";
    auto c = calibrate(key, *observations);
    if (!c)
        qFatal("fit: %s", c.status().message().c_str());
    return *c;
}

} // namespace

class TestCalibration : public QObject {
    Q_OBJECT

private slots:
    void medianAndSpread()
    {
        QCOMPARE(median({}), 0.0);
        QCOMPARE(median({3, 1, 2}), 2.0);
        QCOMPARE(median({4, 1, 3, 2}), 2.5);
        QCOMPARE(relativeSpread({2}), 0.0);
        QCOMPARE(relativeSpread({1, 2, 3}), 1.0); // (3 − 1) / 2
    }

    // Every cell, every timed run, in order; warm-ups untimed.
    void timesEveryCellWithTheGivenClock()
    {
        FakeClock clock;
        ScriptedBackend backend(clock, [](int run) { return run % 2 ? 1.5 : 1.0; });
        TimingGrid grid;
        grid.batchSizes = {1, 4};
        grid.lengths = {16, 2048}; // 2048 is above the model's 1024
        grid.warmup = 1;
        grid.repeats = 2;
        std::vector<std::size_t> done;
        auto timed = timeBackend(
            backend, grid, [&](const TimingProgress &p) { done.push_back(p.done); }, nullptr, clock);
        QVERIFY(timed);
        QCOMPARE(timed->skippedLengths, std::vector<int>{2048});
        QCOMPARE(timed->cells.size(), std::size_t(2));
        QCOMPARE(done, (std::vector<std::size_t>{1, 2}));
        QCOMPARE(backend.runs(), 6);
        const TimedCell &c = timed->cells[1]; // batch 4: runs 3 (warm-up), 4, 5
        QCOMPARE(c.batch, 4);
        QCOMPARE(c.wall.size(), std::size_t(2));
        const double base = 1e-3 + 4 * 50e-6 + 4 * 16 * 0.2e-6;
        QVERIFY(std::fabs(c.wall[0] - base * 1.0) < 1e-9);
        QVERIFY(std::fabs(c.wall[1] - base * 1.5) < 1e-9);
        QVERIFY(std::fabs(c.spread() - 0.5 / 1.25) < 1e-9);
    }

    // The prefill figure is the whole batch's, the per-token figure the decode
    // steps alone: a row of the first prefill chunk, which waits for the
    // second chunk before its decode steps, would price a step at 1.67 ms.
    void generativeCellsTimeTheLastPrefilledRow()
    {
        FakeClock clock;
        ChunkedPrefillBackend backend(clock);
        TimingGrid grid;
        grid.batchSizes = {8};
        grid.lengths = {16};
        grid.newTokens = {16};
        grid.warmup = 0;
        grid.repeats = 1;
        auto timed = timeBackend(backend, grid, {}, nullptr, clock);
        QVERIFY(timed);
        QCOMPARE(timed->cells.size(), std::size_t(1));
        const TimedCell &c = timed->cells.front();
        QCOMPARE(c.firstToken, std::vector<double>{0.020});
        QCOMPARE(c.perToken.size(), std::size_t(1));
        QVERIFY2(std::fabs(c.perToken.front() - 0.001) < 1e-9,
                 qPrintable(QString::number(c.perToken.front())));
    }

    void aQuietCalibrationHasNoWarning()
    {
        FakeClock clock;
        ScriptedBackend backend(clock, [](int run) { return 1.0 + 0.01 * (run % 3); });
        const Calibration c = calibrated(backend, clock);
        QVERIFY2(c.batchError.medianRel < 0.05, std::to_string(c.batchError.medianRel).c_str());
        QVERIFY(c.runSpread >= 0 && c.runSpread < 0.05);
        QVERIFY(!interferenceWarning(c));
        // kept with the calibration, with the longest length it measured
        QCOMPARE(calibrationFromJson(toJson(c))->runSpread, c.runSpread);
        QCOMPARE(c.measuredLength, 512);
        QCOMPARE(calibrationFromJson(toJson(c))->measuredLength, 512);
    }

    // A build on the same cores: a run now and then takes twice as long.
    void repeatsThatDisagreeAreInterference()
    {
        FakeClock clock;
        ScriptedBackend backend(clock, [](int run) { return run % 3 == 1 ? 2.2 : 1.0; });
        const Calibration c = calibrated(backend, clock);
        QVERIFY2(c.runSpread > kInterferenceSpread, std::to_string(c.runSpread).c_str());
        const auto warning = interferenceWarning(c);
        QVERIFY(warning);
        const QString text = QString::fromStdString(*warning);
        QVERIFY2(text.contains("disturbed by other work"), qPrintable(text));
        QVERIFY2(text.contains("the same batch timed again differed"), qPrintable(text));
        // how to get a clean one: stop other work, the command to run again
        QVERIFY2(text.contains("stop other work"), qPrintable(text));
        QVERIFY2(text.contains("batchpilot calibrate --model test:scripted --threads 1"), qPrintable(text));
    }

    // Load that changes between cells: repeats agree, the fit does not.
    void aFitThatDoesNotHoldIsInterference()
    {
        FakeClock clock;
        // 5 runs a cell (1 warm-up + 4); the load changes between cells
        // (x1 .. x5), not within one.
        ScriptedBackend backend(clock, [](int run) { return 1.0 + ((run / 5) * 5 % 9) * 0.5; });
        const Calibration c = calibrated(backend, clock);
        QVERIFY2(c.batchError.medianRel > kInterferenceFitError,
                 std::to_string(c.batchError.medianRel).c_str());
        const auto warning = interferenceWarning(c);
        QVERIFY(warning);
        QVERIFY2(QString::fromStdString(*warning).contains("fit to whole batches is off"), warning->c_str());
    }

    // The idle-start probe (what calibrate --quick stores as the
    // dispatch lateness): pairs of one request through a real engine, a
    // sample per pair, none negative; lengths cycle; a failing model stops
    // it with the probe named. (How large the samples are is the machine's:
    // docs/benchmarks.md, "The first prediction".)
    void idleStartProbePairsRequestsThroughAnEngine()
    {
        struct Recording final : Backend {
            ModelInfo m;
            std::mutex mutex;
            std::vector<int> lengths;
            bool fail = false;
            Recording()
            {
                m.name = "test:recording";
                m.maxSequenceLength = 64;
            }
            const ModelInfo &info() const override { return m; }
            Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
            {
                std::lock_guard lock(mutex);
                lengths.push_back(int(input.requests.front()->tokens.size()));
                out.assign(input.requests.size(), SequenceResult{});
                return fail ? Status(StatusCode::Internal, "broken") : Status::ok();
            }
        };
        auto backend = std::make_shared<Recording>();
        auto samples = measureIdleStart(backend, {8, 16}, 3, 1ms);
        QVERIFY2(samples, samples.status().message().c_str());
        QCOMPARE(samples->size(), std::size_t(3));
        for (double s : *samples)
            QVERIFY(std::isfinite(s) && s >= 0);
        QCOMPARE(backend->lengths, (std::vector<int>{8, 8, 16, 16, 8, 8})); // cold, warm per probe
        backend->fail = true;
        auto failed = measureIdleStart(backend, {8}, 2, 1ms);
        QVERIFY(!failed);
        QVERIFY2(failed.status().message().find("idle-start probe: ") == 0,
                 failed.status().message().c_str());
    }

    // An older calibration (no run spread kept) is judged by its fit alone.
    void unknownSpreadIsNotInterference()
    {
        Calibration c;
        c.model = "builtin:echo";
        c.runSpread = -1;
        c.batchError.observations = 10;
        c.batchError.medianRel = 0.05;
        QVERIFY(!interferenceWarning(c));
        auto old = calibrationFromJson({{"format", "batchpilot-calibration"},
                                        {"model", "builtin:echo"},
                                        {"cost_model", {{"pass", {0, 0, 0, 0}}, {"step", {0, 0, 0}}}}});
        QVERIFY(old);
        QCOMPARE(old->runSpread, -1.0);
    }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "test_calibration.moc"
