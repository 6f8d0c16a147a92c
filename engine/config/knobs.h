// The knob table: every knob declared once — its JSON key, type, unit,
// valid range, the policies that read it and one line of doc. The default is
// the value in a default-constructed BatchingConfig (declared in
// batching_config.h, read through the knob's accessor, so it cannot drift).
//
// Two kinds of rows, one table:
//  - BatchPilot's own knobs (knobs()): live, in /v1/config, patches, the
//    console's form and the `batchpilot_config_*` gauges;
//  - a server model's knobs (serverKnobs(kind): vLLM, TGI, SGLang, Triton;
//    engine/core/server_model.h), under the server's own names and launch
//    flags: set for a simulation (replay --simulate, tune, a config file's
//    "server" object), never on a running engine.
//
// Readers: validate() (config/config_rules.h: ranges and messages),
// describeChange() and the servers' settings lines, docs/configuration.md
// (its tables are generated from knobsMarkdown() and checked by test_knobs),
// the `batchpilot_config_*` Prometheus gauges, the JSON codec, the servers'
// launch commands and settings (server_command.h), the tuner's search space
// of a server model (sim/tune/tune_space_servers.cpp: a row's tuneAxis and
// tuneGrid), and the console's editors (range, step, unit, default and
// tooltip: ui/knob_form.h).
//
// Keys are JSON paths: "max_batch_size", "adaptive_delay.max_delay_us",
// "server.vllm.max_num_seqs" (in JSON: {"server": {"kind": "vllm",
// "max_num_seqs": 16}}). Durations are exposed in microseconds (their keys
// end in `_us`); messages name them without the suffix and print them with
// formatDuration().
#pragma once

#include "config_rules.h"
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
    Text,     // one of `choices` (a server's own names: SGLang's schedule_policy)
};

// Which field of the tuner's search point carries a server knob
// (sim/tune/tune_space.h: Point::size, tokens, ratio, flag).
enum class TuneAxis { None, Size, Tokens, Ratio, Flag };

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

    // Text knobs: the value and the names it may take.
    std::string (*text)(const BatchingConfig &) = nullptr;
    void (*setText)(BatchingConfig &, std::string) = nullptr;
    std::span<const std::string_view> choices = {};

    // A server model's knob: the server whose scheduler reads it
    // (BatchPilot: one of the engine's own), its name in that server's
    // settings and in the "server" JSON object ("max_num_seqs"), and its
    // launch flag without the dashes ("max-num-seqs"; empty: none. A Bool's
    // false is "no-" + flag).
    ServerKind server = ServerKind::BatchPilot;
    std::string_view name = {};
    std::string_view flag = {};
    // The flag's short form without its dash, where the server has one
    // (llama-server's "np" for --parallel: written "-np", its false "-no-np").
    std::string_view shortFlag = {};
    bool zeroUnset = false;         // 0 (an empty list) = not set: settings and flags leave it out
    std::string_view flagZero = {}; // the flag's value for 0 ("-1"); empty: 0 itself
    bool listed = true;             // named in the server's settings line (describeConfig)
    // BatchPilot's knob this server knob stands for ("continuous.max_num_seqs"
    // for vLLM's max_num_seqs; empty: none): import-config reads the
    // server's flag into it, export-config writes it under the flag.
    std::string_view ours = {};
    // The tuner's coarse grid for this knob, on the search point's `tuneAxis`.
    TuneAxis tuneAxis = TuneAxis::None;
    std::span<const double> tuneGrid = {};

    // The key as messages and change summaries name it ("max_queue_delay").
    std::string label() const;
    bool appliesTo(PolicyKind policy) const { return (policies & policyBit(policy)) != 0; }
};

// A server's launch flag that bears on batching but is no knob row (vLLM's
// --max-model-len, TGI's --num-shard): import-config keeps it as a
// setting, read as `type` says (Int, Double, Bool or Text).
struct ServerFlag {
    ServerKind server;
    std::string_view flag; // without the dashes
    KnobType type;
};

// BatchPilot's own knobs, in the order the docs list them.
std::span<const Knob> knobs();
// The knobs of a server model, in the server's order (empty for BatchPilot).
std::span<const Knob> serverKnobs(ServerKind kind);
// A server's launch flags that are settings only (empty for BatchPilot).
std::span<const ServerFlag> serverSettingFlags(ServerKind kind);
// The row of `kind` that stands for BatchPilot's knob `ours` (Knob::ours);
// nullptr when none does.
const Knob *serverRowFor(ServerKind kind, std::string_view ours);
// Every row: knobs(), then each server's.
std::span<const Knob> allKnobs();
// nullptr when no knob has this key (any row: "server.vllm.max_num_seqs").
const Knob *findKnob(std::string_view key);
// A server's knob by the server's own name; nullptr when it has none.
const Knob *findServerKnob(ServerKind kind, std::string_view name);

// OK, or InvalidArgument naming the knob, its value and its range
// ("max_batch_size = 5000 is outside [1, 1024]"). Used by validate().
Status checkKnob(const Knob &knob, const BatchingConfig &config);

// The value and the range as an operator reads them: "5ms", "[0, 10s]",
// "(0, 4]", "1 – 32 items, each [1, 65536], strictly increasing"; a server
// knob's value as its settings write it ("64", "0.3", "true", "fcfs", "[4,8]").
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

// Whether a server knob is set (zeroUnset: not 0, not an empty list).
bool knobIsSet(const Knob &knob, const BatchingConfig &config);

// The Markdown tables of docs/configuration.md (between its knob-table
// markers): BatchPilot's knobs, then one table per server model.
std::string knobsMarkdown();

} // namespace bp
