// One applied config change as an undoable step. It remembers the fields
// the change touched and their values before and after it: undo restores
// those fields alone, redo sets them again, each as a patch applied to the
// engine's config in force at that moment. So undo never reverts a field
// someone else changed meanwhile (the memory guard's memory_batch_limit,
// a REST client's queue_capacity). The change has already been applied
// when the command is pushed, so the first redo() (QUndoStack calls it on
// push) does nothing.
#pragma once

#include "app/engine_bridge.h"

#include <QUndoCommand>

#include <string>
#include <vector>

namespace bp::ui {

class ConfigChangeCommand : public QUndoCommand {
public:
    // `before` and `after`: the engine's whole config right before and right
    // after the change (ConfigUpdate); the touched fields are where they differ.
    ConfigChangeCommand(app::EngineBridge &bridge, BatchingConfig before, BatchingConfig after);

    void undo() override;
    void redo() override;

    const BatchingConfig &before() const { return m_before; }
    const BatchingConfig &after() const { return m_after; }
    const std::vector<std::string> &fields() const { return m_fields; }

private:
    void apply(const BatchingConfig &values, const QString &origin);

    app::EngineBridge &m_bridge;
    const BatchingConfig m_before, m_after;
    const std::vector<std::string> m_fields; // ConfigPatch field names
    bool m_skipRedo = true; // the change was applied before the push
};

} // namespace bp::ui
