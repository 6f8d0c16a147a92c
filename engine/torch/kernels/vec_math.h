// exp and the softmax's row passes in a form the compiler vectorises: glibc's
// expf is a call per element (its vector variants need -ffast-math, which the
// build does not use: NaN and infinity must keep their meaning). A row of a
// prefill's scores, or a SwiGLU row, is then one pass of AVX-512 or AVX2
// instructions where it was a libm call per element (a tenth of a 1,024-token
// prefill's time went to expf). Only where the including file is compiled
// with -fno-trapping-math (engine/torch/CMakeLists.txt): without it GCC 12
// keeps the clamps below as branches and the loop runs one float at a time.
//
// expVec: Cephes' expf (range reduction by ln 2 in two parts, a degree-6
// polynomial), within 2 ulp of expf over its range; exp(x) = 0 below -87 (e^-87 is 1.6e-38, the bottom of the
// normal floats) (so exp(-inf) = 0, as a mask needs), +inf above 88.7, NaN for NaN.
//
// Torch-free; included by the kernels that compile their loops for AVX-512,
// AVX2 and the baseline (target_clones).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace bp {

inline float expVec(float x)
{
    constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
    const float clamped = x > 88.7f ? 88.7f : (x < -86.5f ? -86.5f : x);
    const float n = std::floor(clamped * kLog2e + 0.5f);
    const float r = clamped - n * kLn2Hi - n * kLn2Lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float e = p * r * r + r + 1.f;
    // 2^n: n in [-124, 128]; 2^128 is not a float, so 2^(n-1) twice.
    const float half = std::bit_cast<float>(std::int32_t(std::int32_t(n) + 126) << 23);
    const float y = e * half * 2.f;
    return x < -86.5f ? 0.f : (x > 88.7f ? INFINITY : (x != x ? x : y));
}

} // namespace bp
