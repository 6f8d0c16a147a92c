// A length of time as an operator writes it on a command line: "500ms",
// "90s", "15m", "1h", "7d". One parser for every flag that takes one
// (--window, --verify-window, --repeat-to).
#pragma once

#include "clock.h"

#include <optional>
#include <string_view>

namespace bp {

// A positive number and a unit (ms, s, m, h, d), at most `max`; nullopt
// otherwise (no unit, zero, negative, not finite, too long).
std::optional<Duration> parseSpan(std::string_view text, Duration max);

} // namespace bp
