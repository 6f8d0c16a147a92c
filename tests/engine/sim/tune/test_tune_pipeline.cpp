// The tune pipeline (engine/sim/tune/tune_pipeline.h) and its bounded
// verification:
//  - the verification window, a pure function: the busiest stretch, the
//    first one, all; its parser;
//  - the whole pipeline on a real store and builtin:echo: the search is
//    stored, the verification replays only the window (its own session)
//    and compares it with the prediction over the same arrivals;
//  - Ctrl+C during the verification keeps what was verified, stored and
//    marked partial; during the search, nothing is verified.
#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/store/trace_store.h"
#include "engine/store/tuning_store.h"

#include <QtTest>

using namespace bp;
using namespace std::chrono_literals;

namespace {

std::vector<Duration> millis(std::initializer_list<int> ms)
{
    std::vector<Duration> out;
    for (int m : ms)
        out.push_back(std::chrono::milliseconds(m));
    return out;
}

VerifyWindowSpec spec(const char *text)
{
    auto s = parseVerifyWindow(text);
    if (!s)
        qFatal("%s", s.status().message().c_str());
    return *s;
}

struct Fixture {
    QTemporaryDir dir;
    std::shared_ptr<TraceStore> store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
    std::shared_ptr<Backend> echo = makeEchoBackend(256, 2048);
    Calibration calibration = Calibration::forModel(echo->info(), "", 1);
    std::int64_t trace = 0;

    // `n` arrivals `gapMs` apart; inputs 8..71 tokens.
    explicit Fixture(int n, int gapMs)
    {
        std::vector<TraceRow> rows;
        for (int i = 0; i < n; ++i)
            rows.push_back({i * gapMs / 1000.0, 8 + (i * 37) % 64, 2});
        trace = store->addTrace("t", "", TraceFormat::Plain, rows).value().id;
        calibration.cost.coef[0] = 50e-6; // echo: 50 us a batch, 2 us a request
        calibration.cost.coef[1] = 2e-6;
        calibration.source = "test";
        calibration.id = saveCalibration(*store, calibration).value();
    }

    TuneRequest request(const char *window) const
    {
        TuneRequest r;
        r.source.source = {ReplaySource::Kind::Trace, trace};
        r.settings.slo.e2eP99 = 50ms;
        r.settings.budget = 12;
        r.settings.maxInstances = 1;
        r.verifyWindow = spec(window);
        return r;
    }
};

} // namespace

class TestTunePipeline : public QObject {
    Q_OBJECT

private slots:
    void parsesWindows()
    {
        QCOMPARE(spec("busiest:3m").kind, VerifyWindowSpec::Kind::Busiest);
        QCOMPARE(spec("busiest:3m").length, Duration(3min));
        QCOMPARE(spec("first:90s").kind, VerifyWindowSpec::Kind::First);
        QCOMPARE(spec("first:90s").length, Duration(90s));
        QCOMPARE(spec("busiest:250ms").length, Duration(250ms));
        QCOMPARE(spec("all").kind, VerifyWindowSpec::Kind::All);
        QCOMPARE(VerifyWindowSpec{}, spec("busiest:3m")); // the default
        for (const char *text : {"busiest:3m", "first:90s", "busiest:2h", "all", "first:250ms"})
            QCOMPARE(formatVerifyWindow(spec(text)), std::string(text));
        QCOMPARE(describe(spec("busiest:3m")), std::string("the busiest 3 min of arrivals"));
        const std::pair<const char *, const char *> bad[] = {
            {"busiest", "needs a length"},        {"busiest:0m", "positive number"},
            {"busiest:3", "positive number"},     {"busiest:3x", "positive number"},
            {"last:3m", "unknown window 'last'"}, {"", "unknown window"},
        };
        for (const auto &[text, why] : bad) {
            auto r = parseVerifyWindow(text);
            QVERIFY2(!r, text);
            QCOMPARE(r.status().code(), StatusCode::InvalidArgument);
            QVERIFY2(r.status().message().find(why) != std::string::npos, r.status().message().c_str());
            QVERIFY(r.status().message().find("busiest:3m") != std::string::npos); // says what a good one is
        }
    }

    void selectsTheWindow()
    {
        // Sparse, a burst of 5 within 100 ms at 1000 ms, sparse again.
        const auto offsets = millis({0, 300, 600, 1000, 1020, 1040, 1060, 1080, 1400, 1800, 2200});
        VerifyWindow w = selectVerifyWindow(offsets, spec("busiest:200ms"));
        QCOMPARE(w.begin, std::size_t(3));
        QCOMPARE(w.end, std::size_t(8));
        QCOMPARE(w.from, Duration(1000ms));
        QCOMPARE(w.to, Duration(1080ms));
        QCOMPARE(w.size(), std::size_t(5));
        // A wider window takes the burst and what fits around it; the earliest of equals.
        w = selectVerifyWindow(offsets, spec("busiest:500ms"));
        QCOMPARE(w.begin, std::size_t(2));
        QCOMPARE(w.end, std::size_t(8));
        // Equal counts everywhere: the first stretch.
        const auto even = millis({0, 100, 200, 300, 400, 500});
        w = selectVerifyWindow(even, spec("busiest:250ms"));
        QCOMPARE(w.begin, std::size_t(0));
        QCOMPARE(w.end, std::size_t(3));
        // First: before offsets[0] + length (the bound itself is out).
        w = selectVerifyWindow(offsets, spec("first:1s"));
        QCOMPARE(w.begin, std::size_t(0));
        QCOMPARE(w.end, std::size_t(3));
        // All, or a source no longer than the window: everything.
        for (const char *text : {"all", "busiest:1h", "first:1h"}) {
            w = selectVerifyWindow(offsets, spec(text));
            QCOMPARE(w.begin, std::size_t(0));
            QCOMPARE(w.end, offsets.size());
        }
        QCOMPARE(selectVerifyWindow({}, spec("busiest:3m")).size(), std::size_t(0));
        // Deterministic: the same answer every time.
        for (int i = 0; i < 3; ++i)
            QCOMPARE(selectVerifyWindow(offsets, spec("busiest:200ms")).begin, std::size_t(3));
    }

    // 400 arrivals 5 ms apart (2 s); the check replays the first 0.5 s.
    void verifiesOnlyTheWindow()
    {
        Fixture f(400, 5);
        std::optional<VerifyPlan> announced;
        TuneHooks hooks;
        hooks.verifyStarting = [&](const VerifyPlan &p) { announced = p; };
        auto run = runTunePipeline(f.store, f.calibration, f.request("first:500ms"), f.echo, hooks);
        QVERIFY2(run, run.status().toString().c_str());
        QVERIFY(run->result.recommended);
        QVERIFY(run->stored.tuningId > 0);
        QCOMPARE(run->source.plan.requests.size(), std::size_t(400));
        // announced before it ran: the window and the time it takes
        QVERIFY(announced);
        QCOMPARE(announced->window.size(), std::size_t(100));
        QCOMPARE(announced->sourceRequests, std::size_t(400));
        QVERIFY2(announced->expectedSeconds >= 0.495 && announced->expectedSeconds < 0.6,
                 std::to_string(announced->expectedSeconds).c_str());
        QVERIFY(run->verification);
        const Verification &v = *run->verification;
        QVERIFY(!v.partial);
        QCOMPARE(v.compared, std::size_t(100));
        QCOMPARE(v.measured.requests, std::size_t(100));
        QCOMPARE(v.measured.completed, std::size_t(100));
        QCOMPARE(v.predicted.requests, std::size_t(100));
        // its own session: the window's requests only
        QCOMPARE(f.store->requests(v.replay.sessionId).value().size(), std::size_t(100));
        // stored with the search
        const auto tunings = tuningsForSession(*f.store, v.replay.sessionId).value();
        QCOMPARE(tunings.size(), std::size_t(1));
        QCOMPARE(tunings[0].id, run->stored.tuningId);
        const nlohmann::json &j = tunings[0].result["verification"];
        QCOMPARE(j["partial"].get<bool>(), false);
        QCOMPARE(j["window"]["spec"].get<std::string>(), std::string("first:500ms"));
        QCOMPARE(j["window"]["requests"].get<int>(), 100);
        QCOMPARE(j["measured"]["completed"].get<int>(), 100);
        QCOMPARE(run->stored.document["verification"], j);
    }

    // The recommendation's prediction carries the fit's spread (the same
    // interval as replay --simulate: sim_interval.h); none without a fit
    // error.
    void theRecommendationCarriesTheFitSpread()
    {
        Fixture f(200, 4);
        TuneRequest r = f.request("all");
        r.verify = false;
        auto plain = runTunePipeline(f.store, f.calibration, r, nullptr, {});
        QVERIFY2(plain, plain.status().message().c_str());
        QVERIFY(!plain->interval);
        f.calibration.batchError = {9, 0.02, 0.25, 0.5};
        auto run = runTunePipeline(f.store, f.calibration, r, nullptr, {});
        QVERIFY2(run, run.status().message().c_str());
        QVERIFY(run->interval.has_value());
        const SimulatedInterval &i = *run->interval;
        QCOMPARE(i.spread, 0.25);
        QCOMPARE(i.mid.completed, std::size_t(200));
        QVERIFY(i.low.p99S <= i.mid.p99S && i.mid.p99S <= i.high.p99S && i.low.meanS < i.high.meanS);
    }

    // Arrivals longer than the calibration measured are counted and named.
    void warnsWhereTheCostIsExtrapolated()
    {
        Fixture f(100, 5); // inputs 8..71 tokens
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, f.trace};
        f.calibration.measuredLength = 40;
        auto source = planTuneSource(*f.store, o, f.calibration);
        QVERIFY(source);
        std::size_t longer = 0;
        for (const PlannedArrival &r : source->plan.requests)
            longer += r.inputTokens > 40 ? 1 : 0;
        QVERIFY(longer > 0);
        QCOMPARE(source->beyondCalibration, longer);
        const std::string w = source->extrapolationWarning(f.calibration);
        QVERIFY2(w.find(std::to_string(longer) + " of the 100 arrivals are longer than calibration") == 0,
                 w.c_str());
        f.calibration.measuredLength = 0; // unknown: no claim
        QCOMPARE(planTuneSource(*f.store, o, f.calibration)->beyondCalibration, std::size_t(0));
    }

    // The Advisor's way: search first, verify a candidate on demand. And the
    // replay of a window (ReplayOptions::skip): sent from the replay's start.
    void verifiesOnDemandAndSkips()
    {
        Fixture f(400, 5);
        auto refused = runTunePipeline(f.store, f.calibration, f.request("all"), nullptr, {});
        QVERIFY(!refused); // verifying needs the model
        QVERIFY2(refused.status().message().find("needs the model") != std::string::npos,
                 refused.status().message().c_str());
        TuneRequest r = f.request("all");
        r.verify = false;
        auto searched = runTunePipeline(f.store, f.calibration, r, nullptr, {});
        QVERIFY2(searched, searched.status().toString().c_str());
        QVERIFY(!searched->verification);
        const TuneCandidate c = searched->result.candidates[*searched->result.recommended];
        auto v = verifyRun(f.store, f.echo, *searched, c, spec("busiest:198ms"), {});
        QVERIFY2(v, v.status().toString().c_str());
        QCOMPARE(v->compared, std::size_t(40)); // every 198 ms holds 40: the first
        QCOMPARE(v->plan.window.begin, std::size_t(0));
        QVERIFY(searched->verification);
        QCOMPARE(searched->stored.document["verification"]["compared"].get<int>(), 40);

        ReplayOptions o;
        o.source = searched->source.replay.source;
        o.skip = 200;
        o.limit = 40;
        o.clock = ReplayClock::Virtual;
        auto replayed = Replayer(f.store, f.echo).run(o);
        QVERIFY(replayed);
        const auto rows = f.store->requests(replayed->sessionId).value();
        QCOMPARE(rows.size(), std::size_t(40));
        QCOMPARE(rows.front().arrival, Duration::zero()); // from the first one sent
        QCOMPARE(rows.back().arrival, Duration(195ms));
        QCOMPARE(f.store->session(replayed->sessionId).value().replay.value("skip", -1), 200);
        // the simulator numbers and times a window as that replay sends it
        const auto arrivals = searched->source.arrivals(200, 240);
        QCOMPARE(arrivals.size(), std::size_t(40));
        QCOMPARE(arrivals.front().offset, Duration::zero());
        QCOMPARE(arrivals.front().id, std::uint64_t(1));
        QCOMPARE(arrivals.back().offset, Duration(195ms));
    }

    // Ctrl+C during the verification: what was verified is kept, stored,
    // marked partial, and compared with the prediction of the same arrivals.
    void cancelKeepsThePartialVerification()
    {
        Fixture f(600, 10); // 6 s of arrivals
        std::atomic<bool> cancel{false};
        TuneHooks hooks;
        hooks.cancel = &cancel;
        // The replay's own thread reports progress after its first request:
        // the cancel lands there, so it is deterministic.
        hooks.verifyProgress = [&](const ReplayProgress &p) {
            if (p.submitted >= 1)
                cancel = true;
        };
        auto run = runTunePipeline(f.store, f.calibration, f.request("all"), f.echo, hooks);
        QVERIFY2(run, run.status().toString().c_str());
        QVERIFY(!run->result.cancelled); // the search had finished
        QVERIFY(run->verification);
        const Verification &v = *run->verification;
        QVERIFY(v.partial);
        QVERIFY(v.replay.cancelled);
        QVERIFY2(v.replay.submitted >= 1 && v.replay.submitted < 600,
                 std::to_string(v.replay.submitted).c_str());
        QVERIFY(v.compared <= v.replay.submitted);
        QCOMPARE(v.measured.requests, v.compared);
        QCOMPARE(v.predicted.requests, v.compared);
        QCOMPARE(v.measured.completed + (v.measured.requests - v.measured.completed), v.compared);
        // stored, marked partial, the session linked
        const auto tunings = tuningsForSession(*f.store, v.replay.sessionId).value();
        QCOMPARE(tunings.size(), std::size_t(1));
        QCOMPARE(*tunings[0].verifySessionId, v.replay.sessionId);
        const nlohmann::json &j = tunings[0].result["verification"];
        QCOMPARE(j["partial"].get<bool>(), true);
        QCOMPARE(j["cancelled"].get<bool>(), true);
        QCOMPARE(j["compared"].get<std::size_t>(), v.compared);
        QCOMPARE(j["window"]["requests"].get<int>(), 600);
    }

    // Ctrl+C during the search: what was evaluated is stored; no replay.
    void cancelledSearchIsNotVerified()
    {
        Fixture f(400, 5);
        std::atomic<bool> cancel{false};
        TuneHooks hooks;
        hooks.cancel = &cancel;
        hooks.searchProgress = [&](std::size_t done, std::size_t) {
            if (done >= 1)
                cancel = true;
        };
        bool verifying = false;
        hooks.verifyStarting = [&](const VerifyPlan &) { verifying = true; };
        TuneRequest r = f.request("all");
        r.settings.budget = 200;
        auto run = runTunePipeline(f.store, f.calibration, r, f.echo, hooks);
        QVERIFY2(run, run.status().toString().c_str());
        QVERIFY(run->result.cancelled);
        QVERIFY(!run->verification);
        QVERIFY(!verifying);
        if (run->result.recommended)
            QVERIFY(run->stored.tuningId > 0);
    }
};

QTEST_GUILESS_MAIN(TestTunePipeline)
#include "test_tune_pipeline.moc"
