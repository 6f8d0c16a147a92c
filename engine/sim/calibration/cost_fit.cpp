// Fitting a cost model (cost_model.h): weighted non-negative least squares
// over the observations, and the fit's relative error.
#include "engine/sim/calibration/cost_model.h"

#include "engine/sim/calibration/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace bp {

namespace {

using Terms = std::array<double, CostModel::kTerms>;
constexpr int N = CostModel::kTerms;

// Solves G[P,P] s = h[P] by Gaussian elimination with partial pivoting.
// False when the system is (numerically) singular.
bool solveSubset(const std::array<std::array<double, N>, N> &G, const Terms &h, const std::vector<int> &P,
                 Terms &s)
{
    const std::size_t n = P.size();
    std::vector<std::vector<double>> m(n, std::vector<double>(n + 1));
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j)
            m[i][j] = G[std::size_t(P[i])][std::size_t(P[j])];
        m[i][n] = h[std::size_t(P[i])];
    }
    for (std::size_t c = 0; c < n; ++c) {
        std::size_t pivot = c;
        for (std::size_t r = c + 1; r < n; ++r)
            if (std::abs(m[r][c]) > std::abs(m[pivot][c]))
                pivot = r;
        // The columns are scaled to unit norm: a pivot this small means
        // the subset's columns are linearly dependent.
        if (std::abs(m[pivot][c]) < 1e-12)
            return false;
        std::swap(m[c], m[pivot]);
        for (std::size_t r = 0; r < n; ++r) {
            if (r == c)
                continue;
            const double f = m[r][c] / m[c][c];
            for (std::size_t k = c; k <= n; ++k)
                m[r][k] -= f * m[c][k];
        }
    }
    s.fill(0);
    for (std::size_t i = 0; i < n; ++i)
        s[std::size_t(P[i])] = m[i][n] / m[i][i];
    return true;
}

// Lawson–Hanson non-negative least squares on the normal equations
// (G = AᵀA, h = Aᵀb) over the columns in `usable`.
bool nnls(const std::array<std::array<double, N>, N> &G, const Terms &h, const std::vector<int> &usable,
          Terms &x)
{
    x.fill(0);
    std::vector<bool> inP(N, false);
    auto gradient = [&] {
        Terms w{};
        for (int i = 0; i < N; ++i) {
            w[std::size_t(i)] = h[std::size_t(i)];
            for (int j = 0; j < N; ++j)
                w[std::size_t(i)] -= G[std::size_t(i)][std::size_t(j)] * x[std::size_t(j)];
        }
        return w;
    };
    constexpr double tol = 1e-10;
    for (int outer = 0; outer < 3 * N; ++outer) {
        const Terms w = gradient();
        int t = -1;
        for (int j : usable)
            if (!inP[std::size_t(j)] && w[std::size_t(j)] > tol &&
                (t < 0 || w[std::size_t(j)] > w[std::size_t(t)]))
                t = j;
        if (t < 0)
            return true;
        inP[std::size_t(t)] = true;
        for (int inner = 0; inner < 3 * N; ++inner) {
            std::vector<int> P;
            for (int j = 0; j < N; ++j)
                if (inP[std::size_t(j)])
                    P.push_back(j);
            Terms s{};
            if (!solveSubset(G, h, P, s)) {
                inP[std::size_t(t)] = false; // t adds nothing the others do not
                break;
            }
            bool allPositive = true;
            for (int j : P)
                allPositive = allPositive && s[std::size_t(j)] > tol;
            if (allPositive) {
                x = s;
                break;
            }
            double alpha = 1;
            for (int j : P)
                if (s[std::size_t(j)] <= tol)
                    alpha = std::min(alpha, x[std::size_t(j)] / (x[std::size_t(j)] - s[std::size_t(j)]));
            for (int j = 0; j < N; ++j)
                x[std::size_t(j)] += alpha * (s[std::size_t(j)] - x[std::size_t(j)]);
            for (int j : P)
                if (x[std::size_t(j)] <= tol) {
                    x[std::size_t(j)] = 0;
                    inP[std::size_t(j)] = false;
                }
        }
    }
    return true;
}

// Over every observation, or over those of one kind.
FitError errorOf(const CostModel &m, std::span<const CostObservation> obs,
                 std::optional<CostObservation::Kind> only = std::nullopt)
{
    std::vector<double> rel;
    for (const CostObservation &o : obs) {
        if (o.seconds <= 0 || (only && o.kind != *only))
            continue;
        rel.push_back(std::abs(m.predict(o.terms) - o.seconds) / o.seconds);
    }
    FitError e;
    e.observations = rel.size();
    if (rel.empty())
        return e;
    e.medianRel = median(rel);
    e.maxRel = *std::max_element(rel.begin(), rel.end());
    e.rmsRel = std::sqrt(std::inner_product(rel.begin(), rel.end(), rel.begin(), 0.0) / double(rel.size()));
    return e;
}

} // namespace

FitError fitError(const CostModel &model, std::span<const CostObservation> observations)
{
    return errorOf(model, observations);
}

namespace {

struct LinearFit {
    Terms coef{};
    double objective = 0; // Σ ((predicted − measured) / measured)²
};

// `terms` as a fit with knee `knee` and the eager term on or off sees them.
Terms fitRow(const Terms &terms, double knee, bool eager)
{
    Terms a = CostModel::withKnee(terms, knee);
    if (!eager)
        a[std::size_t(CostModel::kIterationStart) + 5] = 0;
    // The decodes' context apart (s7) is the remote fit's: the profile's
    // rows price attention with s3 alone, as before.
    a[std::size_t(CostModel::kIterationStart) + 7] = 0;
    return a;
}

// One weighted NNLS fit with the iteration knee at `knee` (0: none) and the
// eager-step term on or off.
Result<LinearFit> fitLinear(std::span<const CostObservation> observations, bool generative, double knee,
                            bool eager)
{
    // Rows scaled by 1/measured: the fit minimises relative error.
    std::array<std::array<double, N>, N> G{};
    Terms h{};
    std::size_t rows = 0;
    for (const CostObservation &o : observations) {
        if (!(o.seconds > 0) || !std::isfinite(o.seconds))
            continue;
        if (!generative &&
            (o.kind == CostObservation::Kind::Step || o.kind == CostObservation::Kind::Iteration))
            continue;
        Terms a = fitRow(o.terms, knee, eager);
        if (!generative)
            std::fill(a.begin() + CostModel::kPassTerms, a.end(), 0.0);
        for (double &v : a)
            v /= o.seconds;
        for (std::size_t i = 0; i < std::size_t(N); ++i) {
            h[i] += a[i];
            for (std::size_t j = 0; j < std::size_t(N); ++j)
                G[i][j] += a[i] * a[j];
        }
        ++rows;
    }
    if (rows == 0)
        return Status(StatusCode::InvalidArgument, "no usable measurements to fit a cost model to");
    // Unit-norm columns for conditioning; a column no row touches is left out.
    Terms scale{};
    std::vector<int> usable;
    for (std::size_t j = 0; j < std::size_t(N); ++j) {
        scale[j] = G[j][j] > 0 ? 1 / std::sqrt(G[j][j]) : 0;
        if (scale[j] > 0)
            usable.push_back(int(j));
    }
    for (std::size_t i = 0; i < std::size_t(N); ++i) {
        h[i] *= scale[i];
        for (std::size_t j = 0; j < std::size_t(N); ++j)
            G[i][j] *= scale[i] * scale[j];
    }
    Terms x{};
    if (!nnls(G, h, usable, x))
        return Status(StatusCode::InvalidArgument, "the measurements do not determine a cost model");
    LinearFit fit;
    for (std::size_t j = 0; j < std::size_t(N); ++j)
        fit.coef[j] = x[j] * scale[j];
    for (const CostObservation &o : observations) {
        if (!(o.seconds > 0) || !std::isfinite(o.seconds))
            continue;
        const Terms a = fitRow(o.terms, knee, eager);
        const double p = std::inner_product(a.begin(), a.end(), fit.coef.begin(), 0.0);
        fit.objective += (p - o.seconds) * (p - o.seconds) / (o.seconds * o.seconds);
    }
    return fit;
}

} // namespace

Result<FitResult> fitCostModel(std::span<const CostObservation> observations, bool generative)
{
    auto best = fitLinear(observations, generative, 0, false);
    if (!best)
        return best.status();
    double knee = 0;
    bool eager = false;
    if (generative) {
        // Each extra term must earn its place: a tenth less squared relative
        // error than without it (exact linear data never takes one, so the
        // plain form's coefficients stay identifiable).
        // The eager step (a step with prompt tokens: no CUDA graph).
        const auto earns = [&](const LinearFit &candidate, double without) {
            return candidate.objective < 0.9 * without && without - candidate.objective > 1e-9;
        };
        if (auto withEager = fitLinear(observations, generative, 0, true);
            withEager && earns(*withEager, best->objective)) {
            best = std::move(withEager);
            eager = true;
        }
        // The knee: among the iterations' token counts (at most 24 of them,
        // spread over their range), the one whose fit has the least error.
        std::vector<double> tokens;
        const std::size_t T = std::size_t(CostModel::kIterationStart) + 2;
        for (const CostObservation &o : observations)
            if (o.kind == CostObservation::Kind::Iteration && o.seconds > 0)
                tokens.push_back(o.terms[T]);
        std::sort(tokens.begin(), tokens.end());
        tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
        const std::size_t stride = std::max<std::size_t>(1, tokens.size() / 24);
        const double none = best->objective;
        for (std::size_t i = stride; i + 1 < tokens.size(); i += stride) {
            auto fit = fitLinear(observations, generative, tokens[i], eager);
            if (fit && fit->objective < best->objective && earns(*fit, none)) {
                best = std::move(fit);
                knee = tokens[i];
            }
        }
    }
    FitResult r;
    r.model.generative = generative;
    r.model.coef = best->coef;
    r.model.kneeTokens = knee;
    r.error = errorOf(r.model, observations);
    r.batchError = errorOf(r.model, observations, CostObservation::Kind::Batch);
    r.iterationError = errorOf(r.model, observations, CostObservation::Kind::Iteration);
    std::vector<double> batches, iterations;
    for (const CostObservation &o : observations) {
        const double predicted = r.model.predict(o.terms);
        if (!(o.seconds > 0) || !std::isfinite(o.seconds) || !(predicted > 0))
            continue;
        if (o.kind == CostObservation::Kind::Batch)
            batches.push_back(o.seconds / predicted);
        else if (o.kind == CostObservation::Kind::Iteration)
            iterations.push_back(o.seconds / predicted);
    }
    r.model.residuals = sampleQuantiles(std::move(batches));
    r.model.iterationResiduals = sampleQuantiles(std::move(iterations));
    return r;
}

} // namespace bp
