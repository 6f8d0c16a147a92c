#include "tuner.h"

#include "engine/config/config_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace bp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The simulator runs `continuous` too (the real ContinuousScheduler over a
// cost-model StepModel); it joins the search for generative models.
constexpr bool kSimulatesContinuous = true;
constexpr double kTie = 0.01;           // objective values within 1% tie
constexpr double kCapacityTie = 0.02;   // capacities within 2% tie
constexpr std::size_t kTournament = 32; // tied candidates in the capacity tournament

bool within(double a, double b, double rel)
{
    if (a == b)
        return true;
    return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

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

// A point of the search space; makeConfig() turns it into a BatchingConfig.
struct Point {
    PolicyKind policy = PolicyKind::Dynamic;
    bool adaptive = false;
    int size = 16;    // max batch / static size / continuous max_num_seqs
    Duration delay{}; // queue delay (adaptive: its max delay)
    int instances = 1;
    int buckets = 0;  // bucketed: the advisor's bucket count
    int tokens = 512; // continuous: max_num_batched_tokens
};

struct Space {
    const TuneOptions &o;
    int longest = 1; // static's padded length
    int median = 1;  // hybrid's max static length

    explicit Space(const TuneOptions &options) : o(options)
    {
        for (int l : o.inputLengths)
            longest = std::max(longest, l);
        if (o.maxLength > 0)
            longest = std::min(longest, o.maxLength);
        const std::vector<int> half = proposeBucketEdges(o.inputLengths, 2);
        median = half.empty() ? longest : std::min(half.front(), longest);
    }

    std::optional<BatchingConfig> makeConfig(const Point &p) const
    {
        BatchingConfig c = o.base;
        c.policy = p.policy;
        c.instances = p.instances;
        c.adaptiveDelay = o.base.adaptiveDelay;
        c.adaptiveDelay.enabled = false;
        c.slo.enabled = false; // the search sets the knobs the controller would move
        switch (p.policy) {
        case PolicyKind::None: break;
        case PolicyKind::Static:
            c.staticBatchSize = p.size;
            c.staticPaddedLength = longest;
            c.staticFlushOnDrain = true;
            break;
        case PolicyKind::Dynamic:
        case PolicyKind::Bucketed:
        case PolicyKind::Hybrid:
            c.maxBatchSize = p.size;
            c.maxQueueDelay = p.delay;
            if (p.adaptive) {
                c.adaptiveDelay.enabled = true;
                c.adaptiveDelay.maxDelay = p.delay;
                c.adaptiveDelay.minDelay = std::min(p.delay, Duration(std::chrono::microseconds(500)));
            }
            if (p.policy == PolicyKind::Bucketed) {
                c.bucketEdges = proposeBucketEdges(o.inputLengths, p.buckets);
                if (c.bucketEdges.size() < 2)
                    return std::nullopt; // one bucket is dynamic
            }
            if (p.policy == PolicyKind::Hybrid) {
                std::vector<int> sizes;
                for (int s : {p.size / 4, p.size / 2, p.size})
                    if (s >= 1 && (sizes.empty() || s > sizes.back()))
                        sizes.push_back(s);
                c.hybrid.staticSizes = sizes;
                c.hybrid.maxStaticLength = median;
                c.hybrid.staticMaxWait = p.delay;
            }
            break;
        case PolicyKind::Continuous:
            c.continuous.maxNumSeqs = p.size;
            c.continuous.maxNumBatchedTokens = p.tokens;
            break;
        }
        if (!validate(c))
            return std::nullopt;
        return c;
    }

    std::vector<Point> grid() const
    {
        using std::chrono::microseconds;
        const std::vector<Duration> delays = {microseconds(500),  microseconds(1000),  microseconds(2000),
                                              microseconds(5000), microseconds(10000), microseconds(20000)};
        std::vector<Point> points;
        for (int inst = 1; inst <= o.maxInstances; ++inst) {
            points.push_back({PolicyKind::None, false, 1, {}, inst, 0, 0});
            for (int b : {2, 4, 8, 16, 32, 64})
                for (Duration d : delays)
                    points.push_back({PolicyKind::Dynamic, false, b, d, inst, 0, 0});
            for (int b : {4, 8, 16, 32, 64})
                for (Duration d : {delays[2], delays[3], delays[4], delays[5]})
                    points.push_back({PolicyKind::Dynamic, true, b, d, inst, 0, 0});
            for (int k : {2, 4})
                for (int b : {4, 16, 64})
                    for (Duration d : {delays[1], delays[3], delays[5]})
                        points.push_back({PolicyKind::Bucketed, false, b, d, inst, k, 0});
            for (int b : {8, 16, 32, 64})
                for (Duration d : {delays[2], delays[4]})
                    points.push_back({PolicyKind::Hybrid, false, b, d, inst, 0, 0});
            for (int b : {2, 4, 8, 16, 32})
                points.push_back({PolicyKind::Static, false, b, {}, inst, 0, 0});
            if (kSimulatesContinuous && o.generative)
                for (int s : {8, 16, 32, 64})
                    for (int t : {256, 1024})
                        points.push_back({PolicyKind::Continuous, false, s, {}, inst, 0, t});
        }
        return points;
    }
};

struct Steps {
    int size = 1;
    double delay = 0.5; // relative
    bool atMinimum() const { return size <= 1 && delay <= 0.0625 + 1e-9; }
    void halve()
    {
        size = std::max(1, size / 2);
        delay = std::max(0.0625, delay / 2);
    }
};

std::vector<Point> neighbours(const Point &p, const Steps &s, int maxInstances)
{
    std::vector<Point> out;
    auto add = [&](Point q) { out.push_back(q); };
    if (p.policy != PolicyKind::None) {
        for (int sign : {-1, 1}) {
            Point q = p;
            q.size = std::clamp(p.size + sign * s.size, 1, 1024);
            if (q.size != p.size)
                add(q);
        }
    }
    const bool hasDelay =
        p.policy == PolicyKind::Dynamic || p.policy == PolicyKind::Bucketed || p.policy == PolicyKind::Hybrid;
    if (hasDelay) {
        for (int sign : {-1, 1}) {
            Point q = p;
            if (p.delay <= Duration::zero())
                q.delay = sign > 0 ? Duration(std::chrono::microseconds(100)) : p.delay;
            else
                q.delay = std::chrono::microseconds(std::llround(toMicros(p.delay) * (1 + sign * s.delay)));
            q.delay = std::clamp(q.delay, Duration::zero(), Duration(std::chrono::seconds(10)));
            if (q.delay != p.delay)
                add(q);
        }
    }
    if (p.policy == PolicyKind::Continuous) {
        for (int sign : {-1, 1}) {
            Point q = p;
            q.tokens = std::clamp(int(std::lround(p.tokens * (1 + sign * s.delay))), 1, 65536);
            if (q.tokens != p.tokens)
                add(q);
        }
    }
    for (int sign : {-1, 1}) {
        Point q = p;
        q.instances = p.instances + sign;
        if (q.instances >= 1 && q.instances <= maxInstances)
            add(q);
    }
    if (p.policy == PolicyKind::Bucketed)
        for (int sign : {-1, 1}) {
            Point q = p;
            q.buckets = p.buckets + sign;
            if (q.buckets >= 2 && q.buckets <= 32)
                add(q);
        }
    return out;
}

double objectiveValue(const TuneFigures &f, TuneObjective objective)
{
    return objective == TuneObjective::Goodput ? f.goodputPerS : f.throughputPerS;
}

// Evaluates `configs` at `speed`, `threads` at a time; stops early when
// cancelled (the missing results stay nullopt). `tick` runs on the calling
// thread after each chunk.
std::vector<std::optional<TuneFigures>> evaluateAll(const TuneEvaluator &evaluate,
                                                    const std::vector<BatchingConfig> &configs, double speed,
                                                    int threads, const std::atomic<bool> *cancel,
                                                    const std::function<void(std::size_t)> &tick)
{
    std::vector<std::optional<TuneFigures>> out(configs.size());
    auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
    const std::size_t chunk = std::size_t(std::max(1, threads)) * 2;
    for (std::size_t begin = 0; begin < configs.size(); begin += chunk) {
        if (cancelled())
            break;
        const std::size_t end = std::min(configs.size(), begin + chunk);
        if (threads <= 1) {
            for (std::size_t i = begin; i < end && !cancelled(); ++i)
                out[i] = evaluate(configs[i], speed);
        } else {
            std::atomic<std::size_t> next{begin};
            auto work = [&] {
                for (std::size_t i; (i = next.fetch_add(1)) < end && !cancelled();)
                    out[i] = evaluate(configs[i], speed);
            };
            std::vector<std::thread> pool;
            for (int t = 1; t < threads && std::size_t(t) < end - begin; ++t)
                pool.emplace_back(work);
            work();
            for (std::thread &t : pool)
                t.join();
        }
        if (tick)
            tick(std::size_t(std::count_if(out.begin() + std::ptrdiff_t(begin),
                                           out.begin() + std::ptrdiff_t(end),
                                           [](const auto &f) { return f.has_value(); })));
    }
    return out;
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
        s.outputTokens = r.outputTokens;
        s.unservable = r.status == StatusCode::OutOfRange;
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
    auto bad = [&](const std::string &why) {
        return Status(
            StatusCode::InvalidArgument,
            "--slo '" + std::string(spec) + "': " + why +
                " (expected e.g. 'p99<=200ms' or 'ttft_p99<=500ms,tpot_p99<=50ms'; units us, ms, s)");
    };
    TuneSlo slo;
    std::size_t pos = 0;
    while (true) {
        const std::size_t comma = std::min(spec.find(',', pos), spec.size());
        std::string item(spec.substr(pos, comma - pos));
        item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
        if (item.empty())
            return bad("empty item");
        const std::size_t le = item.find("<=");
        if (le == std::string::npos)
            return bad("'" + item + "' has no '<='");
        const std::string key = item.substr(0, le), value = item.substr(le + 2);
        Duration *target = key == "p99" || key == "e2e_p99" ? &slo.e2eP99
                           : key == "ttft_p99"              ? &slo.ttftP99
                           : key == "tpot_p99"              ? &slo.tpotP99
                                                            : nullptr;
        if (!target)
            return bad("unknown metric '" + key + "' (p99, ttft_p99 or tpot_p99)");
        if (*target > Duration::zero())
            return bad("'" + key + "' given twice");
        const char *begin = value.c_str();
        char *end = nullptr;
        const double number = std::strtod(begin, &end);
        if (end == begin)
            return bad("'" + item + "' has no number");
        const std::string unit(end);
        const double scale = unit == "us" || unit == "µs" ? 1e-6 : unit == "ms" ? 1e-3 : unit == "s" ? 1 : 0;
        if (scale == 0)
            return bad("'" + item + "' needs a unit: us, ms or s");
        if (!(number > 0) || !std::isfinite(number) || number * scale > 86400)
            return bad("'" + item + "' must be positive (and at most a day)");
        *target = fromSeconds(number * scale);
        if (*target <= Duration::zero())
            return bad("'" + item + "' is below a nanosecond");
        if (comma == spec.size())
            break;
        pos = comma + 1;
    }
    return slo;
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

std::vector<int> proposeBucketEdges(std::span<const int> lengths, int buckets)
{
    std::vector<int> sorted(lengths.begin(), lengths.end());
    if (sorted.empty())
        return {};
    std::sort(sorted.begin(), sorted.end());
    buckets = std::clamp(buckets, 1, 32);
    std::vector<int> edges;
    const std::size_t n = sorted.size();
    for (int i = 1; i <= buckets; ++i) {
        // Nearest rank: the smallest length with at least i/buckets of them at or below it.
        const std::size_t rank =
            std::max<std::size_t>(1, (n * std::size_t(i) + std::size_t(buckets) - 1) / std::size_t(buckets));
        const int edge = std::clamp(sorted[rank - 1], 1, 65536);
        if (edges.empty() || edge > edges.back())
            edges.push_back(edge);
    }
    return edges;
}

TuneFigures figuresOf(std::span<const TuneSample> samples, std::size_t requests, const TuneSlo &slo)
{
    TuneFigures f;
    for (const TuneSample &s : samples)
        f.unservable += s.unservable ? 1 : 0;
    f.requests = std::max(requests, samples.size()) - f.unservable;
    std::vector<double> e2e, ttft, tpot;
    std::size_t failed = f.requests - (samples.size() - f.unservable); // never seen: failed
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
            if (s.outputTokens >= 2) {
                const Duration perToken = (s.total - s.ttft) / (s.outputTokens - 1);
                tpot.push_back(toSeconds(perToken));
                good = good && (slo.tpotP99 <= Duration::zero() || perToken <= slo.tpotP99);
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

bool better(const TuneFigures &a, const BatchingConfig &ac, const TuneFigures &b, const BatchingConfig &bc,
            TuneObjective objective)
{
    if (objective == TuneObjective::Throughput) {
        if (a.sloMet != b.sloMet)
            return a.sloMet;
        if (!a.sloMet && a.sloRatio != b.sloRatio)
            return a.sloRatio < b.sloRatio; // none meets it: the nearest
    }
    const double va = objectiveValue(a, objective), vb = objectiveValue(b, objective);
    if (!within(va, vb, kTie))
        return va > vb;
    if (a.sloRatio != b.sloRatio)
        return a.sloRatio < b.sloRatio;
    if (ac.instances != bc.instances)
        return ac.instances < bc.instances;
    return ac.maxBatchSize < bc.maxBatchSize && ac.policy == bc.policy;
}

CapacityResult findCapacity(const TuneEvaluator &evaluate, const BatchingConfig &config,
                            const std::atomic<bool> *cancel)
{
    CapacityResult r;
    auto meets = [&](double s) {
        ++r.probes;
        return evaluate(config, s).sloMet;
    };
    auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
    double lo = 0, hi = 0;
    if (meets(1)) {
        lo = 1;
        hi = 2;
        while (hi <= 4096 && !cancelled() && meets(hi)) {
            lo = hi;
            hi *= 2;
        }
        if (hi > 4096) {
            r.speed = lo;
            return r;
        }
    } else {
        hi = 1;
        for (double s = 0.5; s >= 1.0 / 64 && !cancelled(); s /= 2) {
            if (meets(s)) {
                lo = s;
                break;
            }
            hi = s;
        }
        if (lo == 0)
            return r;
    }
    while (hi / lo > 1 + kCapacityTie && !cancelled()) {
        const double mid = std::sqrt(lo * hi);
        (meets(mid) ? lo : hi) = mid;
    }
    r.speed = lo;
    return r;
}

TuneEvaluator simulationEvaluator(const TuneWorkload &workload, const TuneSlo &slo)
{
    auto w = std::make_shared<const TuneWorkload>(workload);
    return [w, slo](const BatchingConfig &config, double speed) {
        SimulatorOptions so;
        so.config = config;
        so.limits = w->limits;
        so.cost = w->cost;
        so.output = w->output;
        so.positions = w->positions;
        so.costNoise = w->noise;
        so.noiseSeed = w->noiseSeed;
        so.samplePeriod = Duration::zero();
        SampleCollector collector(so.start);
        collector.samples.reserve(w->arrivals.size());
        so.observer = &collector;
        SimOutcome outcome;
        if (speed == 1) {
            outcome = Simulator(so).run(w->arrivals);
        } else {
            std::vector<SimArrival> scaled = w->arrivals;
            for (SimArrival &a : scaled)
                a.offset = Duration(std::llround(double(a.offset.count()) / speed));
            outcome = Simulator(so).run(scaled);
        }
        TuneFigures f = figuresOf(collector.samples, w->arrivals.size(), slo);
        f.meanBatch = collector.batches ? double(collector.batched) / double(collector.batches) : 0;
        return f;
    };
}

namespace {

// Among the candidates tied with `best` (objective within 1%, the same SLO
// verdict; at most kTournament of them, spread over the evaluation order),
// the one that still meets the SLO at the highest load: a bisection on the
// speed factor that every survivor meets (`lo`) and none met (`hi`),
// probing all survivors at each step and keeping those that pass; when one
// is left its own bisection goes on to 2%. Survivors tied to 2% keep their
// ranking. Sets result.recommended; returns its capacity and the probes.
CapacityResult tournament(const TuneEvaluator &evaluate, const TuneOptions &o, TuneResult &result,
                          std::size_t best, const std::function<void(std::size_t)> &report)
{
    const TuneCandidate &b = result.candidates[best];
    if (!b.figures.sloMet) {
        // Nothing tied meets it at this load: how far must the load fall?
        CapacityResult cap = findCapacity(evaluate, b.config, o.cancel);
        report(cap.probes);
        return cap;
    }
    auto rank = [&](std::size_t x, std::size_t y) {
        return better(result.candidates[x].figures, result.candidates[x].config, result.candidates[y].figures,
                      result.candidates[y].config, o.objective);
    };
    std::vector<std::size_t> tied;
    for (std::size_t i = 0; i < result.candidates.size(); ++i) {
        const TuneCandidate &c = result.candidates[i];
        if (c.figures.sloMet &&
            within(objectiveValue(c.figures, o.objective), objectiveValue(b.figures, o.objective), kTie))
            tied.push_back(i);
    }
    if (tied.size() > kTournament) {
        std::vector<std::size_t> spread;
        for (std::size_t k = 0; k < kTournament; ++k)
            spread.push_back(tied[k * tied.size() / kTournament]);
        if (std::find(spread.begin(), spread.end(), best) == spread.end())
            spread.back() = best;
        tied = std::move(spread);
    }
    std::stable_sort(tied.begin(), tied.end(), rank);
    CapacityResult out;
    double lo = 1, hi = 0; // hi = 0: no load seen to fail yet
    auto cancelled = [&] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };
    while (!cancelled()) {
        if (hi > 0 && hi / lo <= 1 + kCapacityTie)
            break;
        if (hi == 0 && lo >= 4096)
            break;
        const double mid = hi > 0 ? std::sqrt(lo * hi) : 2 * lo;
        std::vector<BatchingConfig> configs;
        for (std::size_t i : tied)
            configs.push_back(result.candidates[i].config);
        const auto figures = evaluateAll(evaluate, configs, mid, o.threads, o.cancel, report);
        std::vector<std::size_t> passed;
        for (std::size_t k = 0; k < tied.size(); ++k) {
            if (figures[k])
                ++out.probes;
            if (figures[k] && figures[k]->sloMet)
                passed.push_back(tied[k]);
        }
        if (cancelled())
            break;
        if (passed.empty()) {
            hi = mid;
        } else {
            tied = std::move(passed);
            lo = mid;
        }
    }
    result.recommended = tied.front();
    out.speed = lo;
    return out;
}

} // namespace

Result<TuneResult> tune(const TuneEvaluator &evaluate, const TuneOptions &o)
{
    if (!o.slo.any())
        return Status(StatusCode::InvalidArgument, "the tuner needs an SLO with at least one bound");
    if (o.maxInstances < 1 || o.maxInstances > 16)
        return Status(StatusCode::InvalidArgument, "max instances must be in [1, 16]");
    if (o.threads < 1 || o.threads > 16)
        return Status(StatusCode::InvalidArgument, "threads must be in [1, 16]");
    if (o.budget < 1)
        return Status(StatusCode::InvalidArgument, "the budget must be at least one config");
    const TimePoint wallStart = SteadyClock::now();
    TuneResult result;
    const Space space(o);
    std::vector<Point> points;  // per candidate
    std::set<std::string> seen; // config keys
    auto cancelled = [&] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };
    std::size_t done = 0;
    const std::size_t capacityEstimate = o.capacity ? 3 * kTournament : 0;
    auto report = [&](std::size_t more) {
        done += more;
        if (o.progress)
            o.progress(done, std::max(done, o.budget + capacityEstimate));
    };

    // Evaluates the new configs among `batch` (deduplicated, within budget).
    auto run = [&](const std::vector<Point> &batch) {
        std::vector<BatchingConfig> configs;
        std::vector<Point> kept;
        for (const Point &p : batch) {
            if (result.candidates.size() + configs.size() >= o.budget)
                break;
            auto c = space.makeConfig(p);
            if (!c)
                continue;
            if (!seen.insert(toJson(*c).dump()).second)
                continue;
            configs.push_back(*c);
            kept.push_back(p);
        }
        const auto figures = evaluateAll(evaluate, configs, 1.0, o.threads, o.cancel, report);
        for (std::size_t i = 0; i < configs.size(); ++i) {
            if (!figures[i])
                continue;
            result.candidates.push_back({configs[i], *figures[i], candidateLabel(configs[i]), false});
            points.push_back(kept[i]);
        }
    };
    auto bestIndex = [&](std::size_t from, std::size_t to, std::optional<PolicyKind> policy = std::nullopt,
                         std::optional<bool> adaptive = std::nullopt) {
        std::optional<std::size_t> best;
        for (std::size_t i = from; i < to; ++i) {
            if (policy && (points[i].policy != *policy || points[i].adaptive != *adaptive))
                continue;
            const TuneCandidate &c = result.candidates[i];
            if (!best || better(c.figures, c.config, result.candidates[*best].figures,
                                result.candidates[*best].config, o.objective))
                best = i;
        }
        return best;
    };

    // 1. The coarse grid, thinned evenly when it alone would exceed 3/4 of the budget.
    std::vector<Point> grid = space.grid();
    const std::size_t coarseBudget = std::max<std::size_t>(1, o.budget * 3 / 4);
    if (grid.size() > coarseBudget) {
        std::vector<Point> thin;
        for (std::size_t k = 0; k < coarseBudget; ++k)
            thin.push_back(grid[k * grid.size() / coarseBudget]);
        grid = std::move(thin);
    }
    run(grid);
    result.coarse = result.candidates.size();

    // 2. Pattern search from the best of each policy family, best family first.
    std::vector<std::size_t> seeds;
    {
        std::vector<std::pair<PolicyKind, bool>> families;
        for (const Point &p : points)
            if (std::find(families.begin(), families.end(), std::pair(p.policy, p.adaptive)) ==
                families.end())
                families.emplace_back(p.policy, p.adaptive);
        for (auto [policy, adaptive] : families)
            if (auto b = bestIndex(0, result.candidates.size(), policy, adaptive);
                b && policy != PolicyKind::None)
                seeds.push_back(*b);
        std::stable_sort(seeds.begin(), seeds.end(), [&](std::size_t a, std::size_t b) {
            return better(result.candidates[a].figures, result.candidates[a].config,
                          result.candidates[b].figures, result.candidates[b].config, o.objective);
        });
    }
    for (std::size_t seed : seeds) {
        std::size_t current = seed;
        Steps steps;
        steps.size = std::max(1, points[seed].size / 2);
        while (!cancelled() && result.candidates.size() < o.budget) {
            run(neighbours(points[current], steps, o.maxInstances));
            // The current point is always its family's best so far.
            const auto best =
                bestIndex(0, result.candidates.size(), points[seed].policy, points[seed].adaptive);
            if (best && *best != current) {
                current = *best;
                continue;
            }
            if (steps.atMinimum())
                break;
            steps.halve();
        }
        if (cancelled() || result.candidates.size() >= o.budget)
            break;
    }
    result.cancelled = cancelled();

    // 3. The recommendation: the best, or among its ties the one with the most headroom.
    if (auto best = bestIndex(0, result.candidates.size())) {
        result.recommended = *best;
        if (o.capacity && !result.cancelled) {
            const CapacityResult cap = tournament(evaluate, o, result, *best, report);
            result.capacity = cap.speed;
            result.probes += cap.probes;
        }
        result.cancelled = cancelled();
    }
    for (const TuneCandidate &c : result.candidates)
        result.anyMet = result.anyMet || c.figures.sloMet;
    result.pareto = paretoFront(result.candidates);
    for (std::size_t i : result.pareto)
        result.candidates[i].pareto = true;
    result.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    return result;
}

} // namespace bp
