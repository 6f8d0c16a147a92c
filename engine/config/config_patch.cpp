#include "config_patch.h"
#include "knobs.h"

#include <algorithm>
#include <memory>

namespace bp {

namespace {

// The fields are the knobs of the knob table (engine/config/knobs.h): a patch copies
// a knob's value from one config to another through the knob's accessors
// (lossless: durations travel as exact fractional microseconds).
void copyKnob(const Knob &k, BatchingConfig &to, const BatchingConfig &from)
{
    if (k.type == KnobType::IntList)
        k.itemsMut(to) = k.items(from);
    else if (k.type == KnobType::Text)
        k.setText(to, k.text(from));
    else
        k.set(to, k.get(from));
}

bool sameKnob(const Knob &k, const BatchingConfig &a, const BatchingConfig &b)
{
    if (k.type == KnobType::Text)
        return k.text(a) == k.text(b);
    return k.type == KnobType::IntList ? k.items(a) == k.items(b) : k.get(a) == k.get(b);
}

} // namespace

ConfigPatch ConfigPatch::diff(const BatchingConfig &before, const BatchingConfig &after)
{
    return fields(after, changedFields(before, after)).value();
}

Result<ConfigPatch> ConfigPatch::fields(const BatchingConfig &values, const std::vector<std::string> &names)
{
    ConfigPatch patch;
    // One shared copy of the values, however many fields read it.
    auto source = std::make_shared<const BatchingConfig>(values);
    for (const std::string &name : names) {
        const Knob *k = findKnob(name);
        if (!k)
            return Status(StatusCode::InvalidArgument, "unknown config field '" + name + "'");
        if (k->server != ServerKind::BatchPilot) // a simulation's, not a live knob
            return Status(StatusCode::InvalidArgument,
                          "field '" + name +
                              "' is a server model's knob: for simulations, not a live change");
        if (patch.touches(name))
            continue;
        patch.m_ops.push_back({name, [source, k](BatchingConfig &c) { copyKnob(*k, c, *source); }});
    }
    return patch;
}

ConfigPatch ConfigPatch::whole(const BatchingConfig &config)
{
    return fields(config, allFieldNames()).value();
}

ConfigPatch ConfigPatch::lowerMemoryBatchLimit(int limit)
{
    ConfigPatch patch;
    patch.m_ops.push_back({"memory_batch_limit", [limit](BatchingConfig &c) {
                               if (c.memoryBatchLimit == 0 || c.memoryBatchLimit > limit)
                                   c.memoryBatchLimit = limit;
                           }});
    return patch;
}

std::vector<std::string> ConfigPatch::fieldNames() const
{
    std::vector<std::string> names;
    for (const Knob &k : knobs())
        if (touches(std::string(k.key)))
            names.emplace_back(k.key);
    return names;
}

bool ConfigPatch::touches(const std::string &field) const
{
    return std::any_of(m_ops.begin(), m_ops.end(), [&](const Op &op) { return op.field == field; });
}

void ConfigPatch::applyTo(BatchingConfig &config) const
{
    for (const Op &op : m_ops)
        op.apply(config);
}

const std::vector<std::string> &ConfigPatch::allFieldNames()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const Knob &k : knobs())
            out.emplace_back(k.key);
        return out;
    }();
    return names;
}

std::vector<std::string> ConfigPatch::changedFields(const BatchingConfig &a, const BatchingConfig &b)
{
    std::vector<std::string> names;
    for (const Knob &k : knobs())
        if (!sameKnob(k, a, b))
            names.emplace_back(k.key);
    return names;
}

} // namespace bp
