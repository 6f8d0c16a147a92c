// The status bar's permanent fields: model, device, data type (the
// parameter count in its tooltip), KV cache bytes per token (models with
// one), REST URL (click to copy), database path, live session id and, once
// non-zero, the trace rows the logger had to drop.
#pragma once

#include "console_context.h"

#include <QObject>

class QLabel;
class QStatusBar;
class QToolButton;

namespace bp::ui {

class StatusInfo : public QObject {
    Q_OBJECT
public:
    StatusInfo(const ConsoleContext &context, QStatusBar *bar);

    // Re-reads the dropped-row count (cheap: an atomic).
    void refresh();
    void copyRestUrl();
    QToolButton *restButton() const { return m_rest; }
    QLabel *droppedLabel() const { return m_dropped; }

private:
    ConsoleContext m_context;
    QStatusBar *m_bar;
    QToolButton *m_rest = nullptr;
    QLabel *m_dropped = nullptr;
};

} // namespace bp::ui
