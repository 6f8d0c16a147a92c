// Three parts, each selectable with --part (default: all):
//  rate      the TraceSink's writer alone: synthetic batches of --batch
//            requests pushed (a) as fast as the queue takes them — the
//            writer's ceiling — and (b) paced at --rows-per-s request rows
//            for --seconds, reporting what was written and dropped;
//  overhead  builtin:echo served at saturation by --producers threads, with
//            logging off and on in alternating rounds (--rounds), medians of
//            completed requests/s and their ratio;
//  import    importing --trace (default: the shared Azure trace) into a fresh
//            store --repeat times; median and best wall time.
// Every part works on a temporary database that is removed afterwards.
#include "store_bench.h"

#include "engine/config_json.h"
#include "engine/engine.h"
#include "engine/store/session_recorder.h"
#include "engine/store/trace_store.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

namespace bp::bench {

namespace {

namespace fs = std::filesystem;

struct TempDir {
    fs::path path;
    TempDir()
    {
        std::string tmpl = (fs::temp_directory_path() / "bp-store-bench-XXXXXX").string();
        path = mkdtemp(tmpl.data()) ? fs::path(tmpl) : fs::temp_directory_path();
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct RateResult {
    double seconds = 0;
    std::uint64_t requestRows = 0, batchRows = 0, written = 0, dropped = 0;
};

// Pushes batches of `batch` requests for `seconds`; paced at `rowsPerS`
// request rows/s, or as fast as possible when 0.
RateResult logRate(const std::string &db, int batch, double seconds, double rowsPerS)
{
    auto store = TraceStore::open(db).value();
    const auto session = store->startSession({}).value();
    auto sink = TraceSink::create(db, session, SteadyClock::now()).value();
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
        sink->onBatchCompleted(b, members);
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
    return r;
}

// Completed requests/s of a saturated echo engine, logging on or off.
double servingRate(const std::string &db, bool logging, int producers, double seconds, std::uint64_t &dropped)
{
    EngineOptions o;
    o.backend = makeEchoBackend();
    o.batching.maxBatchSize = 64;
    o.batching.maxQueueDelay = std::chrono::microseconds(100);
    o.batching.queueCapacity = 65536;
    auto engine = Engine::create(o).value();
    std::unique_ptr<SessionRecorder> recorder;
    if (logging)
        recorder = SessionRecorder::start(TraceStore::open(db).value(), *engine, {}).value();
    std::atomic<std::uint64_t> completed{0};
    std::atomic<bool> measuring{false}, stop{false};
    const std::vector<TokenId> tokens(16, 1);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p)
        threads.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                Request r;
                r.tokens = tokens;
                if (!engine->submit(std::move(r), [&](Response &&) {
                        if (measuring.load(std::memory_order_relaxed))
                            completed.fetch_add(1, std::memory_order_relaxed);
                    }).isOk())
                    std::this_thread::yield();
            }
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(500)); // warm-up
    measuring = true;
    const TimePoint start = SteadyClock::now();
    std::this_thread::sleep_for(fromSeconds(seconds));
    measuring = false;
    const double rate = double(completed.load()) / toSeconds(SteadyClock::now() - start);
    stop = true;
    for (auto &t : threads)
        t.join();
    engine->shutdown();
    if (recorder) {
        (void)recorder->finish();
        dropped += recorder->sink()->droppedRows();
    }
    return rate;
}

} // namespace

int runStoreBench(const Args &args)
{
    const std::vector<std::string> known = {"part", "seconds", "batch", "rows-per-s", "producers",
                                            "rounds", "trace", "repeat", "json"};
    if (auto u = args.unknown(known); !u.empty()) {
        std::cerr << "batchpilot-bench store: unknown option --" << u.front() << "\n";
        return 2;
    }
    const std::string part = args.str("part", "all");
    const double seconds = args.num("seconds", 3);
    const int batch = int(args.num("batch", 32));
    const double rowsPerS = args.num("rows-per-s", 200000);
    if (seconds <= 0 || batch < 1 || rowsPerS <= 0) {
        std::cerr << "batchpilot-bench store: --seconds, --batch and --rows-per-s must be positive\n";
        return 2;
    }
    TempDir tmp;
    nlohmann::json json{{"stage", "store"}};
    auto db = [&](const std::string &name) {
        const auto p = tmp.path / name;
        fs::remove(p);
        return p.string();
    };

    if (part == "all" || part == "rate") {
        const RateResult max = logRate(db("rate-max.sqlite"), batch, seconds, 0);
        const RateResult paced = logRate(db("rate-paced.sqlite"), batch, seconds, rowsPerS);
        const double maxRate = double(max.written) * batch / (batch + 1) / max.seconds;
        std::printf("store rate  batches of %d requests, %.1f s each\n", batch, seconds);
        std::printf("  as fast as possible: %.0f request rows/s written (%.0f rows/s incl. batch rows), "
                    "%llu rows dropped at the queue\n",
                    maxRate, double(max.written) / max.seconds, (unsigned long long)max.dropped);
        std::printf("  paced at %.0f request rows/s: %llu of %llu rows written, %llu dropped\n", rowsPerS,
                    (unsigned long long)paced.written, (unsigned long long)(paced.requestRows + paced.batchRows),
                    (unsigned long long)paced.dropped);
        json["rate"] = {{"batch", batch},
                        {"seconds", seconds},
                        {"max_request_rows_per_s", maxRate},
                        {"max_dropped", max.dropped},
                        {"paced_request_rows_per_s", rowsPerS},
                        {"paced_written", paced.written},
                        {"paced_offered", paced.requestRows + paced.batchRows},
                        {"paced_dropped", paced.dropped}};
    }
    if (part == "all" || part == "overhead") {
        const int producers = int(args.num("producers", 1));
        const int rounds = int(args.num("rounds", 3));
        std::vector<double> off, on;
        std::uint64_t dropped = 0;
        for (int r = 0; r < rounds; ++r) {
            off.push_back(servingRate(db("off.sqlite"), false, producers, seconds, dropped));
            on.push_back(servingRate(db("on-" + std::to_string(r) + ".sqlite"), true, producers, seconds, dropped));
        }
        const double mOff = median(off), mOn = median(on);
        std::printf("store overhead  builtin:echo saturated by %d producer(s), %d rounds of %.1f s\n", producers,
                    rounds, seconds);
        std::printf("  logging off: %.0f req/s   logging on: %.0f req/s   on/off = %.3f   rows dropped: %llu\n",
                    mOff, mOn, mOn / mOff, (unsigned long long)dropped);
        json["overhead"] = {{"producers", producers}, {"rounds", rounds},     {"off_rps", off},
                            {"on_rps", on},           {"median_off", mOff}, {"median_on", mOn},
                            {"ratio", mOn / mOff},    {"dropped", dropped}};
    }
    if (part == "all" || part == "import") {
        std::string trace = args.str("trace", "");
        if (trace.empty()) {
            const char *shared = std::getenv("BATCHPILOT_SHARED_DIR");
            trace = std::string(shared ? shared : "../shared") + "/traces/azure_llm_conv_2023.csv";
        }
        const int repeat = std::max(1, int(args.num("repeat", 5)));
        std::vector<double> times;
        std::uint64_t rows = 0;
        for (int i = 0; i < repeat; ++i) {
            auto store = TraceStore::open(db("import.sqlite")).value();
            const TimePoint start = SteadyClock::now();
            auto r = store->importTrace(trace);
            times.push_back(toSeconds(SteadyClock::now() - start));
            if (!r) {
                std::cerr << "batchpilot-bench store: " << r.status().toString() << "\n";
                return 1;
            }
            rows = r->trace.rows;
        }
        std::printf("store import  %s: %llu rows, median %.3f s, best %.3f s over %d runs\n", trace.c_str(),
                    (unsigned long long)rows, median(times), *std::min_element(times.begin(), times.end()), repeat);
        json["import"] = {{"trace", trace}, {"rows", rows}, {"seconds", times}, {"median_s", median(times)}};
    }
    if (args.has("json")) {
        std::ofstream out(args.str("json", ""));
        if (!out) {
            std::cerr << "batchpilot-bench: cannot write " << args.str("json", "") << "\n";
            return 1;
        }
        out << json.dump(2) << "\n";
    }
    return 0;
}

} // namespace bp::bench
