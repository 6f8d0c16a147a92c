// File → Export settings for…: the engine's config in force, written in a
// serving stack's syntax (engine/config/config_export.h; docs/export.md), one action
// per server. Each asks for a file name, then writes; the outcome arrives as
// exported(path) or exportFailed(message) for the status bar.
#pragma once

#include "engine/config/config_export.h"

#include <QMenu>

namespace bp::app {
class EngineBridge;
}

namespace bp::ui {

class ExportSettingsMenu : public QMenu {
    Q_OBJECT
public:
    ExportSettingsMenu(app::EngineBridge &bridge, QWidget *parent = nullptr);

    // "config.pbtxt", "vllm-serve.sh", … — the dialog's default name.
    static QString suggestedFileName(ServerFormat format);

    // Writes the config in force now to `path` (no dialog).
    void exportTo(bp::ServerFormat format, const QString &path);

signals:
    void exported(const QString &path);
    void exportFailed(const QString &message);

private:
    void chooseAndExport(ServerFormat format);

    app::EngineBridge &m_bridge;
};

} // namespace bp::ui
