#include "config_change_command.h"

namespace bp::ui {

ConfigChangeCommand::ConfigChangeCommand(app::EngineBridge &bridge, BatchingConfig before,
                                         BatchingConfig after)
    : m_bridge(bridge), m_before(std::move(before)), m_after(std::move(after))
{
    setText(QString::fromStdString(describeChange(m_before, m_after)));
}

void ConfigChangeCommand::undo()
{
    // Refusal (another client set something the old config cannot hold
    // together with) reaches the panel through configRejected.
    m_bridge.applyConfig(m_before, QStringLiteral("gui (undo)"));
}

void ConfigChangeCommand::redo()
{
    if (m_skipRedo) {
        m_skipRedo = false;
        return;
    }
    m_bridge.applyConfig(m_after, QStringLiteral("gui (redo)"));
}

} // namespace bp::ui
