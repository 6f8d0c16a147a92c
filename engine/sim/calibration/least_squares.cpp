#include "engine/sim/calibration/least_squares.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bp {

namespace {

using Matrix = std::vector<std::vector<double>>;

// Solves M[P,P] s = h[P] (Gauss-Jordan, partial pivoting); false when singular.
// With `inverse`, also returns (M[P,P])⁻¹ in P's order.
bool solve(const Matrix &M, const std::vector<double> &h, const std::vector<std::size_t> &P,
           std::vector<double> &s, Matrix *inverse = nullptr)
{
    const std::size_t n = P.size();
    Matrix m(n, std::vector<double>(2 * n + 1, 0.0));
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j)
            m[i][j] = M[P[i]][P[j]];
        m[i][n + i] = 1;
        m[i][2 * n] = h[P[i]];
    }
    for (std::size_t c = 0; c < n; ++c) {
        std::size_t pivot = c;
        for (std::size_t r = c + 1; r < n; ++r)
            if (std::abs(m[r][c]) > std::abs(m[pivot][c]))
                pivot = r;
        if (std::abs(m[pivot][c]) < 1e-12) // unit-norm columns: dependent
            return false;
        std::swap(m[c], m[pivot]);
        const double d = m[c][c];
        for (double &v : m[c])
            v /= d;
        for (std::size_t r = 0; r < n; ++r) {
            if (r == c || m[r][c] == 0)
                continue;
            const double f = m[r][c];
            for (std::size_t k = 0; k <= 2 * n; ++k)
                m[r][k] -= f * m[c][k];
        }
    }
    s.assign(M.size(), 0.0);
    for (std::size_t i = 0; i < n; ++i)
        s[P[i]] = m[i][2 * n];
    if (inverse) {
        inverse->assign(n, std::vector<double>(n));
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                (*inverse)[i][j] = m[i][n + j];
    }
    return true;
}

} // namespace

Result<LeastSquaresFit> fitNonNegative(const std::vector<std::vector<double>> &rows,
                                       const std::vector<double> &y, const std::vector<double> &weights)
{
    if (rows.empty() || rows.size() != y.size() || (!weights.empty() && weights.size() != rows.size()))
        return Status(StatusCode::InvalidArgument,
                      "least squares: no rows, or rows and values differ in number");
    const std::size_t N = rows.front().size();
    Matrix G(N, std::vector<double>(N, 0.0));
    std::vector<double> h(N, 0.0);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].size() != N)
            return Status(StatusCode::InvalidArgument, "least squares: rows differ in length");
        const double w = weights.empty() ? 1.0 : weights[i];
        for (std::size_t a = 0; a < N; ++a) {
            h[a] += w * rows[i][a] * y[i];
            for (std::size_t b = 0; b < N; ++b)
                G[a][b] += w * rows[i][a] * rows[i][b];
        }
    }
    std::vector<double> scale(N, 0.0);
    std::vector<std::size_t> usable;
    for (std::size_t j = 0; j < N; ++j)
        if (G[j][j] > 0) {
            scale[j] = 1 / std::sqrt(G[j][j]);
            usable.push_back(j);
        }
    if (usable.empty())
        return Status(StatusCode::InvalidArgument, "least squares: every column is zero");
    for (std::size_t a = 0; a < N; ++a) {
        h[a] *= scale[a];
        for (std::size_t b = 0; b < N; ++b)
            G[a][b] *= scale[a] * scale[b];
    }
    // Lawson–Hanson.
    std::vector<double> x(N, 0.0);
    std::vector<bool> inP(N, false);
    constexpr double tol = 1e-10;
    for (std::size_t outer = 0; outer < 3 * N; ++outer) {
        std::vector<double> w(N, 0.0);
        for (std::size_t a = 0; a < N; ++a) {
            w[a] = h[a];
            for (std::size_t b = 0; b < N; ++b)
                w[a] -= G[a][b] * x[b];
        }
        std::size_t t = N;
        for (std::size_t j : usable)
            if (!inP[j] && w[j] > tol && (t == N || w[j] > w[t]))
                t = j;
        if (t == N)
            break;
        inP[t] = true;
        for (std::size_t inner = 0; inner < 3 * N; ++inner) {
            std::vector<std::size_t> P;
            for (std::size_t j = 0; j < N; ++j)
                if (inP[j])
                    P.push_back(j);
            std::vector<double> s;
            if (!solve(G, h, P, s)) {
                inP[t] = false;
                break;
            }
            if (std::all_of(P.begin(), P.end(), [&](std::size_t j) { return s[j] > tol; })) {
                x = s;
                break;
            }
            double alpha = 1;
            for (std::size_t j : P)
                if (s[j] <= tol)
                    alpha = std::min(alpha, x[j] / (x[j] - s[j]));
            for (std::size_t j = 0; j < N; ++j)
                x[j] += alpha * (s[j] - x[j]);
            for (std::size_t j : P)
                if (x[j] <= tol) {
                    x[j] = 0;
                    inP[j] = false;
                }
        }
    }
    LeastSquaresFit fit;
    fit.rows = rows.size();
    fit.coef.assign(N, 0.0);
    fit.stdError.assign(N, std::numeric_limits<double>::quiet_NaN());
    fit.atBound.assign(N, true);
    std::vector<std::size_t> free;
    for (std::size_t j = 0; j < N; ++j) {
        fit.coef[j] = x[j] * scale[j];
        if (x[j] > 0) {
            free.push_back(j);
            fit.atBound[j] = false;
        }
    }
    double rss = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        double predicted = 0;
        for (std::size_t j = 0; j < N; ++j)
            predicted += rows[i][j] * fit.coef[j];
        const double r = predicted - y[i];
        rss += (weights.empty() ? 1.0 : weights[i]) * r * r;
    }
    if (rows.size() > free.size() && !free.empty()) {
        fit.sigma2 = rss / double(rows.size() - free.size());
        std::vector<double> unused;
        Matrix inverse;
        if (solve(G, h, free, unused, &inverse))
            for (std::size_t i = 0; i < free.size(); ++i)
                fit.stdError[free[i]] = std::sqrt(std::max(0.0, fit.sigma2 * inverse[i][i])) * scale[free[i]];
    }
    return fit;
}

} // namespace bp
