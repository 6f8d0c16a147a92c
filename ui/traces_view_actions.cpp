// TracesView's actions: replay a trace or a session, compare two, delete,
// export a report, and the first-run offer of the bundled sample trace.
// Construction, the job UI and the buttons are in traces_view.cpp.
#include "traces_view.h"

#include "replay_dialog.h"
#include "session_list_model.h"
#include "trace_importer.h"
#include "trace_list_model.h"

#include "app/report/report_builder.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace bp::ui {

void TracesView::replaySelectedTrace()
{
    if (const std::int64_t id = selectedId(m_traceTable))
        askAndReplay({ReplaySource::Kind::Trace, id});
}

void TracesView::replaySelectedSession()
{
    if (const std::int64_t id = selectedId(m_sessionTable))
        askAndReplay({ReplaySource::Kind::Session, id});
}

void TracesView::askAndReplay(const ReplaySource &source)
{
    const QString what = source.kind == ReplaySource::Kind::Trace ? tr("trace %1").arg(source.id)
                                                                  : tr("session %1").arg(source.id);
    ReplayDialog dialog(what, m_bridge.engine().config(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    ReplayOptions options = dialog.options();
    options.source = source;
    replay(options, dialog.remoteOptions());
}

void TracesView::replay(const ReplayOptions &options, const std::optional<remote::RemoteOptions> &remote)
{
    if (!m_store)
        return;
    startJobUi(tr("Replaying %1 %2…")
                   .arg(options.source.kind == ReplaySource::Kind::Trace ? tr("trace") : tr("session"))
                   .arg(options.source.id));
    m_replay->start(options, remote);
}

void TracesView::compareSelected()
{
    QList<std::int64_t> ids;
    for (const QModelIndex &i : m_sessionTable->selectionModel()->selectedRows())
        ids << i.data(Qt::UserRole).toLongLong();
    if (ids.size() == 1) {
        // One session: against its source when it is a replay.
        const int row = m_sessions->rowOf(ids.front());
        const SessionInfo &s = m_sessions->sessions()[std::size_t(row)];
        if (s.sourceSessionId)
            ids.prepend(*s.sourceSessionId);
    }
    if (ids.size() != 2) {
        emit message(tr("Select two sessions to compare (or one replay of a session)."));
        return;
    }
    std::sort(ids.begin(), ids.end()); // A = the older
    emit compareRequested(ids[0], ids[1]);
}

void TracesView::cancelJob()
{
    m_replay->cancel();
    m_importer->cancel();
    m_jobText->setText(tr("Cancelling…"));
}

void TracesView::deleteSelected()
{
    const std::int64_t trace = selectedId(m_traceTable);
    const std::int64_t session = selectedId(m_sessionTable);
    if (!m_store || (!trace && !session) || session == m_live)
        return;
    const QString what =
        trace ? tr("trace %1").arg(trace) : tr("session %1 and all its records").arg(session);
    if (QMessageBox::question(this, tr("Delete"), tr("Delete %1?").arg(what)) != QMessageBox::Yes)
        return;
    m_deleteJobs.startJob(
        [store = m_store, trace, session](const JobTracker::Ticket &) {
            return trace ? store->deleteTrace(trace) : store->deleteSession(session);
        },
        [this](Status s) {
            if (!s)
                emit message(QString::fromStdString(s.message()));
            refresh();
        });
}

void TracesView::exportSelectedReport()
{
    const std::int64_t selected = selectedId(m_sessionTable);
    const std::int64_t session = selected ? selected : m_live;
    if (!m_store || !session) {
        emit message(tr("Select a session to export its report."));
        return;
    }
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("reports/lastDirectory")).toString();
    QString filter = tr("HTML report (*.html)");
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export the report of session %1").arg(session),
        QDir(dir).filePath(QStringLiteral("batchpilot-session-%1.html").arg(session)),
        tr("HTML report (*.html);;PDF report (*.pdf);;JSON figures (*.json)"), &filter);
    if (path.isEmpty())
        return;
    settings.setValue(QStringLiteral("reports/lastDirectory"), QFileInfo(path).absolutePath());
    exportReport(session, path);
}

void TracesView::exportReport(std::int64_t sessionId, const QString &path)
{
    const auto format = report::formatFromPath(path);
    if (!m_store || !format) {
        const QString why = !m_store ? tr("no trace database")
                                     : tr("%1: the file name must end in .html, .pdf or .json").arg(path);
        finishJobUi(tr("Export failed: %1").arg(why), true);
        emit reportFailed(why);
        return;
    }
    startJobUi(tr("Writing the report of session %1…").arg(sessionId));
    m_cancel->hide();           // a report is short and not cancellable
    m_progress->setRange(0, 0); // busy indicator
    m_reportJobs.startJob(
        [store = m_store, sessionId, path, f = *format](const JobTracker::Ticket &) {
            return report::ReportBuilder(store).write(sessionId, f, path);
        },
        [this, sessionId, path](Status s) {
            m_progress->setRange(0, 100);
            if (!s) {
                const QString why = QString::fromStdString(s.message());
                finishJobUi(tr("Export failed: %1").arg(why), true);
                emit reportFailed(why);
                return;
            }
            m_progress->setValue(100);
            finishJobUi(tr("Report of session %1 written to %2").arg(sessionId).arg(path));
            emit reportExported(sessionId, path);
        });
}

void TracesView::setSampleTracePath(const QString &csvPath)
{
    m_samplePath = csvPath;
    updateSampleOffer();
}

void TracesView::importSample()
{
    if (!m_store || m_samplePath.isEmpty() || m_sampleImporting)
        return;
    m_sampleImporting = true;
    importFile(m_samplePath);
    updateSampleOffer();
}

void TracesView::replaySample()
{
    if (m_traces->rowOf(m_sampleTraceId) < 0)
        return;
    m_sampleDone = true; // the offer has done its job
    updateSampleOffer();
    // The sample is an hour of traffic with prompts of up to 14k tokens: a
    // first replay with the dialog's usual defaults would run for an hour.
    // Seed the choices ReplayDialog remembers with a short one (the first
    // 200 requests, about 40 s at the trace's own rate, token counts / 8 as
    // a CPU needs) -- only when the operator has never replayed anything.
    QSettings settings;
    settings.beginGroup(QStringLiteral("replay"));
    if (!settings.contains(QStringLiteral("lengthScale"))) {
        settings.setValue(QStringLiteral("lengthScale"), 0.125);
        settings.setValue(QStringLiteral("limit"), 200);
    }
    settings.endGroup();
    askAndReplay({ReplaySource::Kind::Trace, m_sampleTraceId});
}

void TracesView::updateSampleOffer()
{
    const int sampleRow = m_traces->rowOf(m_sampleTraceId);
    const bool imported = m_sampleTraceId > 0 && sampleRow >= 0;
    const bool offer = m_listed && m_traces->rowCount() == 0;
    const bool show =
        m_store && !m_samplePath.isEmpty() && !m_sampleDone && (imported || offer || m_sampleImporting);
    if (!show) {
        m_sampleOffer->hide();
        return;
    }
    m_sampleImport->setVisible(!imported);
    m_sampleImport->setEnabled(!m_sampleImporting);
    m_sampleReplay->setVisible(imported);
    if (imported) {
        m_sampleText->setText(
            tr("The sample is trace %1. Replay it to see how batches form on real traffic "
               "(on a CPU, a length scale of 0.125 and a request limit keep a replay short).")
                .arg(m_sampleTraceId));
        if (!m_sampleSelected) { // once: later refreshes keep the operator's selection
            m_sampleSelected = true;
            m_traceTable->selectRow(sampleRow);
        }
    } else {
        m_sampleText->setText(
            tr("No traces yet. Import the bundled sample to have something to replay: one hour "
               "of an Azure LLM conversation service, 19,366 requests (Azure Public Dataset, "
               "CC-BY 4.0: Patel et al., Splitwise, ISCA 2024)."));
    }
    const bool wasHidden = m_sampleOffer->isHidden();
    m_sampleOffer->show();
    if (wasHidden && !imported)
        emit sampleOffered();
}

} // namespace bp::ui
