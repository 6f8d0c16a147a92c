#include "knobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bp {

namespace {

Duration fromUs(double v)
{
    return Duration(std::llround(v * 1e3));
}

// 1024, 1e+07 -> "10000000", 0.5
std::string number(double v)
{
    char buf[32];
    if (std::isinf(v))
        return v > 0 ? "∞" : "-∞";
    if (v == std::floor(v) && std::abs(v) < 1e15)
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else
        std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string formatIn(const Knob &k, double v)
{
    switch (k.type) {
    case KnobType::Duration: return formatDuration(fromUs(v));
    case KnobType::Bool: return v != 0 ? "true" : "false";
    case KnobType::Policy: return std::string(policyName(PolicyKind(int(v))));
    default: return number(v);
    }
}

double boundValue(const BatchingConfig &c, std::string_view knob, double fallback)
{
    if (knob.empty())
        return fallback;
    const Knob *other = findKnob(knob);
    return other && other->get ? other->get(c) : fallback;
}

bool inside(double v, double lo, BoundKind loKind, double hi, BoundKind hiKind)
{
    // Written so that NaN is outside every range.
    const bool aboveLo = loKind == BoundKind::Inclusive ? v >= lo : v > lo;
    const bool belowHi = hiKind == BoundKind::Inclusive ? v <= hi : v < hi;
    return aboveLo && belowHi;
}

std::string rangeText(const Knob &k, double lo, double hi)
{
    return std::string(k.loKind == BoundKind::Inclusive ? "[" : "(") + formatIn(k, lo) + ", " +
           formatIn(k, hi) + (k.hiKind == BoundKind::Inclusive ? "]" : ")");
}

std::string joinItems(const std::vector<int> &items)
{
    std::string s;
    for (std::size_t i = 0; i < items.size(); ++i)
        s += (i ? "," : "") + std::to_string(items[i]);
    return s;
}

std::string choiceList(const Knob &k, std::string_view last)
{
    std::string s;
    for (std::size_t i = 0; i < k.choices.size(); ++i)
        s += std::string(i == 0 ? "" : i + 1 == k.choices.size() ? last : ", ") + std::string(k.choices[i]);
    return s;
}

} // namespace

std::string Knob::label() const
{
    if (type == KnobType::Duration && key.ends_with("_us"))
        return std::string(key.substr(0, key.size() - 3));
    return std::string(key);
}

const Knob *findKnob(std::string_view key)
{
    for (const Knob &k : allKnobs())
        if (k.key == key)
            return &k;
    return nullptr;
}

const Knob *findServerKnob(ServerKind kind, std::string_view name)
{
    for (const Knob &k : serverKnobs(kind))
        if (k.name == name)
            return &k;
    return nullptr;
}

Status checkKnob(const Knob &k, const BatchingConfig &c)
{
    if (k.type == KnobType::Policy || k.type == KnobType::Bool)
        return Status::ok(); // every representable value is valid
    if (k.type == KnobType::Text) {
        const std::string v = k.text(c);
        if (std::find(k.choices.begin(), k.choices.end(), v) != k.choices.end())
            return Status::ok();
        return {StatusCode::InvalidArgument,
                k.label() + " '" + v + "' is not modelled: " + choiceList(k, " or ")};
    }
    if (k.type == KnobType::IntList) {
        // A cross-field bound caps every item (preferred_batch_size <= max_batch_size).
        const double hi = std::min(k.hi, boundValue(c, k.hiKnob, k.hi));
        const std::vector<int> &items = k.items(c);
        if (items.size() < k.minItems || items.size() > k.maxItems)
            return {StatusCode::InvalidArgument, k.label() + " needs " + std::to_string(k.minItems) + " to " +
                                                     std::to_string(k.maxItems) + " items, got " +
                                                     std::to_string(items.size())};
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!inside(items[i], k.lo, k.loKind, hi, k.hiKind))
                return {StatusCode::InvalidArgument, k.label() + "[" + std::to_string(i) +
                                                         "] = " + std::to_string(items[i]) + " is outside " +
                                                         rangeText(k, k.lo, hi)};
            if (i > 0 && items[i] <= items[i - 1])
                return {StatusCode::InvalidArgument,
                        k.label() + " must be strictly increasing: " + joinItems(items)};
        }
        return Status::ok();
    }
    const double v = k.get(c);
    const double lo = boundValue(c, k.loKnob, k.lo);
    const double hi = boundValue(c, k.hiKnob, k.hi);
    if (inside(v, lo, k.loKind, hi, k.hiKind) && inside(v, k.lo, k.loKind, k.hi, k.hiKind))
        return Status::ok();
    // A cross-field bound that is itself out of range is reported on its own knob.
    const double shownLo = std::max(lo, k.lo), shownHi = std::min(hi, k.hi);
    return {StatusCode::InvalidArgument,
            k.label() + " = " + formatIn(k, v) + " is outside " + rangeText(k, shownLo, shownHi)};
}

std::string formatKnobValue(const Knob &k, const BatchingConfig &c)
{
    if (k.type == KnobType::IntList)
        return "[" + joinItems(k.items(c)) + "]";
    if (k.type == KnobType::Text)
        return k.text(c);
    return formatIn(k, k.get(c));
}

bool knobIsSet(const Knob &k, const BatchingConfig &c)
{
    if (!k.zeroUnset)
        return true;
    if (k.type == KnobType::IntList)
        return !k.items(c).empty();
    if (k.type == KnobType::Text)
        return !k.text(c).empty();
    return k.get(c) != 0;
}

std::string formatKnobRange(const Knob &k)
{
    switch (k.type) {
    case KnobType::Policy: return "none, static, dynamic, bucketed, hybrid, continuous";
    case KnobType::Bool: return "true, false";
    case KnobType::Text: return choiceList(k, ", ");
    case KnobType::IntList: {
        const std::string hi = k.hiKnob.empty() ? formatIn(k, k.hi) : "`" + std::string(k.hiKnob) + "`";
        return std::to_string(k.minItems) + " – " + std::to_string(k.maxItems) + " items, each " +
               (k.loKind == BoundKind::Inclusive ? "[" : "(") + formatIn(k, k.lo) + ", " + hi +
               (k.hiKind == BoundKind::Inclusive ? "]" : ")") + ", strictly increasing";
    }
    default: break;
    }
    std::string lo = k.loKnob.empty() ? formatIn(k, k.lo) : "`" + std::string(k.loKnob) + "`";
    std::string hi = k.hiKnob.empty() ? formatIn(k, k.hi) : "`" + std::string(k.hiKnob) + "`";
    return std::string(k.loKind == BoundKind::Inclusive ? "[" : "(") + lo + ", " + hi +
           (k.hiKind == BoundKind::Inclusive ? "]" : ")");
}

std::string knobPolicies(const Knob &k)
{
    if (k.policies == kAllPolicies)
        return "all";
    std::string s;
    for (auto p : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed,
                   PolicyKind::Hybrid, PolicyKind::Continuous})
        if (k.appliesTo(p))
            s += (s.empty() ? "" : ", ") + std::string(policyName(p));
    return s;
}

std::string knobGaugeName(const Knob &k)
{
    std::string name = "batchpilot_config_" + k.label();
    std::replace(name.begin(), name.end(), '.', '_');
    if (k.type == KnobType::Duration)
        name += "_seconds";
    if (k.type == KnobType::IntList && name.ends_with('s'))
        name.pop_back(); // one gauge per item: bucket_edge{bucket="0"}
    return name;
}

double knobGaugeValue(const Knob &k, const BatchingConfig &c)
{
    const double v = k.get(c);
    return k.type == KnobType::Duration ? v / 1e6 : v;
}

std::string knobsMarkdown()
{
    const BatchingConfig defaults;
    auto defaultOf = [&defaults](const Knob &k) {
        std::string def = formatKnobValue(k, defaults);
        if (k.type == KnobType::Duration && k.get(defaults) != 0)
            def = number(k.get(defaults)) + " (" + def + ")";
        return def;
    };
    std::string md = "| JSON key | policies | meaning | default | unit | valid range |\n"
                     "| --- | --- | --- | --- | --- | --- |\n";
    for (const Knob &k : knobs())
        md += "| `" + std::string(k.key) + "` | " + knobPolicies(k) + " | " + std::string(k.doc) + " | " +
              defaultOf(k) + " | " + std::string(k.unit.empty() ? "—" : k.unit) + " | " + formatKnobRange(k) +
              " |\n";
    // A server model's knobs: in JSON under "server" beside its kind, by the
    // server's own names; the launch flag server_command.h writes.
    for (ServerKind kind :
         {ServerKind::Vllm, ServerKind::Tgi, ServerKind::Sglang, ServerKind::Triton, ServerKind::LlamaCpp}) {
        md += "\nServer model `" + std::string(serverKindName(kind)) + "` (policy " +
              knobPolicies(serverKnobs(kind).front()) + "; `\"server\": {\"kind\": \"" +
              std::string(serverKindName(kind)) +
              "\", ...}`):\n\n"
              "| JSON key | launch flag | meaning | default | unit | valid range |\n"
              "| --- | --- | --- | --- | --- | --- |\n";
        for (const Knob &k : serverKnobs(kind))
            md += "| `" + std::string(k.key) + "` | " +
                  (k.flag.empty() ? std::string("—") : "`--" + std::string(k.flag) + "`") + " | " +
                  std::string(k.doc) + " | " + defaultOf(k) + " | " +
                  std::string(k.unit.empty() ? "—" : k.unit) + " | " + formatKnobRange(k) + " |\n";
    }
    return md;
}

} // namespace bp
