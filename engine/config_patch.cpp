#include "config_patch.h"

#include <algorithm>
#include <memory>

namespace bp {

namespace {

// One leaf field of BatchingConfig: copy it from one config to another, or
// compare it. Adding a knob to BatchingConfig means adding a row here
// (configPatchCoversEveryField in tests/engine/test_config_patch.cpp checks it).
struct Field {
    std::string name;
    void (*copy)(BatchingConfig &to, const BatchingConfig &from);
    bool (*equal)(const BatchingConfig &a, const BatchingConfig &b);
};

template <auto Member>
Field top(const char *name)
{
    return {name, [](BatchingConfig &to, const BatchingConfig &from) { to.*Member = from.*Member; },
            [](const BatchingConfig &a, const BatchingConfig &b) { return a.*Member == b.*Member; }};
}

template <auto Group, auto Member>
Field nested(const char *name)
{
    return {name,
            [](BatchingConfig &to, const BatchingConfig &from) { (to.*Group).*Member = (from.*Group).*Member; },
            [](const BatchingConfig &a, const BatchingConfig &b) { return (a.*Group).*Member == (b.*Group).*Member; }};
}

const std::vector<Field> &table()
{
    using C = BatchingConfig;
    static const std::vector<Field> fields = {
        top<&C::policy>("policy"),
        top<&C::maxBatchSize>("max_batch_size"),
        top<&C::maxQueueDelay>("max_queue_delay_us"),
        top<&C::staticBatchSize>("static_batch_size"),
        top<&C::staticPaddedLength>("static_padded_length"),
        top<&C::staticFlushOnDrain>("static_flush_on_drain"),
        top<&C::bucketEdges>("bucket_edges"),
        top<&C::queueCapacity>("queue_capacity"),
        top<&C::instances>("instances"),
        top<&C::memoryBatchLimit>("memory_batch_limit"),
        top<&C::priorityAging>("priority_aging_us"),
        nested<&C::adaptiveDelay, &AdaptiveDelayConfig::enabled>("adaptive_delay.enabled"),
        nested<&C::adaptiveDelay, &AdaptiveDelayConfig::minDelay>("adaptive_delay.min_delay_us"),
        nested<&C::adaptiveDelay, &AdaptiveDelayConfig::maxDelay>("adaptive_delay.max_delay_us"),
        nested<&C::adaptiveDelay, &AdaptiveDelayConfig::period>("adaptive_delay.period_us"),
        nested<&C::adaptiveDelay, &AdaptiveDelayConfig::fill>("adaptive_delay.fill"),
        nested<&C::slo, &SloControllerConfig::enabled>("slo.enabled"),
        nested<&C::slo, &SloControllerConfig::p99Target>("slo.p99_target_us"),
        nested<&C::slo, &SloControllerConfig::minBatch>("slo.min_batch"),
        nested<&C::slo, &SloControllerConfig::maxBatch>("slo.max_batch"),
        nested<&C::slo, &SloControllerConfig::minDelay>("slo.min_delay_us"),
        nested<&C::slo, &SloControllerConfig::maxDelay>("slo.max_delay_us"),
        nested<&C::slo, &SloControllerConfig::period>("slo.period_us"),
        nested<&C::slo, &SloControllerConfig::batchStep>("slo.batch_step"),
        nested<&C::slo, &SloControllerConfig::delayStep>("slo.delay_step_us"),
        nested<&C::slo, &SloControllerConfig::decrease>("slo.decrease"),
        nested<&C::hybrid, &HybridConfig::staticSizes>("hybrid.static_sizes"),
        nested<&C::hybrid, &HybridConfig::maxStaticLength>("hybrid.max_static_length"),
        nested<&C::hybrid, &HybridConfig::minStaticRate>("hybrid.min_static_rate"),
        nested<&C::hybrid, &HybridConfig::staticMaxWait>("hybrid.static_max_wait_us"),
        nested<&C::cache, &CacheConfig::enabled>("cache.enabled"),
        nested<&C::cache, &CacheConfig::maxEntries>("cache.max_entries"),
        nested<&C::cache, &CacheConfig::maxBytes>("cache.max_bytes"),
    };
    return fields;
}

const Field *find(const std::string &name)
{
    for (const Field &f : table())
        if (f.name == name)
            return &f;
    return nullptr;
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
        const Field *f = find(name);
        if (!f)
            return Status(StatusCode::InvalidArgument, "unknown config field '" + name + "'");
        if (patch.touches(name))
            continue;
        patch.m_ops.push_back({name, [source, copy = f->copy](BatchingConfig &c) { copy(c, *source); }});
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
    for (const Field &f : table())
        if (touches(f.name))
            names.push_back(f.name);
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
        for (const Field &f : table())
            out.push_back(f.name);
        return out;
    }();
    return names;
}

std::vector<std::string> ConfigPatch::changedFields(const BatchingConfig &a, const BatchingConfig &b)
{
    std::vector<std::string> names;
    for (const Field &f : table())
        if (!f.equal(a, b))
            names.push_back(f.name);
    return names;
}

} // namespace bp
