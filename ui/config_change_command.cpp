#include "config_change_command.h"

namespace bp::ui {

ConfigChangeCommand::ConfigChangeCommand(app::EngineBridge &bridge, BatchingConfig before,
                                         BatchingConfig after)
    : m_bridge(bridge), m_before(std::move(before)), m_after(std::move(after)),
      m_fields(ConfigPatch::changedFields(m_before, m_after))
{
    setText(QString::fromStdString(describeChange(m_before, m_after)));
}

void ConfigChangeCommand::apply(const BatchingConfig &values, const QString &origin)
{
    // The names come from ConfigPatch itself, so they are always known.
    // A refusal (the restored values no longer fit with what others set
    // since) reaches the panel through configRejected.
    m_bridge.applyPatch(ConfigPatch::fields(values, m_fields).value(), origin);
}

void ConfigChangeCommand::undo()
{
    apply(m_before, QStringLiteral("gui (undo)"));
}

void ConfigChangeCommand::redo()
{
    if (m_skipRedo) {
        m_skipRedo = false;
        return;
    }
    apply(m_after, QStringLiteral("gui (redo)"));
}

} // namespace bp::ui
