#include "engine/sim/tune/slo_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace bp {

namespace {

struct Grammar {
    std::string_view separator; // between key and value
    std::string_view example;
    std::string_view keys; // for "unknown ..." messages
    std::string_view noun; // "metric" / "bound"
    Duration *(*target)(SloBounds &, const std::string &key);
};

Duration *percentileKey(SloBounds &b, const std::string &key)
{
    return key == "p99" || key == "e2e_p99" ? &b.e2e
           : key == "ttft_p99"              ? &b.ttft
           : key == "tpot_p99"              ? &b.tpot
                                            : nullptr;
}

Duration *perRequestKey(SloBounds &b, const std::string &key)
{
    return key == "e2e" ? &b.e2e : key == "ttft" ? &b.ttft : key == "tpot" ? &b.tpot : nullptr;
}

const Grammar &grammarOf(SloSyntax syntax)
{
    static const Grammar percentile{"<=", "'p99<=200ms' or 'ttft_p99<=500ms,tpot_p99<=50ms'",
                                    "p99, ttft_p99 or tpot_p99", "metric", percentileKey};
    static const Grammar perRequest{"=", "ttft=500ms,tpot=50ms,e2e=2s", "ttft, tpot or e2e", "bound",
                                    perRequestKey};
    return syntax == SloSyntax::Percentile ? percentile : perRequest;
}

} // namespace

Result<SloBounds> parseSloBounds(std::string_view spec, SloSyntax syntax)
{
    const Grammar &g = grammarOf(syntax);
    auto bad = [&](const std::string &why) {
        return Status(StatusCode::InvalidArgument, "--slo '" + std::string(spec) + "': " + why +
                                                       " (expected e.g. " + std::string(g.example) +
                                                       "; units us, ms, s)");
    };
    SloBounds bounds;
    std::size_t pos = 0;
    while (true) {
        const std::size_t comma = std::min(spec.find(',', pos), spec.size());
        std::string item(spec.substr(pos, comma - pos));
        item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
        if (item.empty())
            return bad("empty item");
        const std::size_t sep = item.find(g.separator);
        if (sep == std::string::npos)
            return bad("'" + item + "' has no '" + std::string(g.separator) + "'");
        const std::string key = item.substr(0, sep), value = item.substr(sep + g.separator.size());
        Duration *target = g.target(bounds, key);
        if (!target)
            return bad("unknown " + std::string(g.noun) + " '" + key + "' (" + std::string(g.keys) + ")");
        if (*target > Duration::zero())
            return bad("'" + key + "' given twice");
        const char *begin = value.c_str();
        char *end = nullptr;
        const double number = std::strtod(begin, &end);
        if (end == begin)
            return bad("'" + item + "' has no number");
        const std::string unit(end);
        const double scale = unit == "us" || unit == "µs" ? 1e-6 : unit == "ms" ? 1e-3 : unit == "s" ? 1 : 0;
        if (scale == 0)
            return bad("'" + item + "' needs a unit: us, ms or s");
        if (!(number > 0) || !std::isfinite(number) || number * scale > 86400)
            return bad("'" + item + "' must be positive (and at most a day)");
        *target = fromSeconds(number * scale);
        if (*target <= Duration::zero())
            return bad("'" + item + "' is below a nanosecond");
        if (comma == spec.size())
            break;
        pos = comma + 1;
    }
    return bounds;
}

} // namespace bp
