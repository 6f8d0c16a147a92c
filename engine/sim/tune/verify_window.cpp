#include "engine/sim/tune/verify_window.h"

#include "engine/core/span_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

namespace bp {

namespace {

std::string lengthText(Duration d, bool words)
{
    const double s = toSeconds(d);
    char buf[48];
    if (s >= 3600 && std::fmod(s, 3600) == 0)
        std::snprintf(buf, sizeof buf, words ? "%g h" : "%gh", s / 3600);
    else if (s >= 60 && std::fmod(s, 60) == 0)
        std::snprintf(buf, sizeof buf, words ? "%g min" : "%gm", s / 60);
    else if (s >= 1)
        std::snprintf(buf, sizeof buf, words ? "%g s" : "%gs", s);
    else
        std::snprintf(buf, sizeof buf, words ? "%g ms" : "%gms", s * 1e3);
    return buf;
}

} // namespace

Result<VerifyWindowSpec> parseVerifyWindow(std::string_view text)
{
    auto bad = [&](const std::string &why) {
        return Status(StatusCode::InvalidArgument, "--verify-window '" + std::string(text) + "': " + why +
                                                       " (expected busiest:LENGTH, first:LENGTH or all, "
                                                       "e.g. busiest:3m; units ms, s, m, h)");
    };
    VerifyWindowSpec spec;
    if (text == "all") {
        spec.kind = VerifyWindowSpec::Kind::All;
        spec.length = Duration::zero();
        return spec;
    }
    const std::size_t colon = text.find(':');
    const std::string kind(text.substr(0, colon));
    if (kind == "busiest")
        spec.kind = VerifyWindowSpec::Kind::Busiest;
    else if (kind == "first")
        spec.kind = VerifyWindowSpec::Kind::First;
    else
        return bad("unknown window '" + kind + "'");
    if (colon == std::string_view::npos)
        return bad("'" + kind + "' needs a length");
    const auto length = parseSpan(text.substr(colon + 1), fromSeconds(7 * 86400.0));
    if (!length)
        return bad("the length must be a positive number with a unit, at most a week");
    spec.length = *length;
    return spec;
}

std::string formatVerifyWindow(const VerifyWindowSpec &spec)
{
    switch (spec.kind) {
    case VerifyWindowSpec::Kind::All: return "all";
    case VerifyWindowSpec::Kind::First: return "first:" + lengthText(spec.length, false);
    case VerifyWindowSpec::Kind::Busiest: return "busiest:" + lengthText(spec.length, false);
    }
    return "all";
}

std::string describe(const VerifyWindowSpec &spec)
{
    switch (spec.kind) {
    case VerifyWindowSpec::Kind::All: return "every arrival";
    case VerifyWindowSpec::Kind::First: return "the first " + lengthText(spec.length, true) + " of arrivals";
    case VerifyWindowSpec::Kind::Busiest:
        return "the busiest " + lengthText(spec.length, true) + " of arrivals";
    }
    return "every arrival";
}

VerifyWindow selectVerifyWindow(std::span<const Duration> offsets, const VerifyWindowSpec &spec)
{
    VerifyWindow w;
    const std::size_t n = offsets.size();
    if (n == 0)
        return w;
    w.end = n;
    if (spec.kind == VerifyWindowSpec::Kind::First) {
        while (w.end > 1 && offsets[w.end - 1] >= offsets[0] + spec.length)
            --w.end;
    } else if (spec.kind == VerifyWindowSpec::Kind::Busiest && offsets[n - 1] - offsets[0] >= spec.length) {
        // Two pointers: [i, j) holds the arrivals of [offsets[i], offsets[i] + length).
        std::size_t best = 0, bestCount = 0;
        for (std::size_t i = 0, j = 0; i < n; ++i) {
            j = std::max(j, i);
            while (j < n && offsets[j] < offsets[i] + spec.length)
                ++j;
            if (j - i > bestCount) {
                bestCount = j - i;
                best = i;
            }
        }
        w.begin = best;
        w.end = best + bestCount;
    }
    w.from = offsets[w.begin];
    w.to = offsets[w.end - 1];
    return w;
}

} // namespace bp
