// The load bench's window rule (bench/load_run.h): every figure is taken over
// the requests that ARRIVED in the window. A warm-up backlog that completes
// inside the window adds nothing; a window arrival that completes during the
// drain counts; throughput = those completed / window length.
#include "bench/load_run.h"

#include "engine/model/model_registry.h"

#include <QtTest>

using namespace bp;
using namespace bp::bench;

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LoadSample makeSample(milliseconds arrival, milliseconds latency, StatusCode status = StatusCode::Ok,
                      std::uint64_t in = 10, std::uint64_t out = 0)
{
    LoadSample s;
    s.arrival = arrival;
    s.latency = latency;
    s.status = status;
    s.inputTokens = in;
    s.outputTokens = out;
    return s;
}

} // namespace

class TestLoadWindow : public QObject {
    Q_OBJECT
private slots:
    // Overload: the warm-up [0, 2 s) queued 30 requests that all complete
    // inside the window [2 s, 4 s); the window's own 10 arrivals complete
    // late. Counting completions in the window would report 15 req/s from
    // a model that served the window's arrivals at 5 req/s.
    void warmupBacklogIsNotWindowThroughput()
    {
        std::vector<LoadSample> samples;
        for (int i = 0; i < 30; ++i) // arrive 0..1.45 s, complete 2.1..3.9 s
            samples.push_back(makeSample(milliseconds(50 * i), milliseconds(2100 + 60 * i - 50 * i)));
        for (int i = 0; i < 10; ++i) // arrive 2.0..3.8 s, complete after 4 s (in the drain)
            samples.push_back(makeSample(milliseconds(2000 + 200 * i), milliseconds(2500)));
        const WindowFigures f = summarizeWindow(samples, seconds(2), seconds(4));
        QCOMPARE(f.arrived, std::uint64_t(10));
        QCOMPARE(f.completed, std::uint64_t(10));
        QCOMPARE(f.requestsPerS, 5.0);
        QCOMPARE(f.inputTokensPerS, 50.0);
        QCOMPARE(f.latency.count(), std::uint64_t(10));
        QCOMPARE(f.latency.max(), std::int64_t(milliseconds(2500) / std::chrono::nanoseconds(1)));
    }

    void boundariesAreHalfOpen()
    {
        const std::vector<LoadSample> samples{
            makeSample(milliseconds(1999), milliseconds(1)), makeSample(milliseconds(2000), milliseconds(1)),
            makeSample(milliseconds(3999), milliseconds(1)), makeSample(milliseconds(4000), milliseconds(1))};
        const WindowFigures f = summarizeWindow(samples, seconds(2), seconds(4));
        QCOMPARE(f.arrived, std::uint64_t(2));
        QCOMPARE(f.requestsPerS, 1.0);
    }

    // Failures of window arrivals count against the window (never as
    // throughput); the ones the shutdown failed are also "unfinished".
    void failuresAndUnfinished()
    {
        const std::vector<LoadSample> samples{
            makeSample(milliseconds(2100), milliseconds(5)),
            makeSample(milliseconds(2200), milliseconds(5), StatusCode::Internal),
            makeSample(milliseconds(2300), milliseconds(9000), StatusCode::ShuttingDown),
            makeSample(milliseconds(100), milliseconds(9000), StatusCode::ShuttingDown)};
        const WindowFigures f = summarizeWindow(samples, seconds(2), seconds(4));
        QCOMPARE(f.arrived, std::uint64_t(3));
        QCOMPARE(f.completed, std::uint64_t(1));
        QCOMPARE(f.failed, std::uint64_t(2));
        QCOMPARE(f.unfinished, std::uint64_t(1));
        QCOMPARE(f.latency.count(), std::uint64_t(1)); // percentiles over the completed ones only
        QCOMPARE(f.requestsPerS, 0.5);
    }

    // The "offered" rate counts the schedule the generator really plays: a
    // run with nothing refused sees exactly that many window arrivals.
    // (Counting a copy that skipped the token draws counted another schedule.)
    void offeredMatchesTheArrivals()
    {
        LoadRunOptions o;
        o.config.maxBatchSize = 64;
        o.config.maxQueueDelay = std::chrono::microseconds(200);
        o.config.queueCapacity = 100000;
        o.workload.rate = 4000;
        o.workload.lengths = LengthKind::Uniform;
        o.workload.minLength = 8;
        o.workload.maxLength = 64;
        o.warmupS = 0.05;
        o.durationS = 0.2;
        o.drainS = 30; // a bound only: echo answers at once
        o.workload.limit = std::size_t(o.workload.rate * (o.warmupS + o.durationS));
        auto result = runLoad(makeEchoBackend(256, 2048), o);
        QVERIFY2(result, result.status().toString().c_str());
        QCOMPARE(result->rejected, std::uint64_t(0));
        QVERIFY(result->clean());
        QVERIFY(result->arrived > 500);
        QCOMPARE(result->arrived, std::uint64_t(std::llround(result->offeredRate * result->windowS)));
    }

    void generativeTokensAndTpot()
    {
        std::vector<LoadSample> samples{
            makeSample(milliseconds(2500), milliseconds(100), StatusCode::Ok, 8, 32),
            makeSample(milliseconds(500), milliseconds(2000), StatusCode::Ok, 8, 32)};
        samples[0].ttft = milliseconds(20);
        samples[0].tpot = milliseconds(4);
        samples[1].tpot = milliseconds(40); // warm-up arrival: not in the mean
        const WindowFigures f = summarizeWindow(samples, seconds(2), seconds(4));
        QCOMPARE(f.outputTokensPerS, 16.0);
        QCOMPARE(f.ttft.count(), std::uint64_t(1));
        QCOMPARE(f.meanTpotMs, 4.0);
    }
};

QTEST_GUILESS_MAIN(TestLoadWindow)
#include "test_load_window.moc"
