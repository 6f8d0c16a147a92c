// A strict reader of the Prometheus text exposition format (version 0.0.4,
// https://prometheus.io/docs/instrumenting/exposition_formats/), for
// scraping a remote target's /metrics.
//
// Why our own: the maintained C++ Prometheus library (prometheus-cpp, in
// Debian as prometheus-cpp-dev) only *writes* this format — it has no
// parser; the reference parser (prometheus/common expfmt) is Go. The
// format is small and line-based, so this reader is too, and strict: any
// malformed line fails the whole scrape with its line number rather than
// yielding half-read figures.
//
// Accepted per line:
//   # HELP name text            (recorded, text unescaped)
//   # TYPE name counter|gauge|histogram|summary|untyped
//   # anything else             (a comment, ignored)
//   name{label="value",...} value [timestamp_ms]
// Names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*;
// label values take the escapes \\ \" \n; values are Go-style floats,
// including NaN, +Inf and -Inf. A trailing comma in the label set is
// allowed (the spec's grammar does); a repeated TYPE line, a TYPE after
// the family's first sample and a duplicate label name are errors.
// OpenMetrics-only syntax (exemplars, "# EOF") is not accepted.
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bp::prom {

enum class MetricType { Untyped, Counter, Gauge, Histogram, Summary };

struct Sample {
    std::string name; // as written: histogram parts keep their _bucket/_sum/_count suffix
    std::map<std::string, std::string> labels;
    double value = 0;
    std::optional<std::int64_t> timestampMs;
};

struct Exposition {
    std::vector<Sample> samples;             // in the order written
    std::map<std::string, MetricType> types; // family name -> TYPE
    std::map<std::string, std::string> help; // family name -> HELP text

    // Sum of every sample named `name` whose labels include `match` (all
    // label sets when `match` is empty); nullopt when none is present.
    std::optional<double> sum(std::string_view name,
                              const std::map<std::string, std::string> &match = {}) const;
    // Mean of the samples named `name` (several engines or ranks each
    // report a ratio); nullopt when none is present.
    std::optional<double> mean(std::string_view name) const;
    bool has(std::string_view name) const;
    // True when any sample's name starts with `prefix`.
    bool hasPrefix(std::string_view prefix) const;
};

// InvalidArgument naming the line ("line 12: ...") on malformed input.
Result<Exposition> parse(std::string_view text);

} // namespace bp::prom
