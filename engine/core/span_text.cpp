#include "span_text.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace bp {

std::optional<Duration> parseSpan(std::string_view text, Duration max)
{
    const std::string s(text);
    const char *begin = s.c_str();
    char *end = nullptr;
    const double number = std::strtod(begin, &end);
    if (end == begin || !(number > 0) || !std::isfinite(number))
        return std::nullopt;
    const std::string_view unit(end);
    const double scale = unit == "ms"  ? 1e-3
                         : unit == "s" ? 1
                         : unit == "m" ? 60
                         : unit == "h" ? 3600
                         : unit == "d" ? 86400
                                       : 0;
    if (scale == 0 || number * scale > toSeconds(max))
        return std::nullopt;
    const Duration d = fromSeconds(number * scale);
    if (d <= Duration::zero())
        return std::nullopt;
    return d;
}

} // namespace bp
