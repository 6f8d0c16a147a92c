// One applied config change as an undoable step: undo re-applies the config
// that was in force before it, redo the one it set. The change has already
// been applied when the command is pushed, so the first redo() (QUndoStack
// calls it on push) does nothing.
#pragma once

#include "app/engine_bridge.h"

#include <QUndoCommand>

namespace bp::ui {

class ConfigChangeCommand : public QUndoCommand {
public:
    ConfigChangeCommand(app::EngineBridge &bridge, BatchingConfig before, BatchingConfig after);

    void undo() override;
    void redo() override;

    const BatchingConfig &before() const { return m_before; }
    const BatchingConfig &after() const { return m_after; }

private:
    app::EngineBridge &m_bridge;
    const BatchingConfig m_before, m_after;
    bool m_skipRedo = true; // the change was applied before the push
};

} // namespace bp::ui
