// The calibration probe's mixed round against a server's running cap
// (engine/sim/calibration/remote_calibrate.h runningCapOf, leaveRoomForProbes): the
// default plan at --max-concurrency 32 runs 16 streams, and against a
// server that runs at most 16 sequences its first prompt waited behind
// them and the other prompts were never sent. With a cap seen, the round
// runs cap − 1 streams (dropped at a cap of 1), and says so.
#include "engine/sim/calibration/remote_calibrate.h"
#include "engine/sim/calibration/unknown_server.h"
#include "tests/engine/probe_requests.h"

#include <QtTest>

using namespace bp;
using bp::testing::answered;

namespace {

ProbeRound mixedRound(int streams)
{
    return {"mixed", streams, 64, 256, {128, 512, 1024, 128, 512, 1024}};
}

ProbeScrape scrape(double running, double waiting)
{
    ProbeScrape s;
    s.sample.running = running;
    s.sample.waiting = waiting;
    return s;
}

// A mixed round of one stream (0.0-0.5 s) and a 512-token prompt sent at
// 0.3 s; alone, the prefill round put that prompt at 0.29 s.
std::vector<ProbeRequest> mixedWithFirstTokenAt(double first)
{
    return {answered("prefill", 0, false, 512, 0, 0.29, 0.29, 1),
            answered("mixed", 1, true, 64, 0, 0.01, 0.5, 128),
            answered("mixed", 1, false, 512, 0.3, first, first, 1)};
}

} // namespace

class TestRemoteMixedRound : public QObject {
    Q_OBJECT
private slots:
    // A long prompt whose prefill outlived the one stream beside it: its
    // first token came after the stream ended, but sooner after that than
    // its prefill takes alone, so it began beside the stream (iteration
    // level). It used to read as having waited (request level).
    void aPromptThatOutlivedTheStreamStillJoinedIt()
    {
        const InferredScheduler joined = inferScheduler(mixedWithFirstTokenAt(0.6)); // 0.1 s after the end
        QVERIFY(joined.iterationLevel);
        QVERIFY(*joined.iterationLevel);
        // A server that ran it only after the stream: its whole prefill after the end.
        const InferredScheduler waited = inferScheduler(mixedWithFirstTokenAt(0.5 + 0.29));
        QVERIFY(waited.iterationLevel);
        QVERIFY(!*waited.iterationLevel);
    }

    void capFromScrapes()
    {
        // 16 running while 16 waited: a cap
        QCOMPARE(
            runningCapOf(observedLimits({scrape(8, 0), scrape(16, 16), scrape(16, 0)}, nullptr, nullptr)),
            std::optional<int>(16));
        // 16 ran, nothing ever waited: no cap seen
        QCOMPARE(runningCapOf(observedLimits({scrape(8, 0), scrape(16, 0)}, nullptr, nullptr)),
                 std::optional<int>());
        QCOMPARE(runningCapOf(observedLimits({}, nullptr, nullptr)), std::optional<int>());
    }

    void streamsLeaveRoomForThePrompts()
    {
        // The full plan at N = 32: 16 streams against a cap of 16.
        ProbeRound r = mixedRound(16);
        const std::string what = leaveRoomForProbes(r, 16);
        QCOMPARE(r.concurrency, 15);
        QCOMPARE(r.probes.size(), std::size_t(6)); // every prompt still goes
        QVERIFY2(what.find("15 streams, not 16") != std::string::npos, what.c_str());
        QVERIFY2(what.find("at most 16 sequences while requests waited") != std::string::npos, what.c_str());
        // --quick: 4 streams against a cap of 4
        ProbeRound q = mixedRound(4);
        QVERIFY(!leaveRoomForProbes(q, 4).empty());
        QCOMPARE(q.concurrency, 3);
        // a cap above the streams: nothing to change
        ProbeRound wide = mixedRound(8);
        QVERIFY(leaveRoomForProbes(wide, 16).empty());
        QCOMPARE(wide.concurrency, 8);
        QVERIFY(leaveRoomForProbes(wide, 9).empty()); // 8 streams + 1 prompt = 9
        QCOMPARE(wide.concurrency, 8);
        // not a mixed round: a decode round above the cap only queues
        ProbeRound decode{"decode", 32, 64, 128, {}};
        QVERIFY(leaveRoomForProbes(decode, 16).empty());
        QCOMPARE(decode.concurrency, 32);
    }

    void aCapOfOneDropsTheRound()
    {
        ProbeRound r = mixedRound(4);
        const std::string what = leaveRoomForProbes(r, 1);
        QCOMPARE(r.concurrency, 0);
        QVERIFY(r.probes.empty());
        QVERIFY2(what.find("dropped") != std::string::npos, what.c_str());
    }
};

QTEST_GUILESS_MAIN(TestRemoteMixedRound)
#include "test_remote_mixed_round.moc"
