// Weighted non-negative least squares over any number of columns, with the
// standard error of each coefficient: what the remote calibration fits
// (remote_fit.h; its probe rows carry a per-request column beside the
// iteration terms, so CostModel's fixed-size fit does not take them).
//
// Minimises Σ wᵢ (aᵢ·x − yᵢ)² subject to x ≥ 0 (Lawson–Hanson on the normal
// equations, columns scaled to unit norm). A coefficient the data pushes
// below zero is held at 0 ("at bound"); the others' standard errors come
// from σ² (AₚᵀWAₚ)⁻¹ over the free columns P, σ² = Σ wᵢ rᵢ² / (rows − |P|).
#pragma once

#include "engine/core/result.h"

#include <cstddef>
#include <vector>

namespace bp {

struct LeastSquaresFit {
    std::vector<double> coef;
    // NaN for a coefficient at its bound (0) or when rows <= free columns.
    std::vector<double> stdError;
    std::vector<bool> atBound;
    double sigma2 = 0; // weighted residual variance
    std::size_t rows = 0;
};

// `rows[i]` has one value per column; `weights` empty = all 1.
// InvalidArgument when there is no row, the rows differ in length, or no
// column is ever non-zero.
Result<LeastSquaresFit> fitNonNegative(const std::vector<std::vector<double>> &rows,
                                       const std::vector<double> &y, const std::vector<double> &weights = {});

} // namespace bp
