#include "fidelity_run.h"

#include "engine/replay/replayer.h"
#include "engine/sim/calibration/statistics.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/trace_store.h"
#include "engine/workload/trace_csv.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>

namespace bp::bench {

namespace {

StageError failed(const Status &s)
{
    return StageError{1, "fidelity: " + s.message()};
}

// The model, the trace database and the profile every mode starts from.
struct Bench {
    std::shared_ptr<Backend> backend;
    ModelInfo info;
    std::shared_ptr<TraceStore> store;
    int threads = 0;
    Calibration key;                   // the profile's key and facts
    std::vector<CostObservation> grid; // the profile's measurements
    Calibration profile;               // calibrated on the grid alone
    bool steps = false;                // a decoder with step-level generation
};

// The temporary database goes when the run ends, however it ends. Declared
// before the Bench that holds the store, so the store is closed first.
struct TemporaryDb {
    const FidelityOptions &o;
    ~TemporaryDb()
    {
        if (!o.temporaryDb)
            return;
        std::error_code ec;
        for (const char *suffix : {"", "-wal", "-shm"})
            std::filesystem::remove(o.dbPath + suffix, ec);
    }
};

// 1. calibration: the profile alone (no recorded session), as a new user would start
StageResult<Bench> profileModel(const FidelityOptions &o, FidelityObserver &observer)
{
    Bench b;
    auto backend = createBackend(o.spec);
    if (!backend)
        return failed(backend.status());
    b.backend = *backend;
    b.info = b.backend->info();
    b.steps = b.backend->steps() != nullptr && b.info.generative;
    auto store = TraceStore::open(o.dbPath);
    if (!store)
        return failed(store.status());
    b.store = *store;
    b.threads = o.spec.threads > 0 ? o.spec.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    b.key = Calibration::forModel(b.info, o.spec.preset, b.threads);
    b.key.source = o.fullGrid ? "profile" : "profile (quick)";
    const TimePoint start = SteadyClock::now();
    auto measured =
        measureProfile(b.backend, o.fullGrid ? CalibrationGrid{} : CalibrationGrid::quick(), b.key);
    if (!measured)
        return failed(measured.status());
    b.grid = std::move(*measured);
    auto cal = calibrate(b.key, b.grid);
    if (!cal)
        return failed(cal.status());
    b.profile = std::move(*cal);
    observer.calibrated(b.profile, toSeconds(SteadyClock::now() - start));
    return b;
}

struct Traces {
    std::vector<std::pair<std::string, std::vector<TraceRow>>> rows;
    PrefixTrace prefixed; // --prefix: the trace's blocks
};

// 2. two traces sized to `load` of batch-1 capacity at their mean length
// (--prefix: one prefix-heavy trace).
StageResult<Traces> buildTraces(const FidelityOptions &o, const Bench &b)
{
    auto azure = parseTraceFile(o.azurePath);
    if (!azure)
        return failed(azure.status());
    auto capacityAt = [&](const std::vector<TraceRow> &rows) {
        double meanIn = 0, meanOut = 0;
        for (const TraceRow &r : rows) {
            meanIn += r.inputTokens / double(rows.size());
            meanOut += r.outputTokens / double(rows.size());
        }
        const std::vector<int> want{int(std::lround(meanOut))};
        return 1 / toSeconds(b.profile.cost.batchCost(1, int(std::lround(meanIn)), want).run);
    };
    const ModelInfo &info = b.info;
    Traces t;
    if (o.prefix) {
        t.prefixed = sharedPromptTrace(1000, 1, o.systemPrompt, 7);
        const double rate = o.load * capacityAt(t.prefixed.rows);
        const std::size_t n = std::max<std::size_t>(20, std::size_t(rate * o.seconds));
        t.prefixed = sharedPromptTrace(n, rate, o.systemPrompt, 7);
        t.rows.push_back({"prefix", fitTrace(t.prefixed.rows, o.seconds, 1, info)});
        return t;
    }
    // the Azure rows, lengths scaled, and as many as `load` of capacity takes in `seconds`
    auto sized = fitTrace(azure->rows, 1, o.lengthScale, info);
    const double rate = o.load * capacityAt(sized);
    // A multiple of the static config's batch size: a real-clock replay
    // waits for every completion before it drains, so a partial static
    // batch would keep it waiting forever (docs/benchmarks.md).
    const std::size_t n =
        std::clamp<std::size_t>(std::size_t(rate * o.seconds), 20, azure->rows.size()) / 4 * 4;
    std::vector<TraceRow> window(azure->rows.begin(), azure->rows.begin() + std::ptrdiff_t(n));
    t.rows.push_back({"azure", fitTrace(window, o.seconds, o.lengthScale, info)});
    const int maxLength = std::min(256, info.maxSequenceLength);
    auto bursty = fitTrace(burstyRows(1000, 1, maxLength, 7), 1, 1, info);
    const double burstyRate = o.load * capacityAt(bursty);
    const std::size_t m = std::max<std::size_t>(20, std::size_t(burstyRate * o.seconds)) / 4 * 4;
    t.rows.push_back({"bursty", fitTrace(burstyRows(m, burstyRate, maxLength, 7), o.seconds, 1, info)});
    return t;
}

// Every calibration x cost noise; the chosen one first.
StageResult<std::vector<FidelityMode>> modesFor(const FidelityOptions &o)
{
    std::vector<FidelityMode> modes;
    for (const char *c : {"profile", "sessions"})
        for (CostNoise n : {CostNoise::None, CostNoise::Mean, CostNoise::Drawn})
            modes.push_back({c, n, {}});
    const std::string chosenName = o.calibrationMode + "/" + o.noiseName;
    const auto chosen = std::find_if(modes.begin(), modes.end(),
                                     [&](const FidelityMode &m) { return m.name() == chosenName; });
    if (chosen == modes.end())
        return StageError{2, "fidelity: --calibrate is profile or sessions, --noise none, mean or drawn"};
    std::rotate(modes.begin(), chosen, chosen + 1);
    return modes;
}

// The relative errors of the figures a row compares.
std::vector<std::pair<std::string, double>> errorsOf(const SessionSummary &sim, const TokenFigures &simTokens,
                                                     const SessionSummary &real,
                                                     const TokenFigures &realTokens, bool generative)
{
    std::vector<std::pair<std::string, double>> cell{
        {"throughput", relError(sim.throughputRps, real.throughputRps)},
        {"p50", relError(sim.latencyP50Ms, real.latencyP50Ms)},
        {"p99", relError(sim.latencyP99Ms, real.latencyP99Ms)}};
    if (generative) {
        cell.push_back({"ttft p50", relError(simTokens.ttftP50, realTokens.ttftP50)});
        if (realTokens.tpotP50 > 0)
            cell.push_back({"tpot p50", relError(simTokens.tpotP50, realTokens.tpotP50)});
    }
    return cell;
}

// The real replays of one trace: a session and its observations per config.
struct RealRuns {
    std::vector<std::int64_t> sessions;
    std::vector<SessionObservations> observed;
};

StageResult<RealRuns> replayReal(const Bench &b, const FidelityOptions &o, const std::string &trace,
                                 std::int64_t traceId, const std::vector<NamedConfig> &configs,
                                 FidelityObserver &observer, FidelityResult &result)
{
    RealRuns runs;
    for (const NamedConfig &nc : configs) {
        ReplayOptions ro;
        ro.source = {ReplaySource::Kind::Trace, traceId};
        ro.config = nc.config;
        ro.clock = ReplayClock::Real;
        ro.notes = "fidelity " + trace + " " + nc.name + " (real)";
        result.loads.push_back(loadAverage());
        auto real = Replayer(b.store, b.backend).run(ro);
        if (!real)
            return failed(real.status());
        observer.realReplayed(trace, nc.name);
        runs.sessions.push_back(real->sessionId);
        if (o.repeatReal) {
            // the noise floor: the same config replayed for real again
            ro.notes = "fidelity " + trace + " " + nc.name + " (real, again)";
            auto again = Replayer(b.store, b.backend).run(ro);
            if (!again)
                return failed(again.status());
            const SessionSummary x = b.store->summary(real->sessionId).value();
            const SessionSummary y = b.store->summary(again->sessionId).value();
            const TokenFigures tx = tokenPercentiles(*b.store, real->sessionId);
            const TokenFigures ty = tokenPercentiles(*b.store, again->sessionId);
            for (const auto &[metric, e] : errorsOf(y, ty, x, tx, b.info.generative))
                result.floorErrors.push_back(std::abs(e));
        }
        auto observed = sessionObservations(*b.store, real->sessionId, b.info.generative);
        if (!observed)
            return failed(observed.status());
        runs.observed.push_back(std::move(*observed));
    }
    return runs;
}

// "sessions": the profile and the batch rows of the OTHER configs' real
// runs of this trace (leave-one-out: never the run it predicts).
Result<Calibration> leaveOneOut(const Bench &b, const RealRuns &runs, std::size_t i)
{
    std::vector<CostObservation> obs = b.grid;
    std::vector<double> overheads, stepOverheads, lateness;
    for (std::size_t j = 0; j < runs.observed.size(); ++j) {
        if (j == i)
            continue;
        const SessionObservations &r = runs.observed[j];
        obs.insert(obs.end(), r.batches.begin(), r.batches.end());
        if (r.overheadSamples > 0)
            overheads.push_back(r.overheadS);
        if (r.stepOverheadSamples > 0)
            stepOverheads.push_back(r.stepOverheadS);
        lateness.insert(lateness.end(), r.lateness.begin(), r.lateness.end());
    }
    Calibration k = b.key;
    k.source = "profile + sessions (leave-one-out)";
    k.cost.overheadS = median(overheads);
    k.cost.stepOverheadS = median(stepOverheads);
    k.cost.dispatchLateness = sampleQuantiles(std::move(lateness));
    return calibrate(k, obs);
}

// 3. one config simulated under every mode, against its real run; the
// chosen mode's comparison is the table's row.
StageResult<FidelityRow> simulateConfig(const Bench &b, const std::string &trace, std::int64_t traceId,
                                        std::size_t requests, const NamedConfig &nc, std::size_t i,
                                        const RealRuns &runs, FidelityResult &result)
{
    FidelityRow row;
    row.trace = trace;
    row.config = nc.name;
    row.requests = requests;
    row.realSession = runs.sessions[i];
    row.real = b.store->summary(row.realSession).value();
    row.realTokens = tokenPercentiles(*b.store, row.realSession);
    auto sessions = leaveOneOut(b, runs, i);
    if (!sessions)
        return failed(sessions.status());
    for (std::size_t m = 0; m < result.modes.size(); ++m) {
        FidelityMode &mode = result.modes[m];
        ReplayOptions ro;
        ro.source = {ReplaySource::Kind::Trace, traceId};
        ro.config = nc.config;
        ro.notes = "fidelity " + trace + " " + nc.name + " (simulated, " + mode.name() + ")";
        SimulatedReplay simulator(b.store, mode.calibration == "profile" ? b.profile : *sessions);
        simulator.setCostNoise(mode.noise, 1 + i);
        auto sim = simulator.run(ro);
        if (!sim)
            return failed(sim.status());
        const SessionSummary s = b.store->summary(sim->sessionId).value();
        const TokenFigures st = tokenPercentiles(*b.store, sim->sessionId);
        auto cell = errorsOf(s, st, row.real, row.realTokens, b.info.generative);
        for (const auto &[metric, e] : cell)
            mode.errors.push_back(std::abs(e));
        if (m != 0)
            continue;
        row.simSession = sim->sessionId;
        row.sim = s;
        row.simTokens = st;
        row.errors = std::move(cell);
    }
    return row;
}

void addToTable(FidelityResult &result, FidelityRow row)
{
    for (const auto &[metric, e] : row.errors) {
        result.errors.push_back(std::abs(e));
        if (std::abs(e) > result.worstValue) {
            result.worstValue = std::abs(e);
            result.worstWhere = row.trace + " / " + row.config + " / " + metric;
        }
    }
    result.rows.push_back(std::move(row));
}

// One trace: stored, replayed for real under each config, then simulated.
std::optional<StageError> compareTrace(const Bench &b, const FidelityOptions &o, const Traces &traces,
                                       const std::string &name, const std::vector<TraceRow> &rows,
                                       FidelityObserver &observer, FidelityResult &result)
{
    int longest = 1;
    for (const TraceRow &r : rows)
        longest = std::max(longest, r.inputTokens);
    auto added = o.prefix ? b.store->addTrace(name, "", TraceFormat::Mooncake, rows, 0, traces.prefixed.ids,
                                              traces.prefixed.blockTokens)
                          : b.store->addTrace(name, "", TraceFormat::Plain, rows);
    if (!added)
        return failed(added.status());
    auto configs = o.prefix ? prefixConfigs() : fidelityConfigs(longest, b.steps);
    if (o.configs > 0)
        configs.resize(std::min(configs.size(), o.configs));
    auto real = replayReal(b, o, name, added->id, configs, observer, result);
    if (!real)
        return real.error();
    observer.tableStarted(b.info.generative);
    for (std::size_t i = 0; i < configs.size(); ++i) {
        auto row = simulateConfig(b, name, added->id, rows.size(), configs[i], i, *real, result);
        if (!row)
            return row.error();
        observer.rowFinished(*row, b.info.generative, o.prefix);
        addToTable(result, std::move(*row));
    }
    return std::nullopt;
}

} // namespace

std::string FidelityMode::name() const
{
    return calibration + "/" +
           (noise == CostNoise::None   ? "none"
            : noise == CostNoise::Mean ? "mean"
                                       : "drawn");
}

StageResult<FidelityResult> runFidelity(const FidelityOptions &o, FidelityObserver &observer)
{
    TemporaryDb cleanup{o};
    auto bench = profileModel(o, observer);
    if (!bench)
        return bench.error();
    auto traces = buildTraces(o, *bench);
    if (!traces)
        return traces.error();
    auto modes = modesFor(o);
    if (!modes)
        return modes.error();
    if (o.prefix && !bench->steps)
        return StageError{
            2, "fidelity: --prefix needs a decoder with step-level generation (policy continuous)"};
    FidelityResult result;
    result.info = bench->info;
    result.threads = bench->threads;
    result.calibration = bench->profile;
    result.modes = std::move(*modes);
    for (const auto &[name, rows] : traces->rows)
        if (auto error = compareTrace(*bench, o, *traces, name, rows, observer, result))
            return *error;
    return result;
}

} // namespace bp::bench
