#include "status_info.h"

#include <QApplication>
#include <QClipboard>
#include <QFileInfo>
#include <QLabel>
#include <QStatusBar>
#include <QToolButton>

namespace bp::ui {

namespace {
QLabel *field(const QString &text, const QString &tip, QStatusBar *bar)
{
    auto *label = new QLabel(text, bar);
    label->setToolTip(tip);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bar->addPermanentWidget(label);
    return label;
}
} // namespace

StatusInfo::StatusInfo(const ConsoleContext &context, QStatusBar *bar)
    : QObject(bar), m_context(context), m_bar(bar)
{
    const ModelInfo &model = context.bridge->engine().model();
    field(model.architecture.empty()
              ? tr("Model: %1").arg(QString::fromStdString(model.name))
              : tr("Model: %1 (%2)")
                    .arg(QString::fromStdString(model.name), QString::fromStdString(model.architecture)),
          QString::fromStdString(model.description.empty() ? model.name : model.description), bar);
    field(tr("Device: %1").arg(QString::fromStdString(model.device)), tr("Where the model runs"), bar);
    field(tr("Data type: %1").arg(QString::fromStdString(model.dtype)),
          model.parameters > 0
              ? tr("The model's weights and activations (%L1 parameters)").arg(model.parameters)
              : tr("The model's weights and activations"),
          bar);
    if (model.kvBytesPerToken > 0)
        field(tr("KV: %L1 B/token").arg(model.kvBytesPerToken),
              tr("Bytes of KV cache one token takes, over all layers"), bar);

    m_rest = new QToolButton(bar);
    m_rest->setAutoRaise(true);
    if (context.restUrl.isEmpty()) {
        m_rest->setText(tr("REST: off"));
        m_rest->setToolTip(context.restProblem.isEmpty()
                               ? tr("The REST endpoint is not running")
                               : tr("REST endpoint not started: %1").arg(context.restProblem));
        m_rest->setEnabled(false);
    } else {
        m_rest->setText(tr("REST: %1").arg(context.restUrl));
        m_rest->setToolTip(tr("Click to copy the REST URL (Ctrl+Shift+U)"));
        m_rest->setCursor(Qt::PointingHandCursor);
        connect(m_rest, &QToolButton::clicked, this, &StatusInfo::copyRestUrl);
    }
    bar->addPermanentWidget(m_rest);

    if (context.databasePath.isEmpty()) {
        field(tr("DB: none"), tr("No trace database: this session is not recorded"), bar);
    } else {
        QLabel *db =
            field(tr("DB: %1").arg(QFileInfo(context.databasePath).fileName()), context.databasePath, bar);
        if (!context.loggingWarning.isEmpty()) {
            db->setText(db->text() + tr(" (not recording)"));
            db->setToolTip(context.loggingWarning);
            db->setStyleSheet(QStringLiteral("color: #b00020;"));
        }
    }
    field(context.sessionId ? tr("Session: %1").arg(context.sessionId) : tr("Session: not recorded"),
          tr("The live session this console records into the trace database"), bar);
    m_dropped = field(
        QString(),
        tr("Trace rows the logger could not save (the writer fell behind); serving was not slowed"), bar);
    m_dropped->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_dropped->hide();
    refresh();
}

void StatusInfo::refresh()
{
    const std::uint64_t dropped = m_context.droppedRows ? m_context.droppedRows() : 0;
    if (dropped == 0)
        return;
    m_dropped->setText(tr("Dropped trace rows: %L1").arg(dropped));
    m_dropped->show();
}

void StatusInfo::copyRestUrl()
{
    if (m_context.restUrl.isEmpty())
        return;
    QApplication::clipboard()->setText(m_context.restUrl);
    m_bar->showMessage(tr("Copied %1 to the clipboard").arg(m_context.restUrl), 3000);
}

} // namespace bp::ui
