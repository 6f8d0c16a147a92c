// The few-rows product's inner kernel on processors with AVX-512:
// y[i * ldy + j] (+)= x_i · w_j for weight rows j in [n0, n1) and all m rows
// of x (float, contiguous, k wide).
//
// Why a kernel of its own: a decode step is a handful of rows against every
// weight row, and its time is the time to stream the weights. A dot product per
// weight row runs one chain of dependent FMAs (16 per 1 KiB row) and then a
// horizontal sum, so a core waits on FMA latency rather than on memory; this
// kernel keeps a tile of weight rows × x rows in registers (8 × 1 at one row of
// x, 4 × 4 above), so that each weight vector is loaded once and feeds every x
// row with independent accumulators. The sums are in float, as the generic
// kernel's; only the order of additions differs.
//
// Torch-free: plain buffers. Internal to engine/torch/.
#pragma once

#include <cstdint>

namespace bp {

// True when the processor runs AVX-512F (checked once).
bool dotRowsAvx512();

// w as float32 rows, or as bfloat16 rows (the upper half of a float's bits).
void dotRowsAvx512F32(const float *x, std::int64_t m, std::int64_t k, const float *w, std::int64_t n0,
                      std::int64_t n1, float *y, std::int64_t ldy, bool accumulate);
void dotRowsAvx512Bf16(const float *x, std::int64_t m, std::int64_t k, const std::uint16_t *w,
                       std::int64_t n0, std::int64_t n1, float *y, std::int64_t ldy, bool accumulate);

} // namespace bp
