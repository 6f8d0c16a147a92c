// The remote fit and the limits a probe's scrapes show
// (remote_calibration.h); its JSON is remote_calibration_json.cpp.
#include "engine/sim/calibration/remote_calibration.h"

#include "engine/sim/calibration/least_squares.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace bp {

namespace {

constexpr const char *kTermNames[ProbeObservation::kTerms] = {
    "request", "step", "per_sequence", "per_token", "per_attention", "per_decode_context", "per_saved_cell"};
constexpr const char *kTermMeanings[ProbeObservation::kTerms] = {
    "o: per request, outside the steps (HTTP, tokenisation, network, the first token's delivery)",
    "s0: per step (its launch and the serving path between steps)",
    "s1: per sequence in a step",
    "s2: per token fed in a step (prompt chunks and decodes)",
    "s3: per token x the context it attends to",
    "s7: per decode x its context, beyond s3 (a decode reads its whole KV cache for one token)",
    "s8: per KV cell the server copies out of its cache as a request starts (llama-server saves its idle "
    "slots into its RAM prompt cache)"};

double medianOf(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

FitError errorOver(const std::vector<double> &rel)
{
    FitError e;
    e.observations = rel.size();
    if (rel.empty())
        return e;
    std::vector<double> sorted = rel;
    std::sort(sorted.begin(), sorted.end());
    e.medianRel = medianOf(sorted);
    e.maxRel = sorted.back();
    double sq = 0;
    for (double r : sorted)
        sq += r * r;
    e.rmsRel = std::sqrt(sq / double(sorted.size()));
    return e;
}

// The residuals' sample: the probe sees ~1,000 steps, and a stall in one of
// hundreds is what a short request's TPOT p99 meets, so the remote fit keeps
// finer shares than a local calibration's 101.
constexpr std::size_t kStepSamples = 1001;

// A step row's measured / predicted, once per step it holds (residuals):
// a decode block's steps each their own (its gap over the block's predicted
// mean step) when they look like single steps, else the row's ratio.
void addStepRatios(const ProbeObservation &o, double predicted, std::vector<double> &out)
{
    const double n = std::max(1.0, std::round(o.terms[1]));
    const double least = o.seconds / n / 5;
    // A gap under a fifth of the mean step is two events read in one piece
    // (or written so): it joins the gap before it, and the two share it.
    // When a quarter of the gaps are such, the stream comes in bursts: the
    // gaps are the writes, not the steps, and the row's ratio stands.
    const auto bursts = std::count_if(o.steps.begin(), o.steps.end(), [&](double g) { return g < least; });
    if (o.steps.size() != std::size_t(n) || bursts * 4 >= std::ptrdiff_t(o.steps.size())) {
        out.insert(out.end(), std::size_t(n), o.seconds / predicted);
        return;
    }
    std::vector<std::pair<double, int>> groups; // seconds, steps
    for (double g : o.steps)
        if (!groups.empty() && (g < least || groups.back().first < least))
            groups.back().first += g, ++groups.back().second;
        else
            groups.emplace_back(g, 1);
    for (const auto &[seconds, steps] : groups)
        out.insert(out.end(), std::size_t(steps), seconds / steps * n / predicted);
}

// Δ of vLLM's iteration-token histogram between two scrapes: bucket le -> count.
std::map<double, double> bucketDelta(const prom::Exposition *first, const prom::Exposition *last)
{
    std::map<double, double> out;
    auto add = [&](const prom::Exposition *e, double sign) {
        if (!e)
            return;
        for (const prom::Sample &s : e->samples)
            if (s.name == "vllm:iteration_tokens_total_bucket")
                if (auto le = s.labels.find("le"); le != s.labels.end()) {
                    const double edge = le->second == "+Inf" ? std::numeric_limits<double>::infinity()
                                                             : std::strtod(le->second.c_str(), nullptr);
                    out[edge] += sign * s.value;
                }
    };
    add(last, 1);
    add(first, -1);
    return out;
}

} // namespace

ObservedLimits observedLimits(const std::vector<ProbeScrape> &scrapes, const prom::Exposition *first,
                              const prom::Exposition *last)
{
    ObservedLimits l;
    std::vector<double> kv;
    for (const ProbeScrape &s : scrapes) {
        ++l.scrapes;
        if (!s.sample.error.empty()) {
            ++l.scrapeErrors;
            continue;
        }
        if (s.sample.running)
            l.maxRunning = std::max(l.maxRunning.value_or(0), *s.sample.running);
        if (s.sample.tokensPerStep)
            l.maxTokensPerStep = std::max(l.maxTokensPerStep.value_or(0), *s.sample.tokensPerStep);
        if (s.sample.kvUsage && *s.sample.kvUsage >= 0.02 && s.tokensInFlight > 0)
            kv.push_back(s.tokensInFlight / *s.sample.kvUsage);
    }
    for (const ProbeScrape &s : scrapes)
        if (l.maxRunning && s.sample.running && s.sample.waiting && *s.sample.waiting > 0 &&
            *s.sample.running >= *l.maxRunning)
            l.runningIsCap = true;
    if (!kv.empty()) {
        l.kvCapacityTokens = medianOf(kv);
        l.kvSamples = kv.size();
    }
    const auto delta = bucketDelta(first, last);
    if (const auto inf = delta.find(std::numeric_limits<double>::infinity());
        inf != delta.end() && inf->second > 0)
        for (const auto &[edge, count] : delta)
            if (std::isfinite(edge) && count >= inf->second) {
                l.tokensPerStepBound = edge;
                break;
            }
    return l;
}

double predictRemote(const RemoteFit &fit, const ProbeObservation &row)
{
    double p = 0;
    for (std::size_t i = 0; i < fit.terms.size() && i < row.terms.size(); ++i)
        p += fit.terms[i].value * row.terms[i];
    return p;
}

Result<RemoteFit> fitRemote(const std::vector<ProbeObservation> &rows)
{
    const auto usable = [](const ProbeObservation &o) { return o.seconds > 0 && std::isfinite(o.seconds); };
    // The saved cells (s8) are a term only where some row has them (a
    // llama-server's probe): the other servers' fits are the six terms
    // they were.
    constexpr std::size_t kSaved = ProbeObservation::kTerms - 1;
    const bool saves = std::any_of(rows.begin(), rows.end(), [&](const ProbeObservation &o) {
        return usable(o) && o.terms[kSaved] > 0;
    });
    const std::size_t columns = saves ? kSaved + 1 : kSaved;
    // One weighted non-negative fit over the usable rows `use` keeps.
    const auto solve = [&](const std::vector<bool> &use) -> Result<LeastSquaresFit> {
        std::vector<std::vector<double>> a;
        std::vector<double> y, w;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (!use[i])
                continue;
            a.emplace_back(rows[i].terms.begin(), rows[i].terms.begin() + std::ptrdiff_t(columns));
            y.push_back(rows[i].seconds);
            w.push_back(1 / (rows[i].seconds * rows[i].seconds)); // relative error
        }
        if (a.size() < columns)
            return Status(StatusCode::InvalidArgument, "the probe measured " + std::to_string(a.size()) +
                                                           " usable rows; the fit needs at least " +
                                                           std::to_string(columns));
        return fitNonNegative(a, y, w);
    };
    std::vector<bool> use(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i)
        use[i] = usable(rows[i]);
    auto fit = solve(use);
    if (!fit)
        return fit.status();
    const auto predict = [&](const LeastSquaresFit &f, const ProbeObservation &o) {
        double p = 0;
        for (std::size_t i = 0; i < o.terms.size() && i < f.coef.size(); ++i)
            p += f.coef[i] * o.terms[i];
        return p;
    };
    // A row far out of the others (Tukey's far-out fences on measured /
    // predicted, 3 interquartile ranges, and a factor of 2 from the median
    // at least) is a stall the probe met once —
    // another process, the server's own housekeeping — not a cost: it is
    // left out of the fit and of the residuals a simulation draws from
    // (drawn once in every few dozen steps, a 5x row made a 4-slot
    // llama-server prediction's TPOT p50 38 % long), and kept in the errors.
    std::vector<double> ratio(rows.size(), 0), ratios; // measured / predicted: by row, and sorted
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (use[i])
            ratios.push_back(ratio[i] = rows[i].seconds / std::max(predict(*fit, rows[i]), 1e-12));
    std::size_t setAside = 0;
    if (ratios.size() >= 8) {
        std::sort(ratios.begin(), ratios.end());
        const auto at = [&](double q) {
            const double x = q * double(ratios.size() - 1);
            const std::size_t k = std::size_t(x);
            return k + 1 < ratios.size() ? ratios[k] + (x - double(k)) * (ratios[k + 1] - ratios[k])
                                         : ratios[k];
        };
        // ... and at least a factor of 2 from the median: rows that agree
        // closely (an exact or a lightly noisy server) leave no narrow
        // fence for an ordinary row to fall outside.
        const double q1 = at(0.25), q3 = at(0.75), mid = at(0.5);
        const double lo = std::min(q1 - 3 * (q3 - q1), mid / 2), hi = std::max(q3 + 3 * (q3 - q1), 2 * mid);
        std::vector<bool> kept = use;
        for (std::size_t i = 0; i < rows.size(); ++i)
            if (use[i] && (ratio[i] < lo || ratio[i] > hi))
                kept[i] = false, ++setAside;
        if (setAside > 0 && ratios.size() - setAside >= 2 * columns) {
            if (auto refit = solve(kept)) {
                fit = std::move(refit);
                use = std::move(kept);
            } else {
                setAside = 0;
            }
        } else {
            setAside = 0;
        }
    }
    // s8 is fitted from the few rows that hold a request's start, and a
    // stall in one of them fits exactly as saved cells (so no row looks far
    // out): a 4-slot llama-server calibration priced a cell 888 us (8-21 us
    // in every other, and in the server's log), and its prediction spent ~90
    // ms at each task start. Where three rows or more hold saved cells, the
    // one without which s8 falls to under half is set aside as a stall.
    // (Again, up to three rows: stalls come in bursts on a busy machine.)
    for (int stall = 0; stall < 3 && saves && fit->coef[kSaved] > 0; ++stall) {
        std::size_t worst = rows.size(), holding = 0;
        double least = fit->coef[kSaved];
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (!use[i] || rows[i].terms[kSaved] <= 0)
                continue;
            ++holding;
            std::vector<bool> without = use;
            without[i] = false;
            if (auto f = solve(without); f && f->coef[kSaved] < least)
                least = f->coef[kSaved], worst = i;
        }
        if (holding < 3 || worst == rows.size() || 2 * least >= fit->coef[kSaved])
            break;
        use[worst] = false;
        auto refit = solve(use);
        if (!refit) {
            use[worst] = true;
            break;
        }
        fit = std::move(refit);
        ++setAside;
    }
    RemoteFit r;
    r.setAside = setAside;
    for (std::size_t i = 0; i < columns; ++i)
        r.terms.push_back({kTermNames[i], kTermMeanings[i], fit->coef[i], fit->stdError[i], fit->atBound[i]});
    std::vector<double> all, steps;
    std::map<std::string, std::vector<double>> byPhase;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const ProbeObservation &o = rows[i];
        if (!(o.seconds > 0))
            continue;
        const double predicted = predictRemote(r, o);
        const double rel = std::abs(predicted - o.seconds) / o.seconds;
        all.push_back(rel);
        byPhase[o.phase].push_back(rel);
        if (use[i] && o.terms[0] == 0 && predicted > 0)
            addStepRatios(o, predicted, steps);
    }
    r.error = errorOver(all);
    for (const auto &[phase, rel] : byPhase)
        r.phases[phase] = errorOver(rel);
    // The fit prices a step's mean; the residuals carry the spread around
    // it, scaled to a mean of 1, so that a simulation's drawn costs average
    // the fit's. (Counted per step, the rows the fit weighs as one each
    // weigh by their steps: a mixed row 1.7x its prediction over 30 steps
    // had moved the mean of 8-slot llama-server steps to 1.085, +8.5 % on
    // every drawn step.)
    if (!steps.empty()) {
        const double mean = std::accumulate(steps.begin(), steps.end(), 0.0) / double(steps.size());
        if (mean > 0)
            for (double &x : steps)
                x /= mean;
    }
    r.residuals = sampleShareMeans(std::move(steps), kStepSamples);
    return r;
}

CostModel remoteCostModel(const RemoteFit &fit)
{
    CostModel m;
    m.generative = true;
    const auto s = [&](int i) {
        return fit.terms.size() > std::size_t(i) ? fit.terms[std::size_t(i)].value : 0.0;
    };
    // iter(n, T, A, D, C) = s0 + s1·n + s2·T + s3·A + s7·D + s8·C (no knee, no eager
    // term: the probe measures a server's steps from outside)
    for (int i = 0; i < 4; ++i)
        m.coef[std::size_t(CostModel::kIterationStart + i)] = s(i + 1);
    // The request-level forms it implies: a pass over b prompts of L is one
    // step of b items, b·L tokens, b·L² attention; a decode step over b rows
    // at context c one of b items, b tokens, b·c attention.
    for (int i = 0; i < CostModel::kPassTerms; ++i)
        m.coef[std::size_t(i)] = s(i + 1);
    m.coef[std::size_t(CostModel::kIterationStart + 7)] = s(5);
    m.coef[std::size_t(CostModel::kIterationStart + 8)] = s(6);
    m.coef[4] = s(1);
    m.coef[5] = s(2) + s(3);
    m.coef[6] = s(4) + s(5);
    m.iterationResiduals = fit.residuals;
    return m;
}

} // namespace bp
