#include "engine/sim/calibration/calibration.h"

#include "engine/sim/calibration/statistics.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace bp {

Calibration Calibration::forModel(const ModelInfo &info, const std::string &preset, int threads)
{
    Calibration c;
    c.model = info.name;
    c.preset = info.name.rfind("builtin:", 0) == 0 && info.name != "builtin:echo" ? preset : "";
    c.device = info.device;
    c.dtype = info.dtype;
    c.architecture = info.architecture;
    c.threads = threads;
    c.vocabSize = info.vocabSize;
    c.maxSequenceLength = info.maxSequenceLength;
    c.generative = info.generative;
    c.maxNewTokensLimit = info.maxNewTokensLimit;
    c.parameters = info.parameters;
    // The decoder's positions hold input + generated tokens; echo has none.
    c.positions = info.generative && info.name != "builtin:echo" && info.maxNewTokensLimit > 0
                      ? info.maxNewTokensLimit + 1
                      : 0;
    c.cost.generative = info.generative;
    c.cost.experts = info.experts;
    c.cost.expertsPerToken = info.expertsPerToken;
    return c;
}

ModelInfo Calibration::modelInfo() const
{
    ModelInfo m;
    m.name = model;
    m.device = device;
    m.dtype = dtype;
    m.architecture = architecture;
    m.vocabSize = vocabSize;
    m.maxSequenceLength = maxSequenceLength;
    m.generative = generative;
    m.maxNewTokensLimit = maxNewTokensLimit;
    m.parameters = parameters;
    m.description = "simulated from calibration " + std::to_string(id);
    return m;
}

std::int64_t Calibration::weightBytes() const
{
    const int width = dtype == "float32" ? 4 : dtype == "bfloat16" || dtype == "float16" ? 2 : 0;
    return parameters > 0 ? parameters * width : 0;
}

std::string Calibration::describe() const
{
    if (remote)
        return model + " at " + remote->url + (remote->server.empty() ? "" : " (" + remote->server + ")");
    std::ostringstream s;
    s << model << " (";
    if (!architecture.empty() && preset.empty())
        s << architecture << ", ";
    if (!preset.empty())
        s << preset << ", ";
    s << device << ", ";
    if (dtype != "float32")
        s << dtype << ", ";
    s << threads << (threads == 1 ? " thread)" : " threads)");
    return s.str();
}

CalibrationGrid CalibrationGrid::quick()
{
    CalibrationGrid g;
    g.batchSizes = {1, 4, 16};
    g.lengths = {16, 128, 512};
    g.newTokens = {2, 8};
    g.stepSequences = {1, 8, 32};
    g.repeats = 2;
    return g;
}

Result<Calibration> calibrate(const Calibration &key, std::span<const CostObservation> given)
{
    // A mixture-of-experts model's iterations that were not measured (a
    // recorded session's steps) take the active experts uniform routing
    // gives; those the profile measured are kept for the record.
    std::vector<CostObservation> observations(given.begin(), given.end());
    std::vector<CostModel::ActiveExperts> active;
    const std::size_t X = std::size_t(CostModel::kIterationStart) + 6,
                      T = std::size_t(CostModel::kIterationStart) + 2;
    for (CostObservation &o : observations) {
        if (o.kind != CostObservation::Kind::Iteration || key.cost.experts <= 0)
            continue;
        const double expected =
            CostModel::expectedActiveExperts(o.terms[T], key.cost.experts, key.cost.expertsPerToken);
        if (o.activeExperts >= 0)
            active.push_back({o.terms[T], o.activeExperts, expected});
        else
            o.terms[X] = expected;
    }
    std::sort(active.begin(), active.end(), [](const auto &a, const auto &b) { return a.tokens < b.tokens; });
    // one row per token count: the mean of its measurements
    std::vector<CostModel::ActiveExperts> merged;
    for (std::size_t i = 0; i < active.size();) {
        std::size_t j = i;
        double sum = 0;
        for (; j < active.size() && active[j].tokens == active[i].tokens; ++j)
            sum += active[j].measured;
        merged.push_back({active[i].tokens, sum / double(j - i), active[i].expected});
        i = j;
    }
    active = std::move(merged);
    auto fit = fitCostModel(observations, key.generative);
    if (!fit)
        return fit.status();
    Calibration c = key;
    const double overhead = c.cost.overheadS;
    const double stepOverhead = c.cost.stepOverheadS;
    std::vector<double> lateness = c.cost.dispatchLateness;
    const std::vector<double> concurrency = c.cost.concurrency;
    c.cost = fit->model;
    c.cost.experts = key.cost.experts;
    c.cost.expertsPerToken = key.cost.expertsPerToken;
    c.cost.overheadS = overhead;
    c.cost.stepOverheadS = stepOverhead;
    c.cost.dispatchLateness = std::move(lateness);
    c.cost.concurrency = concurrency;
    c.cost.activeExperts = std::move(active);
    c.error = fit->error;
    c.batchError = fit->batchError;
    c.iterationError = fit->iterationError;
    c.observations = fit->error.observations;
    c.measuredLength = 0;
    for (const CostObservation &o : observations) // pass terms [1, b, b·L, b·L²]
        if ((o.kind == CostObservation::Kind::Batch || o.kind == CostObservation::Kind::Prefill) &&
            o.terms[1] > 0)
            c.measuredLength = std::max(c.measuredLength, int(std::lround(o.terms[2] / o.terms[1])));
    std::vector<double> spreads;
    for (const CostObservation &o : observations)
        if (o.kind == CostObservation::Kind::Batch && o.spread >= 0)
            spreads.push_back(o.spread);
    c.runSpread = spreads.empty() ? -1 : median(std::move(spreads));
    return c;
}

std::optional<std::string> interferenceWarning(const Calibration &c)
{
    std::vector<std::string> signs;
    char buf[200];
    if (c.batchError.observations > 0 && c.batchError.medianRel > kInterferenceFitError) {
        std::snprintf(
            buf, sizeof buf,
            "its fit to whole batches is off by a median %.0f%% (worst %.0f%%; a quiet machine fits "
            "within about %.0f%%)",
            100 * c.batchError.medianRel, 100 * c.batchError.maxRel, 100 * kInterferenceFitError);
        signs.push_back(buf);
    }
    if (c.runSpread > kInterferenceSpread) {
        std::snprintf(
            buf, sizeof buf,
            "the same batch timed again differed by a median %.0f%% (a quiet machine: under %.0f%%)",
            100 * c.runSpread, 100 * kInterferenceSpread);
        signs.push_back(buf);
    }
    if (signs.empty())
        return std::nullopt;
    std::string text = "calibration " + (c.id > 0 ? std::to_string(c.id) + " " : std::string()) +
                       "looks disturbed by other work on the machine: ";
    for (std::size_t i = 0; i < signs.size(); ++i)
        text += (i ? "; " : "") + signs[i];
    text += ". Predictions made with it are off by as much. For a clean calibration: stop other work "
            "(builds, benchmarks, replays, a busy server) until `uptime` shows a load average well below "
            "the core count, then run it again: batchpilot calibrate --model " +
            c.model + (c.preset.empty() ? std::string() : " --preset " + c.preset) +
            (c.threads > 0 ? " --threads " + std::to_string(c.threads) : std::string()) +
            " (the full grid repeats each batch more than --quick); or fit it to a session recorded while "
            "serving (--session ID).";
    return text;
}

nlohmann::json toJson(const Calibration &c)
{
    return {{"format", "batchpilot-calibration"},
            {"version", 1},
            {"id", c.id},
            {"created_at_us", c.createdAtUs},
            {"model", c.model},
            {"preset", c.preset},
            {"device", c.device},
            {"dtype", c.dtype},
            {"architecture", c.architecture},
            {"threads", c.threads},
            {"vocab_size", c.vocabSize},
            {"max_sequence_length", c.maxSequenceLength},
            {"generative", c.generative},
            {"max_new_tokens_limit", c.maxNewTokensLimit},
            {"positions", c.positions},
            {"parameters", c.parameters},
            {"source", c.source},
            {"observations", c.observations},
            {"cost_model", toJson(c.cost)},
            {"fit_error", toJson(c.error)},
            {"batch_fit_error", toJson(c.batchError)},
            {"iteration_fit_error", toJson(c.iterationError)},
            {"run_spread", c.runSpread},
            {"measured_length", c.measuredLength},
            {"remote", c.remote ? toJson(*c.remote) : nlohmann::json()}};
}

Result<Calibration> calibrationFromJson(const nlohmann::json &j)
{
    try {
        if (!j.is_object() || j.value("format", std::string()) != "batchpilot-calibration")
            return Status(StatusCode::InvalidArgument, "not a BatchPilot calibration (no \"format\": "
                                                       "\"batchpilot-calibration\")");
        Calibration c;
        c.id = j.value("id", std::int64_t(0));
        c.createdAtUs = j.value("created_at_us", std::int64_t(0));
        c.model = j.at("model").get<std::string>();
        c.preset = j.value("preset", std::string());
        c.device = j.value("device", std::string("cpu"));
        c.dtype = j.value("dtype", std::string("float32")); // absent before dtypes: float32
        c.architecture = j.value("architecture", std::string());
        c.threads = j.value("threads", 0);
        c.vocabSize = j.value("vocab_size", 256);
        c.maxSequenceLength = j.value("max_sequence_length", 1024);
        c.generative = j.value("generative", false);
        c.maxNewTokensLimit = j.value("max_new_tokens_limit", 0);
        c.positions = j.value("positions", 0);
        c.parameters = j.value("parameters", std::int64_t(0)); // absent before it was kept: unknown
        c.source = j.value("source", std::string());
        c.observations = j.value("observations", std::size_t(0));
        auto cost = costModelFromJson(j.at("cost_model"));
        if (!cost)
            return cost.status();
        c.cost = *cost;
        c.cost.generative = c.generative;
        c.error = fitErrorFromJson(j.value("fit_error", nlohmann::json()));
        c.batchError = fitErrorFromJson(j.value("batch_fit_error", nlohmann::json()));
        c.iterationError = fitErrorFromJson(j.value("iteration_fit_error", nlohmann::json()));
        if (j.contains("remote") && !j["remote"].is_null()) {
            auto remote = remoteCalibrationFromJson(j["remote"]);
            if (!remote)
                return remote.status();
            c.remote = std::move(*remote);
        }
        c.runSpread = j.value("run_spread", -1.0); // absent before it was measured
        c.measuredLength = j.value("measured_length", 0);
        if (c.model.empty() || c.vocabSize < 1 || c.maxSequenceLength < 1 || c.maxNewTokensLimit < 0 ||
            c.positions < 0 || c.parameters < 0)
            return Status(StatusCode::InvalidArgument,
                          "calibration: model, vocab_size, max_sequence_length are "
                          "required and positive");
        return c;
    } catch (const nlohmann::json::exception &e) {
        return Status(StatusCode::InvalidArgument, std::string("not a calibration: ") + e.what());
    }
}

Result<Calibration> loadCalibrationFile(const std::string &path)
{
    std::ifstream in(path);
    if (!in)
        return Status(StatusCode::NotFound, "cannot read calibration file '" + path + "'");
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded())
        return Status(StatusCode::InvalidArgument, path + ": not JSON");
    auto c = calibrationFromJson(j);
    if (!c)
        return Status(c.status().code(), path + ": " + c.status().message());
    return c;
}

} // namespace bp
