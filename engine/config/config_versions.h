// The config in force, its version and its history: one writer path for
// every change (operators, the SLO controller, the memory guard).
//
// commit() is the one gate: the patch is applied to the config in force at
// that moment (never to the one a writer last read, so a writer cannot
// revert a field it did not name; EngineCore applies it once and hands the
// result here), the result is validated, and a real change gets the next
// version and an entry in the history. The config is
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
#include <utility>

namespace bp {

class ConfigVersions {
public:
    // Version 1, origin "start", summary "initial". `initial` must be valid.
    ConfigVersions(const BatchingConfig &initial, TimePoint at);

    const std::shared_ptr<const BatchingConfig> &current() const { return m_current; }
    std::uint64_t version() const { return m_version; }
    // Shares its storage: a copy is O(1) (see ConfigHistory).
    const ConfigHistory &history() const { return m_history; }

    // Validates `next` (the config in force with a patch applied: the
    // caller applies it once, under the same lock) and puts it in force. On
    // failure nothing changes and the Status names the field. On success
    // `change` is the stamped change (summary prefixed with `why` when
    // given), or has version 0 when `next` equals the config in force.
    Status commit(BatchingConfig next, std::string origin, const std::string &why, TimePoint at,
                  ConfigChange &change);
    // commit(patch.appliedTo(*current()), ...): for writers that have no
    // use for the patched config before it is judged.
    Status apply(const ConfigPatch &patch, std::string origin, const std::string &why, TimePoint at,
                 ConfigChange &change)
    {
        return commit(patch.appliedTo(*m_current), std::move(origin), why, at, change);
    }

private:
    std::shared_ptr<const BatchingConfig> m_current;
    std::uint64_t m_version = 1;
    ConfigHistory m_history;
};

} // namespace bp
