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

#include "engine/config/config_json.h"
#include "engine/exec/engine.h"
#include "engine/model/model_registry.h"
#include "engine/sim/calibration/statistics.h"
#include "engine/store/session_recorder.h"
#include "engine/store/trace_store.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

struct RateResult {
    double seconds = 0;
    std::uint64_t requestRows = 0, batchRows = 0, written = 0, dropped = 0;
    double writerCpuS = 0;
    double pushSeconds = 0; // time spent inside onBatchCompleted (what an executor thread pays)
};

// Pushes batches of `batch` requests for `seconds`; paced at `rowsPerS`
// request rows/s, or as fast as possible when 0.
RateResult logRate(const std::string &db, int batch, double seconds, double rowsPerS,
                   TraceSinkOptions::WriterPriority priority)
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

struct ServingSetup {
    std::shared_ptr<Backend> backend;
    int producers = 1;
    int length = 16;
    int newTokens = 0;
    double seconds = 3;
    int maxBatch = 64;
    std::size_t queueRows = 0; // sink queue capacity; 0 = default
    TraceSinkOptions::WriterPriority priority = TraceSinkOptions::WriterPriority::Nice;
};

// Completed requests/s of a saturated engine, logging on or off.
double servingRate(const std::string &db, bool logging, const ServingSetup &setup, std::uint64_t &dropped)
{
    const int producers = setup.producers;
    const double seconds = setup.seconds;
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
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p)
        threads.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                Request r;
                r.tokens = tokens;
                r.maxNewTokens = setup.newTokens;
                if (!engine
                         ->submit(std::move(r),
                                  [&](Response &&) {
                                      if (measuring.load(std::memory_order_relaxed))
                                          completed.fetch_add(1, std::memory_order_relaxed);
                                  })
                         .isOk())
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
    engine->shutdown(ShutdownMode::Fail); // the queue is full: do not wait for a slow model to drain it
    if (recorder) {
        (void)recorder->finish();
        dropped += recorder->sink()->droppedRows();
    }
    return rate;
}

} // namespace

const StageOptions &storeStage()
{
    static const StageOptions stage{
        "store",
        "[OPTIONS]",
        "trace store: logging rate, serving overhead of logging, trace import time",
        "rate: the trace writer alone, flat out and paced at --rows-per-s. overhead: a model served at\n"
        "saturation with logging off and on in alternating rounds (medians and their ratio). import: the\n"
        "import time of a trace CSV. Every part uses a temporary database, removed afterwards.",
        {
            {"part", "rate|overhead|import|all", "which part to run (default all)"},
            {"seconds", "S", "rate and overhead: seconds per measurement (default 3)"},
            {"batch", "N", "rate: requests per synthetic batch (default 32)"},
            {"rows-per-s", "R", "rate: paced request rows/s (default 200000)"},
            {"writer", "nice|idle|normal", "CPU priority of the writer thread (default nice)"},
            {"producers", "P", "overhead: submitting threads (default 1)"},
            {"rounds", "N", "overhead: rounds of logging off/on (default 3)"},
            {"model", "NAME|FILE.pt", "overhead: the model served (default builtin:echo)"},
            {"preset", "P", "overhead: size preset of a built-in model (default small)"},
            {"device", "D", "overhead: cpu (default), cuda, cuda:N"},
            {"length", "L", "overhead: tokens per request (default 16)"},
            {"new-tokens", "N", "overhead: tokens generated per request by a decoder (default 0)"},
            {"max-batch", "N", "overhead: max batch size (default 64)"},
            {"queue-rows", "N", "overhead: the sink's queue capacity in rows (default: the sink's own)"},
            {"trace", "FILE.csv", "import: the trace (default: the shared Azure trace)"},
            {"repeat", "N", "import: imports timed, median and best reported (default 5)"},
            {"json", "FILE", "write the figures as JSON"},
        }};
    return stage;
}

int runStoreBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, storeStage()); rc >= 0)
        return rc;
    const std::string part = args.str("part", "all");
    const double seconds = args.num("seconds", 3);
    const int batch = int(args.num("batch", 32));
    const double rowsPerS = args.num("rows-per-s", 200000);
    if (seconds <= 0 || batch < 1 || rowsPerS <= 0) {
        std::cerr << "batchpilot-bench store: --seconds, --batch and --rows-per-s must be positive\n";
        return 2;
    }
    nlohmann::json json{{"stage", "store"}};
    const std::string writer = args.str("writer", "nice");
    const auto priority = writer == "idle"     ? TraceSinkOptions::WriterPriority::Idle
                          : writer == "normal" ? TraceSinkOptions::WriterPriority::Normal
                                               : TraceSinkOptions::WriterPriority::Nice;
    if (writer != "idle" && writer != "normal" && writer != "nice") {
        std::cerr << "batchpilot-bench store: --writer must be nice, idle or normal\n";
        return 2;
    }
    json["writer"] = writer;
    TempDir tmp;
    auto db = [&](const std::string &name) {
        const auto p = tmp.path / name;
        fs::remove(p);
        return p.string();
    };

    if (part == "all" || part == "rate") {
        const RateResult max = logRate(db("rate-max.sqlite"), batch, seconds, 0, priority);
        const RateResult paced = logRate(db("rate-paced.sqlite"), batch, seconds, rowsPerS, priority);
        const double maxRate = double(max.written) * batch / (batch + 1) / max.seconds;
        std::printf("store rate  batches of %d requests, %.1f s each\n", batch, seconds);
        std::printf("  as fast as possible: %.0f request rows/s written (%.0f rows/s incl. batch rows), "
                    "%llu rows dropped at the queue\n",
                    maxRate, double(max.written) / max.seconds, (unsigned long long)max.dropped);
        std::printf("  paced at %.0f request rows/s: %llu of %llu rows written, %llu dropped\n", rowsPerS,
                    (unsigned long long)paced.written,
                    (unsigned long long)(paced.requestRows + paced.batchRows),
                    (unsigned long long)paced.dropped);
        // CPU per row does not depend on how busy the machine is: the
        // writer's ceiling on one free core.
        const double cpuPerRowUs = max.written ? max.writerCpuS * 1e6 / double(max.written) : 0;
        const double pacedCpuPerRowUs = paced.written ? paced.writerCpuS * 1e6 / double(paced.written) : 0;
        std::printf(
            "  writer CPU: %.2f us per row flat out (%.0f rows per CPU-second), %.2f us per row paced "
            "(%.0f%% of one core at the paced rate)\n",
            cpuPerRowUs, cpuPerRowUs > 0 ? 1e6 / cpuPerRowUs : 0.0, pacedCpuPerRowUs,
            100 * paced.writerCpuS / paced.seconds);
        const double pushNsPerRow = 1e9 * paced.pushSeconds / double(paced.requestRows + paced.batchRows);
        std::printf("  engine-thread cost (inside onBatchCompleted, paced): %.0f ns per row\n", pushNsPerRow);
        json["rate"] = {
            {"batch", batch},
            {"seconds", seconds},
            {"max_request_rows_per_s", maxRate},
            {"max_dropped", max.dropped},
            {"paced_request_rows_per_s", rowsPerS},
            {"paced_written", paced.written},
            {"paced_offered", paced.requestRows + paced.batchRows},
            {"paced_dropped", paced.dropped},
            {"writer_cpu_us_per_row", max.written ? max.writerCpuS * 1e6 / double(max.written) : 0.0},
            {"paced_writer_cpu_fraction", paced.writerCpuS / paced.seconds},
            {"push_ns_per_row", 1e9 * paced.pushSeconds / double(paced.requestRows + paced.batchRows)}};
    }
    if (part == "all" || part == "overhead") {
        ServingSetup setup;
        setup.producers = int(args.num("producers", 1));
        setup.seconds = seconds;
        setup.length = int(args.num("length", 16));
        setup.newTokens = int(args.num("new-tokens", 0));
        setup.queueRows = std::size_t(args.num("queue-rows", 0));
        setup.maxBatch = int(args.num("max-batch", 64));
        setup.priority = priority;
        ModelSpec spec;
        spec.name = args.str("model", "builtin:echo");
        spec.preset = args.str("preset", "small");
        spec.device = args.str("device", "cpu");
        auto backend = createBackend(spec);
        if (!backend) {
            std::cerr << "batchpilot-bench store: " << backend.status().toString() << "\n";
            return 2;
        }
        setup.backend = *backend;
        const int rounds = int(args.num("rounds", 3));
        std::vector<double> off, on;
        std::uint64_t dropped = 0;
        for (int r = 0; r < rounds; ++r) {
            off.push_back(servingRate(db("off.sqlite"), false, setup, dropped));
            on.push_back(servingRate(db("on-" + std::to_string(r) + ".sqlite"), true, setup, dropped));
        }
        const int producers = setup.producers;
        const double mOff = median(off), mOn = median(on);
        // Each round runs off then on back to back: the median of the
        // per-round ratios is less sensitive to the machine's load drifting.
        std::vector<double> ratios;
        for (std::size_t r = 0; r < off.size(); ++r)
            ratios.push_back(off[r] > 0 ? on[r] / off[r] : 0.0);
        const double mRatio = median(ratios);
        std::printf("store overhead  %s (length %d, %d new tokens) saturated by %d producer(s), %d rounds of "
                    "%.1f s\n",
                    spec.name.c_str(), setup.length, setup.newTokens, producers, rounds, seconds);
        std::printf(
            "  logging off: %.0f req/s   logging on: %.0f req/s (medians)   median of per-round on/off = %.3f"
            "   rows dropped: %llu\n",
            mOff, mOn, mRatio, (unsigned long long)dropped);
        json["overhead"] = {{"model", spec.name},     {"preset", spec.preset},
                            {"length", setup.length}, {"new_tokens", setup.newTokens},
                            {"producers", producers}, {"rounds", rounds},
                            {"off_rps", off},         {"on_rps", on},
                            {"median_off", mOff},     {"median_on", mOn},
                            {"ratio", mRatio},        {"ratios", ratios},
                            {"dropped", dropped}};
    }
    if (part == "all" || part == "import") {
        std::string trace = args.str("trace", "");
        if (trace.empty()) {
            const char *source = std::getenv("BATCHPILOT_SOURCE_DIR");
            trace = std::string(source ? source : ".") + "/resources/traces/azure_llm_conv_2023.csv";
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
                    (unsigned long long)rows, median(times), *std::min_element(times.begin(), times.end()),
                    repeat);
        json["import"] = {{"trace", trace}, {"rows", rows}, {"seconds", times}, {"median_s", median(times)}};
    }
    if (args.has("json")) {
        if (int rc = writeJsonOption(args, json); rc != 0)
            return rc;
    }
    return 0;
}

} // namespace bp::bench
