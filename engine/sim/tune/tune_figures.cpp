#include "engine/sim/tune/tuner.h"

#include "engine/config/config_rules.h"
#include "engine/sim/tune/slo_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace bp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string msText(Duration d)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%gms", std::round(toSeconds(d) * 1e5) / 1e2);
    return buf;
}

// Nearest-rank percentile of `sorted` padded with `missing` infinite values.
double percentile(const std::vector<double> &sorted, std::size_t missing, double p)
{
    const std::size_t n = sorted.size() + missing;
    if (n == 0)
        return 0;
    const std::size_t rank = std::max<std::size_t>(1, std::size_t(std::ceil(p * double(n))));
    return rank <= sorted.size() ? sorted[rank - 1] : kInf;
}

// Collects what a simulation's records say, per request.
struct SampleCollector final : EngineObserver {
    TimePoint start;
    std::vector<TuneSample> samples;
    std::size_t batches = 0, batched = 0;
    explicit SampleCollector(TimePoint s) : start(s) {}
    void add(const RequestRecord &r)
    {
        TuneSample s;
        s.arrival = r.arrival - start;
        s.ok = r.status == StatusCode::Ok;
        s.total = r.total;
        s.ttft = r.timeToFirstToken;
        s.tpot = r.timePerOutputToken;
        s.outputTokens = r.outputTokens;
        s.unservable = r.status == StatusCode::OutOfRange;
        s.id = r.id;
        s.status = r.status;
        samples.push_back(s);
    }
    void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord> rs) override
    {
        ++batches;
        batched += std::size_t(b.size);
        for (const RequestRecord &r : rs)
            add(r);
    }
    void onRequestFailed(const RequestRecord &r) override { add(r); }
};

} // namespace

bool TuneSlo::any() const
{
    return e2eP99 > Duration::zero() || tokenLevel();
}

Result<TuneSlo> parseTuneSlo(std::string_view spec)
{
    auto bounds = parseSloBounds(spec, SloSyntax::Percentile);
    if (!bounds)
        return bounds.status();
    return TuneSlo{bounds->e2e, bounds->ttft, bounds->tpot};
}

std::string describe(const TuneSlo &slo)
{
    std::string out;
    auto add = [&](const char *name, Duration d) {
        if (d <= Duration::zero())
            return;
        if (!out.empty())
            out += ", ";
        out += std::string(name) + " <= " + formatDuration(d);
    };
    add("p99", slo.e2eP99);
    add("ttft p99", slo.ttftP99);
    add("tpot p99", slo.tpotP99);
    return out;
}

std::optional<TuneObjective> parseTuneObjective(std::string_view name)
{
    if (name == "goodput")
        return TuneObjective::Goodput;
    if (name == "throughput")
        return TuneObjective::Throughput;
    return std::nullopt;
}

std::string_view tuneObjectiveName(TuneObjective objective)
{
    return objective == TuneObjective::Goodput ? "goodput" : "throughput";
}

TuneFigures figuresOf(std::span<const TuneSample> samples, std::size_t requests, const TuneSlo &slo)
{
    TuneFigures f;
    for (const TuneSample &s : samples)
        f.unservable += s.unservable ? 1 : 0;
    f.requests = std::max(requests, samples.size()) - f.unservable;
    std::vector<double> e2e, ttft, tpot;
    std::size_t failed = f.requests - (samples.size() - f.unservable); // never seen: failed
    if (failed)
        f.failures["not_run"] = failed;
    std::size_t tpotFailed = failed;
    double first = kInf, last = -kInf;
    for (const TuneSample &s : samples) {
        if (s.unservable)
            continue;
        const double arrival = toSeconds(s.arrival);
        first = std::min(first, arrival);
        last = std::max(last, arrival);
        if (!s.ok) {
            ++failed;
            ++tpotFailed;
            ++f.failures[std::string(
                statusCodeName(s.status == StatusCode::Ok ? StatusCode::Internal : s.status))];
            continue;
        }
        ++f.completed;
        const double total = toSeconds(s.total);
        last = std::max(last, arrival + total);
        e2e.push_back(total);
        bool good = slo.e2eP99 <= Duration::zero() || s.total <= slo.e2eP99;
        if (s.ttft > Duration::zero()) {
            ttft.push_back(toSeconds(s.ttft));
            good = good && (slo.ttftP99 <= Duration::zero() || s.ttft <= slo.ttftP99);
            if (s.outputTokens >= 2 && s.tpot > Duration::zero()) {
                tpot.push_back(toSeconds(s.tpot));
                good = good && (slo.tpotP99 <= Duration::zero() || s.tpot <= slo.tpotP99);
            }
        }
        if (good)
            ++f.good;
    }
    for (auto *v : {&e2e, &ttft, &tpot})
        std::sort(v->begin(), v->end());
    f.p50S = percentile(e2e, failed, 0.50);
    f.p99S = percentile(e2e, failed, 0.99);
    f.ttftP50S = ttft.empty() && failed == 0 ? 0 : percentile(ttft, failed, 0.50);
    f.ttftP99S = ttft.empty() && failed == 0 ? 0 : percentile(ttft, failed, 0.99);
    f.tpotP50S = tpot.empty() && tpotFailed == 0 ? 0 : percentile(tpot, tpotFailed, 0.50);
    f.tpotP99S = tpot.empty() && tpotFailed == 0 ? 0 : percentile(tpot, tpotFailed, 0.99);
    const double span = samples.empty() ? 0 : std::max(last - first, 1e-6);
    f.throughputPerS = span > 0 ? double(f.completed) / span : 0;
    f.goodputPerS = span > 0 ? double(f.good) / span : 0;
    f.sloRatio = 0;
    auto bound = [&](Duration b, double p99) {
        if (b > Duration::zero())
            f.sloRatio = std::max(f.sloRatio, p99 / toSeconds(b));
    };
    bound(slo.e2eP99, f.p99S);
    bound(slo.ttftP99, f.ttftP99S);
    bound(slo.tpotP99, f.tpotP99S);
    f.sloMet = f.requests > 0 && f.sloRatio <= 1;
    return f;
}

std::string candidateLabel(const BatchingConfig &c)
{
    if (c.server.kind != ServerKind::BatchPilot)
        return describeServerModel(c.server) +
               (c.server.kind == ServerKind::Triton
                    ? " max_batch_size=" + std::to_string(c.maxBatchSize) + " max_queue_delay_microseconds=" +
                          std::to_string(std::llround(toMicros(c.maxQueueDelay)))
                    : std::string());
    std::string s;
    switch (c.policy) {
    case PolicyKind::None: s = "none"; break;
    case PolicyKind::Static:
        s = "static " + std::to_string(c.staticBatchSize) + " L" + std::to_string(c.staticPaddedLength);
        break;
    case PolicyKind::Dynamic:
    case PolicyKind::Bucketed:
    case PolicyKind::Hybrid: {
        if (c.policy == PolicyKind::Bucketed) {
            s = "bucketed[";
            for (std::size_t i = 0; i < c.bucketEdges.size(); ++i)
                s += (i ? "," : "") + std::to_string(c.bucketEdges[i]);
            s += "]";
        } else if (c.policy == PolicyKind::Hybrid) {
            s = "hybrid ";
            for (std::size_t i = 0; i < c.hybrid.staticSizes.size(); ++i)
                s += (i ? "/" : "") + std::to_string(c.hybrid.staticSizes[i]);
        } else {
            s = c.adaptiveDelay.enabled ? "adaptive" : "dynamic";
        }
        s += " b" + std::to_string(c.maxBatchSize) + " d" + (c.adaptiveDelay.enabled ? "<=" : "") +
             msText(c.adaptiveDelay.enabled ? c.adaptiveDelay.maxDelay : c.maxQueueDelay);
        break;
    }
    case PolicyKind::Continuous:
        s = "continuous seqs" + std::to_string(c.continuous.maxNumSeqs) + " tok" +
            std::to_string(c.continuous.maxNumBatchedTokens);
        if (c.prefixCache.enabled)
            s += " prefix" + std::to_string(c.prefixCache.blockTokens);
        break;
    }
    return s + " x" + std::to_string(c.instances);
}

std::vector<std::size_t> paretoFront(std::span<const TuneCandidate> candidates)
{
    std::vector<std::size_t> order(candidates.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    // By ratio ascending, then throughput descending, then first evaluated;
    // sweep: a point is on the front when its throughput beats every one before.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const TuneFigures &fa = candidates[a].figures, &fb = candidates[b].figures;
        if (fa.sloRatio != fb.sloRatio)
            return fa.sloRatio < fb.sloRatio;
        return fa.throughputPerS > fb.throughputPerS;
    });
    std::vector<std::size_t> front;
    double best = -kInf;
    for (std::size_t i : order) {
        const TuneFigures &f = candidates[i].figures;
        if (f.throughputPerS > best) {
            front.push_back(i);
            best = f.throughputPerS;
        }
    }
    return front;
}

SimulatedSamples simulateSamples(SimulatorOptions so, std::span<const PlannedArrival> arrivals)
{
    so.samplePeriod = Duration::zero();
    SampleCollector collector(so.start);
    collector.samples.reserve(arrivals.size());
    so.observer = &collector;
    SimulatedSamples out;
    out.outcome = Simulator(std::move(so)).run(arrivals);
    out.samples = std::move(collector.samples);
    out.meanBatch = collector.batches ? double(collector.batched) / double(collector.batches) : 0;
    return out;
}

TuneEvaluator simulationEvaluator(const TuneWorkload &workload, const TuneSlo &slo)
{
    auto w = std::make_shared<const TuneWorkload>(workload);
    return [w, slo](const BatchingConfig &config, double speed) {
        SimulatorOptions so = w->model;
        so.config = config;
        SimulatedSamples run;
        if (speed == 1) {
            run = simulateSamples(std::move(so), w->arrivals);
        } else {
            std::vector<PlannedArrival> scaled = w->arrivals;
            for (PlannedArrival &a : scaled)
                a.offset = Duration(std::llround(double(a.offset.count()) / speed));
            run = simulateSamples(std::move(so), scaled);
        }
        if (w->requestOverhead > Duration::zero())
            for (TuneSample &s : run.samples) { // a remote server's path outside its steps
                s.total += w->requestOverhead;
                if (s.ttft > Duration::zero())
                    s.ttft += w->requestOverhead;
            }
        TuneFigures f = figuresOf(run.samples, w->arrivals.size(), slo);
        f.meanBatch = run.meanBatch;
        return f;
    };
}

} // namespace bp
