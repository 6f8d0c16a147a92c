// A change to some fields of the batching config, applied by the Engine to
// the config in force at that moment, under its lock (Engine::update).
//
// Why not whole configs: every writer (the console, undo/redo, REST, the SLO
// controller, the memory guard) used to read the config, edit its copy and
// write the whole copy back, so whichever wrote last silently reverted what
// the others had changed in between — e.g. undo restored an old
// memory_batch_limit and the out-of-memory failures came back. A patch names
// the fields it sets and leaves every other field as it finds it.
//
// Field names are the keys of BatchPilot's knobs in the knob table
// (engine/config/knobs.h: knobs(), not the server models' rows), nested ones with a dot:
// "max_batch_size", "max_queue_delay_us", "slo.p99_target_us",
// "adaptive_delay.enabled", "hybrid.static_sizes", "cache.max_bytes", ...
// (fieldNames() lists them all).
//
// A patch is a plain value: copy it, keep it in an undo stack, apply it
// twice. Applying never validates; Engine::update validates the result.
#pragma once

#include "config_rules.h"
#include "engine/core/batching_config.h"
#include "engine/core/result.h"

#include <functional>
#include <string>
#include <vector>

namespace bp {

class ConfigPatch {
public:
    ConfigPatch() = default;

    // Every field whose value differs between `before` and `after`, set to
    // its value in `after` (the console: the form against what it showed).
    static ConfigPatch diff(const BatchingConfig &before, const BatchingConfig &after);
    // The fields named, set to their values in `values` (undo / redo: the
    // fields one change touched, with the values from before or after it).
    // An unknown name is an InvalidArgument error that names it.
    static Result<ConfigPatch> fields(const BatchingConfig &values, const std::vector<std::string> &names);
    // Every field: the whole config replaces the one in force (a config file
    // loaded, a replay's settings). Reverts concurrent changes by design.
    static ConfigPatch whole(const BatchingConfig &config);
    // The memory guard: lowers memory_batch_limit to `limit` unless it is
    // already at or below it (0 = no limit counts as above). Never raises it.
    static ConfigPatch lowerMemoryBatchLimit(int limit);

    // The names of the fields the patch sets, in table order, each once.
    std::vector<std::string> fieldNames() const;
    bool empty() const { return m_ops.empty(); }
    bool touches(const std::string &field) const;
    // Applies the patch on top of `config` (no validation).
    void applyTo(BatchingConfig &config) const;
    BatchingConfig appliedTo(BatchingConfig config) const
    {
        applyTo(config);
        return config;
    }

    // Every field name a patch may set, in table order.
    static const std::vector<std::string> &allFieldNames();
    // The names of the fields whose values differ between `a` and `b`.
    static std::vector<std::string> changedFields(const BatchingConfig &a, const BatchingConfig &b);

private:
    struct Op {
        std::string field;
        std::function<void(BatchingConfig &)> apply;
    };
    std::vector<Op> m_ops;
};

} // namespace bp
