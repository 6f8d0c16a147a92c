// The knob table: every batching knob declared once — its JSON key, type,
// unit, valid range, the policies that read it and one line of doc. The
// default is the value in a default-constructed BatchingConfig (declared in
// batching_config.h, read through the knob's accessor, so it cannot drift).
//
// Readers: validate() (ranges and messages), docs/configuration.md (its table
// is generated from knobsMarkdown() and checked by test_knobs), the
// `batchpilot_config_*` Prometheus gauges, the JSON codec, the console's
// editors (range, step, unit, default and tooltip: ui/knob_form.h), and — as
// the next steps land — a tuner's search space and the config exporters.
//
// Keys are JSON paths: "max_batch_size", "adaptive_delay.max_delay_us".
// Durations are exposed in microseconds (their keys end in `_us`); messages
// name them without the suffix and print them with formatDuration().
#pragma once

#include "engine/core/batching_config.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

enum class KnobType {
    Policy,   // enum, the value is the PolicyKind's index
    Bool,     // 0 / 1
    Int,      // integer count or size
    Double,   // real number
    Duration, // microseconds
    IntList,  // ascending list of integers (bucket edges, static sizes)
};

enum class BoundKind { Inclusive, Exclusive };

// Bit mask of the policies a knob applies to.
using PolicyMask = unsigned;
constexpr PolicyMask policyBit(PolicyKind k)
{
    return 1u << unsigned(k);
}
constexpr PolicyMask kAllPolicies = 0x3fu;

struct Knob {
    std::string_view key; // JSON path
    KnobType type;
    std::string_view unit; // "requests", "tokens", "µs", "req/s", "bytes", "" (none)
    // Range of the value (of each element, for lists), in the knob's unit.
    double lo = 0, hi = 0;
    BoundKind loKind = BoundKind::Inclusive, hiKind = BoundKind::Inclusive;
    // Cross-field bounds: when set, that knob's current value replaces lo / hi
    // (e.g. adaptive_delay.max_delay_us >= adaptive_delay.min_delay_us).
    std::string_view loKnob = {}, hiKnob = {};
    // The console editor's arrow step, in the knob's unit (0: 1 for integers,
    // the 1-2-5 ladder for durations, 0.01 for reals; a real's step also sets
    // how many decimals its editor shows).
    double step = 0;
    PolicyMask policies = kAllPolicies;
    std::string_view doc;

    // Scalars: the value as a number (bools 0/1, durations in µs, policy index).
    double (*get)(const BatchingConfig &) = nullptr;
    void (*set)(BatchingConfig &, double) = nullptr;
    // Lists.
    const std::vector<int> &(*items)(const BatchingConfig &) = nullptr;
    std::vector<int> &(*itemsMut)(BatchingConfig &) = nullptr;
    std::size_t minItems = 0, maxItems = 0;
    std::string_view itemLabel = {}; // Prometheus label of a list's items ("bucket")

    // The key as messages and change summaries name it ("max_queue_delay").
    std::string label() const;
    bool appliesTo(PolicyKind policy) const { return (policies & policyBit(policy)) != 0; }
};

// Every knob, in the order the docs list them.
std::span<const Knob> knobs();
// nullptr when no knob has this key.
const Knob *findKnob(std::string_view key);

// OK, or InvalidArgument naming the knob, its value and its range
// ("max_batch_size = 5000 is outside [1, 1024]"). Used by validate().
Status checkKnob(const Knob &knob, const BatchingConfig &config);

// The value and the range as an operator reads them: "5ms", "[0, 10s]",
// "(0, 4]", "1 – 32 items, each [1, 65536], strictly increasing".
std::string formatKnobValue(const Knob &knob, const BatchingConfig &config);
std::string formatKnobRange(const Knob &knob);
// "dynamic, bucketed, hybrid" or "all"
std::string knobPolicies(const Knob &knob);
// The knob's Prometheus gauge: "batchpilot_config_" + the label with dots as
// underscores, durations in seconds ("batchpilot_config_max_queue_delay_seconds"),
// a list's items as one gauge per item ("batchpilot_config_bucket_edge").
std::string knobGaugeName(const Knob &knob);
// The value in the gauge's unit (durations in seconds, bools 1/0).
double knobGaugeValue(const Knob &knob, const BatchingConfig &config);

// The Markdown table of docs/configuration.md (between its knob-table markers).
std::string knobsMarkdown();

} // namespace bp
