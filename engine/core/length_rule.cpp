#include "length_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace bp {

namespace {

int scaled(int tokens, double scale)
{
    const double v = std::round(double(tokens) * scale);
    return v >= double(std::numeric_limits<int>::max()) ? std::numeric_limits<int>::max() : int(v);
}

} // namespace

ScaledLengths clampLengths(int inputTokens, int outputTokens, const LengthLimits &limits)
{
    ScaledLengths s;
    s.input = std::max(1, inputTokens);
    s.output = limits.generative ? std::max(0, outputTokens) : 0;
    if (limits.generative && limits.maxNewTokens > 0 && s.output > limits.maxNewTokens)
        s.output = limits.maxNewTokens;
    const int L = limits.maxLength;
    if (L <= 0)
        return s;
    if (!limits.generative) {
        if (s.input > L) {
            s.input = L;
            s.clamped = true;
        }
        return s;
    }
    if (std::int64_t(s.input) + s.output > L) {
        s.clamped = true;
        s.output = std::min(s.output, std::max(0, L - 1));
        s.input = std::max(1, L - s.output);
    }
    return s;
}

ScaledLengths scaleLengths(int inputTokens, int outputTokens, double scale, const LengthLimits &limits)
{
    int output = limits.generative ? scaled(std::max(0, outputTokens), scale) : 0;
    const bool raised = limits.generative && outputTokens > 0 && output < 1;
    if (raised)
        output = 1;
    ScaledLengths s = clampLengths(scaled(std::max(0, inputTokens), scale), output, limits);
    s.raised = raised;
    return s;
}

std::string LengthCounts::describe(int maxLength) const
{
    std::string out;
    if (raised)
        out = std::to_string(raised) + (raised == 1 ? " output" : " outputs") + " raised to 1 token";
    if (clamped) {
        if (!out.empty())
            out += ", ";
        out += std::to_string(clamped) + (clamped == 1 ? " request" : " requests") +
               " clamped to the model's " + std::to_string(maxLength) + " tokens (prompt + output)";
    }
    return out;
}

} // namespace bp
