#include "engine/sim/tune/tuner.h"

#include "engine/sim/tune/tune_space.h"

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

constexpr double kTie = 0.01;           // objective values within 1% tie
constexpr double kCapacityTie = 0.02;   // capacities within 2% tie
constexpr std::size_t kTournament = 32; // tied candidates in the capacity tournament
using tuning::neighbours;
using tuning::Point;
using tuning::Space;
using tuning::Steps;

bool within(double a, double b, double rel)
{
    if (a == b)
        return true;
    return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
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

} // namespace

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
    // Policy continuous: the prefix cache stays off (its default) unless it
    // pays; on, the default block size first.
    if (ac.policy == PolicyKind::Continuous && bc.policy == PolicyKind::Continuous) {
        const bool ao = ac.prefixCache.enabled, bo = bc.prefixCache.enabled;
        if (ao != bo)
            return !ao;
        const int def = PrefixCacheConfig{}.blockTokens;
        if (ao && (ac.prefixCache.blockTokens == def) != (bc.prefixCache.blockTokens == def))
            return ac.prefixCache.blockTokens == def;
    }
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

Status checkOptions(const TuneOptions &o)
{
    if (!o.slo.any())
        return Status(StatusCode::InvalidArgument, "the tuner needs an SLO with at least one bound");
    if (o.maxInstances < 1 || o.maxInstances > 16)
        return Status(StatusCode::InvalidArgument, "max instances must be in [1, 16]");
    if (o.threads < 1 || o.threads > 16)
        return Status(StatusCode::InvalidArgument, "threads must be in [1, 16]");
    if (o.budget < 1)
        return Status(StatusCode::InvalidArgument, "the budget must be at least one config");
    return Status::ok();
}

// The best candidate in [from, to) (of one policy family, when given).
std::optional<std::size_t> bestIndex(const TuneResult &result, const std::vector<Point> &points,
                                     TuneObjective objective, std::size_t from, std::size_t to,
                                     std::optional<PolicyKind> policy = std::nullopt,
                                     std::optional<bool> adaptive = std::nullopt)
{
    std::optional<std::size_t> best;
    for (std::size_t i = from; i < to; ++i) {
        if (policy && (points[i].policy != *policy || points[i].adaptive != *adaptive))
            continue;
        const TuneCandidate &c = result.candidates[i];
        if (!best || better(c.figures, c.config, result.candidates[*best].figures,
                            result.candidates[*best].config, objective))
            best = i;
    }
    return best;
}

// The coarse grid, thinned evenly when it alone would exceed 3/4 of the budget.
std::vector<Point> coarseGrid(const Space &space, std::size_t budget)
{
    std::vector<Point> grid = space.grid();
    const std::size_t coarseBudget = std::max<std::size_t>(1, budget * 3 / 4);
    if (grid.size() > coarseBudget) {
        std::vector<Point> thin;
        for (std::size_t k = 0; k < coarseBudget; ++k)
            thin.push_back(grid[k * grid.size() / coarseBudget]);
        grid = std::move(thin);
    }
    return grid;
}

// The pattern search's seeds: the best of each policy family but none,
// best family first.
std::vector<std::size_t> familySeeds(const TuneResult &result, const std::vector<Point> &points,
                                     TuneObjective objective)
{
    std::vector<std::size_t> seeds;
    std::vector<std::pair<PolicyKind, bool>> families;
    for (const Point &p : points)
        if (std::find(families.begin(), families.end(), std::pair(p.policy, p.adaptive)) == families.end())
            families.emplace_back(p.policy, p.adaptive);
    for (auto [policy, adaptive] : families)
        if (auto b = bestIndex(result, points, objective, 0, result.candidates.size(), policy, adaptive);
            b && policy != PolicyKind::None)
            seeds.push_back(*b);
    std::stable_sort(seeds.begin(), seeds.end(), [&](std::size_t a, std::size_t b) {
        return better(result.candidates[a].figures, result.candidates[a].config, result.candidates[b].figures,
                      result.candidates[b].config, objective);
    });
    return seeds;
}

} // namespace

Result<TuneResult> tune(const TuneEvaluator &evaluate, const TuneOptions &o)
{
    if (Status s = checkOptions(o); !s)
        return s;
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
    auto bestOf = [&](std::size_t from, std::size_t to, std::optional<PolicyKind> policy = std::nullopt,
                      std::optional<bool> adaptive = std::nullopt) {
        return bestIndex(result, points, o.objective, from, to, policy, adaptive);
    };

    // 1. The coarse grid.
    run(coarseGrid(space, o.budget));
    result.coarse = result.candidates.size();

    // 2. Pattern search from the best of each policy family, best family first.
    const std::vector<std::size_t> seeds = familySeeds(result, points, o.objective);
    for (std::size_t seed : seeds) {
        std::size_t current = seed;
        Steps steps;
        steps.size = std::max(1, points[seed].size / 2);
        while (!cancelled() && result.candidates.size() < o.budget) {
            run(neighbours(points[current], steps, o.maxInstances, space.prefixBlocks()));
            // The current point is always its family's best so far.
            const auto best = bestOf(0, result.candidates.size(), points[seed].policy, points[seed].adaptive);
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
    if (auto best = bestOf(0, result.candidates.size())) {
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

CurrentVerdict judgeAgainstCurrent(const TuneFigures &current, const TuneFigures &pick, double spread)
{
    CurrentVerdict v;
    v.currentMeets = current.sloMet;
    v.margin = std::max(0.01, std::isfinite(spread) ? spread : 0.0);
    v.gain = current.goodputPerS > 0 ? pick.goodputPerS / current.goodputPerS - 1
             : pick.goodputPerS > 0  ? std::numeric_limits<double>::infinity()
                                     : 0.0;
    const bool clearlyMore = v.gain > v.margin;
    if (v.currentMeets)
        v.keep = !(pick.sloMet && clearlyMore);
    else
        v.keep = !(pick.sloMet || clearlyMore);
    return v;
}

} // namespace bp
