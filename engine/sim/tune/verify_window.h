// Which arrivals `tune` replays in real time to verify its pick.
// A real-clock replay costs the arrivals' own duration, so the whole
// Azure hour took an hour; by default the verification replays a
// representative window instead: the busiest 3 minutes of arrivals (the
// most arrivals in any 3-minute stretch, at the replay's speed), where a
// config that holds its SLO under the peak holds it elsewhere too.
//
//   busiest:3m  the LENGTH-long stretch with the most arrivals (default)
//   first:2m    the arrivals of the first LENGTH
//   all         every arrival (the old behaviour)
//
// LENGTH: a positive number with a unit ms, s, m or h. The window is in the
// replay's time (offsets already divided by --speed): its length is the
// wall time of the arrivals. Pure functions; Qt-free.
#pragma once

#include "engine/core/clock.h"
#include "engine/core/result.h"

#include <span>
#include <string>
#include <string_view>

namespace bp {

struct VerifyWindowSpec {
    enum class Kind { Busiest, First, All };
    Kind kind = Kind::Busiest;
    Duration length = std::chrono::minutes(3); // Busiest, First
    bool operator==(const VerifyWindowSpec &) const = default;
};

// "busiest:3m", "first:90s", "all"; InvalidArgument naming what is wrong.
Result<VerifyWindowSpec> parseVerifyWindow(std::string_view text);
// "busiest:3m" (the form parseVerifyWindow reads back).
std::string formatVerifyWindow(const VerifyWindowSpec &spec);
// "the busiest 3 min of arrivals", "the first 90 s of arrivals", "every arrival".
std::string describe(const VerifyWindowSpec &spec);

// Arrivals [begin, end) of a planned replay.
struct VerifyWindow {
    std::size_t begin = 0, end = 0;
    Duration from{}, to{}; // the offsets of its first and last arrival
    std::size_t size() const { return end - begin; }
    Duration span() const { return to - from; }
};

// The window of `offsets` (ascending) that `spec` selects. Busiest: among
// the stretches [offsets[i], offsets[i] + length), the one holding the most
// arrivals, the earliest of equals — deterministic, O(n). First: the
// arrivals before offsets[0] + length. All, or a source no longer than the
// window: every arrival. No offsets: an empty window.
VerifyWindow selectVerifyWindow(std::span<const Duration> offsets, const VerifyWindowSpec &spec);

} // namespace bp
