#include "engine/sim/tune/sim_interval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bp {

LatencyFigures latencyFigures(const std::vector<TuneSample> &samples)
{
    std::vector<double> totals;
    for (const TuneSample &s : samples)
        if (s.ok)
            totals.push_back(toSeconds(s.total));
    LatencyFigures f;
    f.completed = totals.size();
    if (totals.empty())
        return f;
    std::sort(totals.begin(), totals.end());
    auto rank = [&](double q) {
        const auto k = std::size_t(std::max(1.0, std::ceil(q * double(totals.size()))));
        return totals[std::min(totals.size(), k) - 1];
    };
    f.p50S = rank(0.50);
    f.p90S = rank(0.90);
    f.p99S = rank(0.99);
    double sum = 0;
    for (double t : totals)
        sum += t;
    f.meanS = sum / double(totals.size());
    return f;
}

std::optional<double> fitSpread(const Calibration &calibration, PolicyKind policy)
{
    const FitError &e =
        policy == PolicyKind::Continuous ? calibration.iterationError : calibration.batchError;
    if (e.observations == 0 || !std::isfinite(e.rmsRel))
        return std::nullopt;
    return std::clamp(e.rmsRel, 0.0, 0.9);
}

namespace {

LatencyFigures simulatedAt(SimulatorOptions options, std::span<const PlannedArrival> arrivals, double scale)
{
    for (double &c : options.cost.coef)
        c *= scale;
    options.cost.overheadS *= scale;
    options.cost.stepOverheadS *= scale;
    options.onSample = {};
    options.onProgress = {};
    options.cancel = nullptr;
    return latencyFigures(simulateSamples(std::move(options), arrivals).samples);
}

} // namespace

SimulatedInterval simulatedInterval(const SimulatorOptions &options, std::span<const PlannedArrival> arrivals,
                                    double spread)
{
    SimulatedInterval i;
    i.spread = spread;
    i.mid = simulatedAt(options, arrivals, 1.0);
    i.low = simulatedAt(options, arrivals, 1.0 - spread);
    i.high = simulatedAt(options, arrivals, 1.0 + spread);
    // Each figure's range holds the simulation itself (queueing is not
    // monotonic in cost for every percentile and every draw).
    for (auto field :
         {&LatencyFigures::p50S, &LatencyFigures::p90S, &LatencyFigures::p99S, &LatencyFigures::meanS}) {
        const double lo = std::min({i.low.*field, i.mid.*field, i.high.*field});
        const double hi = std::max({i.low.*field, i.mid.*field, i.high.*field});
        i.low.*field = lo;
        i.high.*field = hi;
    }
    return i;
}

namespace {

std::string seconds(double s)
{
    char buf[32];
    if (s >= 1)
        std::snprintf(buf, sizeof buf, "%.2f s", s);
    else
        std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
    return buf;
}

std::string bare(double s, bool inSeconds)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, inSeconds ? "%.2f" : "%.1f", inSeconds ? s : s * 1e3);
    return buf;
}

} // namespace

std::string describeInterval(const SimulatedInterval &i)
{
    std::string out;
    auto add = [&](const char *name, double LatencyFigures::*field) {
        const bool inSeconds = i.mid.*field >= 1;
        out += std::string(out.empty() ? "" : ", ") + name + " " + seconds(i.mid.*field) + " [" +
               bare(i.low.*field, inSeconds) + "-" + bare(i.high.*field, inSeconds) + "]";
    };
    add("p50", &LatencyFigures::p50S);
    add("p90", &LatencyFigures::p90S);
    add("p99", &LatencyFigures::p99S);
    add("mean", &LatencyFigures::meanS);
    return out;
}

std::string describeSpread(const SimulatedInterval &i)
{
    char buf[96];
    std::snprintf(buf, sizeof buf,
                  "with the fit's spread (every cost x%.2f to x%.2f: its rms error): ", 1 - i.spread,
                  1 + i.spread);
    return buf + describeInterval(i);
}

nlohmann::json simulatedIntervalJson(const SimulatedInterval &i, const Calibration &calibration)
{
    auto figures = [](const LatencyFigures &f) {
        return nlohmann::json{{"p50_s", f.p50S}, {"p90_s", f.p90S}, {"p99_s", f.p99S}, {"mean_s", f.meanS}};
    };
    return {{"cost_spread", i.spread},
            {"low", figures(i.low)},
            {"simulated", figures(i.mid)},
            {"high", figures(i.high)},
            {"narrow", narrowIntervalHint(calibration)}};
}

std::string narrowIntervalHint(const Calibration &c)
{
    const std::string model = "--model " + c.model +
                              (c.preset.empty() ? std::string() : " --preset " + c.preset) +
                              (c.threads > 0 ? " --threads " + std::to_string(c.threads) : std::string());
    return "to narrow it, replay some of this trace for real on this machine (batchpilot replay ID --trace " +
           model + " --limit N) and calibrate from that session (batchpilot calibrate " + model +
           " --session SESSION)";
}

} // namespace bp
