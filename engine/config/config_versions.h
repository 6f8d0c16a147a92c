// The config in force, its version and its history: one writer path for
// every change (operators, the SLO controller, the memory guard).
//
// apply() is the one gate: the patch is applied to the config in force at
// that moment (never to the one a writer last read, so a writer cannot
// revert a field it did not name), the result is validated, and a real
// change gets the next version and an entry in the history. The config is
// an immutable shared value replaced on every change: code that runs after
// the engine's lock is released keeps the one it took under it.
//
// Not thread-safe: the Engine calls it under its mutex.
#pragma once

#include "config_history.h"
#include "config_patch.h"
#include "engine/core/records.h"

#include <cstdint>
#include <memory>
#include <string>

namespace bp {

class ConfigVersions {
public:
    // Version 1, origin "start", summary "initial". `initial` must be valid.
    ConfigVersions(const BatchingConfig &initial, TimePoint at);

    const std::shared_ptr<const BatchingConfig> &current() const { return m_current; }
    std::uint64_t version() const { return m_version; }
    // Shares its storage: a copy is O(1) (see ConfigHistory).
    const ConfigHistory &history() const { return m_history; }

    // Applies `patch` to the config in force and validates the result. On
    // failure nothing changes and the Status names the field. On success
    // `change` is the stamped change (summary prefixed with `why` when
    // given), or has version 0 when the patch changed nothing.
    Status apply(const ConfigPatch &patch, std::string origin, const std::string &why, TimePoint at,
                 ConfigChange &change);

private:
    std::shared_ptr<const BatchingConfig> m_current;
    std::uint64_t m_version = 1;
    ConfigHistory m_history;
};

} // namespace bp
