#include "report_fixture.h"

#include "engine/core/clock.h"
#include "engine/exec/engine.h"
#include "engine/replay/replayer.h"
#include "engine/store/session_recorder.h"

#include <algorithm>

namespace bp::test {

namespace {

using namespace std::chrono_literals;

// builtin:echo's answers with compute time on the fake clock: a batch takes
// 400 µs + 20 µs per padded token; a generating sequence's first token comes
// 150 µs into the batch. Keeps the report's compute and TTFT rows non-zero
// and exactly reproducible.
class PacedEchoBackend final : public Backend {
public:
    explicit PacedEchoBackend(FakeClock &clock) : m_clock(clock)
    {
        m_info.name = "builtin:echo";
        m_info.maxSequenceLength = 64;
        m_info.generative = true;
        m_info.maxNewTokensLimit = 16;
        m_info.description = "echo with paced compute (tests)";
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        const auto tokens = std::int64_t(input.requests.size()) * input.paddedLength;
        for (std::size_t i = 0; i < input.requests.size(); ++i) {
            const Request &r = *input.requests[i];
            const auto n = std::size_t(std::min<int>(r.maxNewTokens, int(r.tokens.size())));
            out[i].tokens.assign(r.tokens.begin(), r.tokens.begin() + std::ptrdiff_t(n));
            if (n > 0) {
                out[i].firstTokenAfter = 150us;
                out[i].lastTokenAfter = 150us + 50us * std::int64_t(n - 1);
            }
        }
        m_clock.advance(400us + 20us * tokens);
        return {};
    }

private:
    FakeClock &m_clock;
    ModelInfo m_info;
};

QString q(const Status &s)
{
    return QString::fromStdString(s.toString());
}

} // namespace

std::unique_ptr<ReportFixture> buildReportFixture()
{
    auto f = std::make_unique<ReportFixture>();
    auto store = TraceStore::open(f->dbPath().toStdString());
    if (!store) {
        f->error = q(store.status());
        return f;
    }
    f->store = *store;

    FakeClock clock;
    EngineOptions options;
    options.batching.policy = PolicyKind::Dynamic;
    options.batching.maxBatchSize = 8;
    options.batching.maxQueueDelay = 2ms;
    // Goodput: TTFT within 5 ms (queue wait + 150 µs: some make it, some
    // do not) and TPOT within 1 ms (the paced 50 µs always does).
    options.batching.goodput.ttft = 5ms;
    options.batching.goodput.tpot = 1ms;
    options.backend = std::make_shared<PacedEchoBackend>(clock);
    options.clock = &clock;
    options.manualScheduling = true;
    auto engine = Engine::create(options);
    if (!engine) {
        f->error = q(engine.status());
        return f;
    }
    SessionStart start;
    start.notes = "report fixture <b>not bold</b>";
    RecorderOptions recorderOptions;
    recorderOptions.samplePeriod = Duration::zero(); // sampled by hand below
    auto recorder = SessionRecorder::start(f->store, **engine, start, recorderOptions);
    if (!recorder) {
        f->error = q(recorder.status());
        return f;
    }
    f->live = (*recorder)->sessionId();

    const TimePoint t0 = clock.now();
    const Duration span = 6s, gap = 5ms;
    std::uint64_t next = 0; // the next arrival slot (every 5 ms)
    std::uint64_t k = 0;    // requests so far
    auto drain = [&] {
        while ((*engine)->runSchedulerOnce().dispatched) {
        }
    };
    for (Duration t = Duration::zero(); t <= span + 50ms; t += 1ms) {
        if (clock.now() < t0 + t)
            clock.set(t0 + t);
        while (Duration(std::int64_t(next) * gap) <= clock.now() - t0 &&
               Duration(std::int64_t(next) * gap) < span) {
            const Duration at = std::int64_t(next) * gap;
            // one request per slot, then after 3 s a burst of 12 every 50 ms
            const int count = at < 3s ? 1 : next % 10 == 0 ? 12 : 0;
            ++next;
            for (int c = 0; c < count; ++c) {
                const std::uint64_t i = k++;
                Request r;
                const int length = i % 250 == 249 ? 100 : int(i % 50) + 1; // 100 > the model's 64
                r.tokens.assign(std::size_t(length), TokenId(1 + i % 200));
                r.maxNewTokens = i % 3 == 0 ? int(i % 4) + 1 : 0;
                if (i % 97 == 0)
                    r.deadline = clock.now() + 1ms;
                ++f->submitted;
                (void)(*engine)->submit(std::move(r), [](Response) {});
            }
        }
        if (t == 3s) {
            BatchingConfig c = (*engine)->config();
            c.maxBatchSize = 16;
            c.maxQueueDelay = 8ms;
            if (Status s = (*engine)->reconfigure(c, "test"); !s.isOk()) {
                f->error = q(s);
                return f;
            }
        }
        drain();
        if (t.count() > 0 && t % 1s == Duration::zero())
            (*recorder)->sampleNow();
    }
    (*engine)->shutdown(ShutdownMode::Drain);
    if (Status s = (*recorder)->finish(); !s.isOk()) {
        f->error = q(s);
        return f;
    }
    recorder->reset();

    ReplayOptions replay;
    replay.source = {ReplaySource::Kind::Session, f->live};
    replay.clock = ReplayClock::Virtual;
    BatchingConfig small = options.batching;
    small.maxBatchSize = 4;
    replay.config = small;
    auto outcome = Replayer(f->store, makeEchoBackend(256, 64)).run(replay);
    if (!outcome) {
        f->error = q(outcome.status());
        return f;
    }
    f->replay = outcome->sessionId;
    return f;
}

} // namespace bp::test
