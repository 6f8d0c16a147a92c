#include "store_run.h"

#include "engine/exec/engine.h"
#include "engine/model/model_registry.h"
#include "engine/sim/calibration/statistics.h"
#include "engine/store/session_recorder.h"
#include "engine/store/trace_store.h"

#include <atomic>
#include <cstdlib>
#include <thread>

namespace bp::bench {

namespace fs = std::filesystem;

namespace {

const char *const kPrefix = "batchpilot-bench store: ";

// Pushes batches of `batch` requests for `seconds`; paced at `rowsPerS`
// request rows/s, or as fast as possible when 0.
RateResult logRate(const std::string &db, int batch, double seconds, double rowsPerS, WriterPriority priority)
{
    auto store = TraceStore::open(db).value();
    const auto session = store->startSession({}).value();
    TraceSinkOptions so;
    so.writerPriority = priority;
    auto sink = TraceSink::create(db, session, SteadyClock::now(), so).value();
    sink->start();
    std::vector<RequestRecord> members(static_cast<std::size_t>(batch));
    BatchRecord b;
    b.size = batch;
    RateResult r;
    const TimePoint start = SteadyClock::now(), end = start + fromSeconds(seconds);
    const Duration perBatch = rowsPerS > 0 ? fromSeconds(batch / rowsPerS) : Duration::zero();
    TimePoint next = start;
    std::uint64_t id = 0;
    for (TimePoint now = start; now < end; now = SteadyClock::now()) {
        if (perBatch > Duration::zero()) {
            if (now < next) {
                std::this_thread::sleep_until(next);
                continue;
            }
            next += perBatch;
        }
        b.id = ++id;
        b.dispatchedAt = now;
        for (auto &m : members) {
            m.id = id * std::uint64_t(batch) + std::uint64_t(&m - members.data());
            m.batchId = id;
            m.arrival = now;
            m.total = std::chrono::microseconds(250);
            m.inputTokens = 64;
        }
        const std::uint64_t droppedBefore = sink->droppedRows();
        const TimePoint pushStart = SteadyClock::now();
        sink->onBatchCompleted(b, members);
        r.pushSeconds += toSeconds(SteadyClock::now() - pushStart);
        // Queue full: let the writer have the CPU instead of spinning on drops.
        if (sink->droppedRows() != droppedBefore)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        r.requestRows += members.size();
        r.batchRows += 1;
    }
    sink->stop(); // writes what is queued: the rate below includes the tail
    r.seconds = toSeconds(SteadyClock::now() - start);
    r.written = sink->writtenRows();
    r.dropped = sink->droppedRows();
    r.writerCpuS = sink->stats().writerCpuSeconds;
    return r;
}

// Completed requests/s of a saturated engine, logging on or off.
double servingRate(const std::string &db, bool logging, const ServingSetup &setup, std::uint64_t &dropped)
{
    EngineOptions o;
    o.backend = setup.backend;
    o.batching.maxBatchSize = setup.maxBatch;
    o.batching.maxQueueDelay = std::chrono::microseconds(100);
    o.batching.queueCapacity = 4096;
    auto engine = Engine::create(o).value();
    std::unique_ptr<SessionRecorder> recorder;
    if (logging) {
        RecorderOptions ro;
        if (setup.queueRows > 0)
            ro.sink.queueCapacity = setup.queueRows;
        ro.sink.writerPriority = setup.priority;
        recorder = SessionRecorder::start(TraceStore::open(db).value(), *engine, {}, ro).value();
    }
    std::atomic<std::uint64_t> completed{0};
    std::atomic<bool> measuring{false}, stop{false};
    const std::vector<TokenId> tokens(static_cast<std::size_t>(setup.length), 1);
    auto onDone = [&](Response &&) {
        if (measuring.load(std::memory_order_relaxed))
            completed.fetch_add(1, std::memory_order_relaxed);
    };
    std::vector<std::thread> threads;
    for (int p = 0; p < setup.producers; ++p)
        threads.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                Request r;
                r.tokens = tokens;
                r.maxNewTokens = setup.newTokens;
                if (!engine->submit(std::move(r), onDone).isOk())
                    std::this_thread::yield();
            }
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(500)); // warm-up
    measuring = true;
    const TimePoint start = SteadyClock::now();
    std::this_thread::sleep_for(fromSeconds(setup.seconds));
    measuring = false;
    const double rate = double(completed.load()) / toSeconds(SteadyClock::now() - start);
    stop = true;
    for (auto &t : threads)
        t.join();
    engine->shutdown(ShutdownMode::Fail); // the queue is full: do not wait for a slow model to drain it
    if (recorder) {
        (void)recorder->finish();
        dropped += recorder->sink()->droppedRows();
    }
    return rate;
}

} // namespace

TempDir::TempDir()
{
    std::string tmpl = (fs::temp_directory_path() / "bp-store-bench-XXXXXX").string();
    path = mkdtemp(tmpl.data()) ? fs::path(tmpl) : fs::temp_directory_path();
}

TempDir::~TempDir()
{
    std::error_code ec;
    fs::remove_all(path, ec);
}

std::string TempDir::fresh(const std::string &name) const
{
    const auto p = path / name;
    fs::remove(p);
    return p.string();
}

RatePart measureRate(const TempDir &tmp, int batch, double seconds, double rowsPerS, WriterPriority priority)
{
    RatePart part;
    part.batch = batch;
    part.seconds = seconds;
    part.rowsPerS = rowsPerS;
    part.max = logRate(tmp.fresh("rate-max.sqlite"), batch, seconds, 0, priority);
    part.paced = logRate(tmp.fresh("rate-paced.sqlite"), batch, seconds, rowsPerS, priority);
    return part;
}

StageResult<std::shared_ptr<Backend>> servingBackend(const ModelSpec &spec)
{
    auto backend = createBackend(spec);
    if (!backend)
        return StageError{2, kPrefix + backend.status().toString()};
    return std::shared_ptr<Backend>(std::move(*backend));
}

OverheadPart measureOverhead(const TempDir &tmp, const ModelSpec &spec, ServingSetup setup, int rounds)
{
    OverheadPart part;
    part.spec = spec;
    part.rounds = rounds;
    for (int r = 0; r < rounds; ++r) {
        part.off.push_back(servingRate(tmp.fresh("off.sqlite"), false, setup, part.dropped));
        part.on.push_back(
            servingRate(tmp.fresh("on-" + std::to_string(r) + ".sqlite"), true, setup, part.dropped));
    }
    part.setup = std::move(setup);
    part.medianOff = median(part.off);
    part.medianOn = median(part.on);
    // Each round runs off then on back to back: the median of the per-round
    // ratios is less sensitive to the machine's load drifting.
    for (std::size_t r = 0; r < part.off.size(); ++r)
        part.ratios.push_back(part.off[r] > 0 ? part.on[r] / part.off[r] : 0.0);
    part.medianRatio = median(part.ratios);
    return part;
}

StageResult<ImportPart> measureImport(const TempDir &tmp, const std::string &trace, int repeat)
{
    ImportPart part;
    part.trace = trace;
    for (int i = 0; i < repeat; ++i) {
        auto store = TraceStore::open(tmp.fresh("import.sqlite")).value();
        const TimePoint start = SteadyClock::now();
        auto r = store->importTrace(trace);
        part.seconds.push_back(toSeconds(SteadyClock::now() - start));
        if (!r)
            return StageError{1, kPrefix + r.status().toString()};
        part.rows = r->trace.rows;
    }
    return part;
}

} // namespace bp::bench
