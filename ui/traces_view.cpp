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

namespace {
QTableView *makeTable(QAbstractItemModel *model, QWidget *parent)
{
    auto *table = new QTableView(parent);
    table->setModel(model);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->verticalHeader()->hide();
    table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 6);
    table->horizontalHeader()->setStretchLastSection(true);
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table->setAlternatingRowColors(true);
    table->setWordWrap(false);
    return table;
}

QPushButton *button(const QString &text, const QString &tip, QWidget *parent)
{
    auto *b = new QPushButton(text, parent);
    b->setToolTip(tip);
    return b;
}
} // namespace

TracesView::TracesView(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store,
                       std::int64_t liveSessionId, ReplayRunner::BackendFactory replayBackend,
                       QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_store(std::move(store)), m_live(liveSessionId)
{
    m_traces = new TraceListModel(this);
    m_sessions = new SessionListModel(this);
    m_sessions->setLiveSessionId(liveSessionId);
    m_importer = new TraceImporter(m_store, this);
    m_replay = new ReplayRunner(m_store, std::move(replayBackend), this);

    auto *traceBox = new QGroupBox(tr("Imported traces"), this);
    auto *traceLayout = new QVBoxLayout(traceBox);
    auto *traceButtons = new QHBoxLayout;
    m_import = button(tr("Import CSV…"), tr("Import an Azure LLM or plain CSV trace (Ctrl+I)"), this);
    m_replayTrace = button(tr("Replay…"), tr("Re-drive the selected trace into a fresh engine"), this);
    m_deleteTrace = button(tr("Delete"), tr("Delete the selected trace from the store"), this);
    for (QPushButton *b : {m_import, m_replayTrace, m_deleteTrace})
        traceButtons->addWidget(b);
    traceButtons->addStretch();
    traceLayout->addLayout(traceButtons);
    m_traceTable = makeTable(m_traces, this);
    traceLayout->addWidget(m_traceTable);

    auto *sessionBox = new QGroupBox(tr("Recorded sessions"), this);
    auto *sessionLayout = new QVBoxLayout(sessionBox);
    auto *sessionButtons = new QHBoxLayout;
    m_replaySession = button(tr("Replay…"), tr("Re-drive the selected session's arrivals (Ctrl+R)"), this);
    m_compare = button(tr("Compare"), tr("Compare the two selected sessions (Ctrl+Shift+C)"), this);
    m_deleteSession = button(tr("Delete"), tr("Delete the selected session and its records"), this);
    m_export = button(tr("Export report…"), tr("Write the selected session's report as HTML, PDF or JSON (Ctrl+E)"), this);
    auto *refreshButton = button(tr("Refresh"), tr("Reload both lists (F5)"), this);
    for (QPushButton *b : {m_replaySession, m_compare, m_export, m_deleteSession, refreshButton})
        sessionButtons->addWidget(b);
    sessionButtons->addStretch();
    sessionLayout->addLayout(sessionButtons);
    m_sessionTable = makeTable(m_sessions, this);
    m_sessionTable->setSelectionMode(QAbstractItemView::ExtendedSelection);
    sessionLayout->addWidget(m_sessionTable);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(traceBox);
    splitter->addWidget(sessionBox);
    splitter->setStretchFactor(1, 2);

    auto *jobRow = new QHBoxLayout;
    m_jobText = new QLabel(this);
    m_jobText->setWordWrap(true);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setMaximumWidth(220);
    m_cancel = button(tr("Cancel"), tr("Cancel the running import or replay"), this);
    jobRow->addWidget(m_jobText, 1);
    jobRow->addWidget(m_progress);
    jobRow->addWidget(m_cancel);

    // First run: a non-modal banner above the lists while no trace exists.
    m_sampleOffer = new QFrame(this);
    m_sampleOffer->setObjectName(QStringLiteral("sampleOffer"));
    m_sampleOffer->setStyleSheet(QStringLiteral("#sampleOffer { background: palette(alternate-base); "
                                                "border: 1px solid palette(mid); border-radius: 4px; }"));
    auto *offerRow = new QHBoxLayout(m_sampleOffer);
    m_sampleText = new QLabel(m_sampleOffer);
    m_sampleText->setWordWrap(true);
    m_sampleImport =
        button(tr("Import sample trace"), tr("Import the bundled Azure LLM trace"), m_sampleOffer);
    m_sampleReplay =
        button(tr("Replay it…"), tr("Replay the sample trace under the current settings"), m_sampleOffer);
    auto *dismiss =
        button(tr("Not now"), tr("Hide this offer (File → Import trace… stays available)"), m_sampleOffer);
    offerRow->addWidget(m_sampleText, 1);
    for (QPushButton *b : {m_sampleImport, m_sampleReplay, dismiss})
        offerRow->addWidget(b);
    m_sampleOffer->hide();

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_sampleOffer);
    layout->addWidget(splitter, 1);
    layout->addLayout(jobRow);
    m_progress->hide();
    m_cancel->hide();

    connect(m_import, &QPushButton::clicked, this, &TracesView::chooseAndImport);
    connect(m_replayTrace, &QPushButton::clicked, this, &TracesView::replaySelectedTrace);
    connect(m_replaySession, &QPushButton::clicked, this, &TracesView::replaySelectedSession);
    connect(m_compare, &QPushButton::clicked, this, &TracesView::compareSelected);
    connect(m_export, &QPushButton::clicked, this, &TracesView::exportSelectedReport);
    connect(m_deleteTrace, &QPushButton::clicked, this, [this] {
        m_sessionTable->clearSelection();
        deleteSelected();
    });
    connect(m_deleteSession, &QPushButton::clicked, this, [this] {
        m_traceTable->clearSelection();
        deleteSelected();
    });
    connect(refreshButton, &QPushButton::clicked, this, &TracesView::refresh);
    connect(m_cancel, &QPushButton::clicked, this, &TracesView::cancelJob);
    connect(m_sampleImport, &QPushButton::clicked, this, &TracesView::importSample);
    connect(m_sampleReplay, &QPushButton::clicked, this, &TracesView::replaySample);
    connect(dismiss, &QPushButton::clicked, this, [this] {
        m_sampleDone = true;
        updateSampleOffer();
    });
    connect(m_sessionTable, &QTableView::doubleClicked, this, &TracesView::compareSelected);
    for (QTableView *t : {m_traceTable, m_sessionTable})
        connect(t->selectionModel(), &QItemSelectionModel::selectionChanged, this,
                &TracesView::updateButtons);
    connect(m_traces, &QAbstractItemModel::modelReset, this, &TracesView::updateButtons);
    connect(m_sessions, &QAbstractItemModel::modelReset, this, &TracesView::updateButtons);

    connect(m_importer, &TraceImporter::progressChanged, m_progress, &QProgressBar::setValue);
    connect(m_importer, &TraceImporter::imported, this, [this](const ImportResult &r) {
        QString text = tr("Imported trace %1 “%2”: %3 requests")
                           .arg(r.trace.id)
                           .arg(QString::fromStdString(r.trace.name))
                           .arg(r.trace.rows);
        if (r.trace.skippedRows)
            text += tr(", %1 malformed rows skipped (first: line %2: %3)")
                        .arg(r.trace.skippedRows)
                        .arg(r.errors.empty() ? 0 : r.errors.front().line)
                        .arg(r.errors.empty() ? QString() : QString::fromStdString(r.errors.front().message));
        finishJobUi(text);
        if (m_sampleImporting)
            m_sampleTraceId = r.trace.id;
        m_sampleImporting = false;
        refresh();
    });
    connect(m_importer, &TraceImporter::failed, this, [this](const QString &why) {
        m_sampleImporting = false;
        finishJobUi(tr("Import failed: %1").arg(why), true);
        updateSampleOffer();
    });
    connect(m_replay, &ReplayRunner::progressChanged, this, [this](int percent, const QString &text) {
        m_progress->setValue(percent);
        m_jobText->setText(text);
    });
    connect(m_replay, &ReplayRunner::finished, this, [this](const ReplayOutcome &o) {
        QString text = o.cancelled ? tr("Replay cancelled; session %1 keeps what ran").arg(o.sessionId)
                                   : tr("Replay done: session %1, %2 requests (%3 ok, %4 refused) in %5 s")
                                         .arg(o.sessionId)
                                         .arg(o.submitted)
                                         .arg(o.completed)
                                         .arg(o.rejected + o.failed)
                                         .arg(o.wallSeconds, 0, 'f', 1);
        if (!o.warning.empty())
            text += tr(" — %1").arg(QString::fromStdString(o.warning));
        finishJobUi(text);
        refresh();
        emit replayFinished(o.sessionId);
    });
    connect(m_replay, &ReplayRunner::failed, this,
            [this](const QString &why) { finishJobUi(tr("Replay failed: %1").arg(why), true); });

    m_autoRefresh.setInterval(5000); // the live session's counts grow
    connect(&m_autoRefresh, &QTimer::timeout, this, [this] {
        if (isVisible())
            refresh();
    });
    if (!m_store) {
        m_jobText->setText(tr("No trace database: recording, import and replay are off."));
        for (QPushButton *b : {m_import, refreshButton})
            b->setEnabled(false);
    } else {
        m_autoRefresh.start();
        refresh();
    }
    updateButtons();
}

TracesView::~TracesView()
{
    m_replay->cancel();
    m_importer->cancel();
    m_pool.waitForDone();
}

void TracesView::refresh()
{
    if (!m_store)
        return;
    using Lists = std::pair<Result<std::vector<TraceInfo>>, Result<std::vector<SessionInfo>>>;
    m_listJobs.startJob(
        [store = m_store](const JobTracker::Ticket &) { return Lists(store->traces(), store->sessions()); },
        [this](Lists lists) {
            if (lists.first)
                m_traces->setTraces(std::move(lists.first.value()));
            if (lists.second)
                m_sessions->setSessions(std::move(lists.second.value()));
            m_listed = m_listed || bool(lists.first);
            updateSampleOffer();
            if (!lists.first || !lists.second)
                emit message(QString::fromStdString(
                    (!lists.first ? lists.first.status() : lists.second.status()).message()));
            updateButtons();
            emit refreshed();
        });
}

void TracesView::chooseAndImport()
{
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("traces/lastImportDir")).toString();
    const QString path = QFileDialog::getOpenFileName(this, tr("Import a request trace"), dir,
                                                      tr("Traces (*.csv *.jsonl *.json);;All files (*)"));
    if (path.isEmpty())
        return;
    settings.setValue(QStringLiteral("traces/lastImportDir"), QFileInfo(path).absolutePath());
    importFile(path);
}

void TracesView::importFile(const QString &csvPath)
{
    if (!m_store)
        return;
    startJobUi(tr("Importing %1…").arg(QFileInfo(csvPath).fileName()));
    m_importer->start(csvPath);
}

std::int64_t TracesView::selectedId(QTableView *view) const
{
    const QModelIndexList rows = view->selectionModel()->selectedRows();
    return rows.isEmpty() ? 0 : rows.front().data(Qt::UserRole).toLongLong();
}

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
        const QString why = !m_store ? tr("no trace database") : tr("%1: the file name must end in .html, .pdf or .json").arg(path);
        finishJobUi(tr("Export failed: %1").arg(why), true);
        emit reportFailed(why);
        return;
    }
    startJobUi(tr("Writing the report of session %1…").arg(sessionId));
    m_cancel->hide(); // a report is short and not cancellable
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

void TracesView::startJobUi(const QString &text)
{
    m_jobText->setText(text);
    m_progress->setValue(0);
    m_progress->show();
    m_cancel->show();
}

void TracesView::finishJobUi(const QString &text, bool error)
{
    m_jobText->setText(text);
    m_jobText->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
    m_cancel->hide();
    if (error)
        m_progress->hide();
    emit message(text);
}

void TracesView::updateButtons()
{
    const bool store = m_store != nullptr;
    const std::int64_t session = selectedId(m_sessionTable);
    m_replayTrace->setEnabled(store && selectedId(m_traceTable) > 0);
    m_deleteTrace->setEnabled(store && selectedId(m_traceTable) > 0);
    m_replaySession->setEnabled(store && session > 0);
    m_deleteSession->setEnabled(store && session > 0 && session != m_live);
    m_compare->setEnabled(store && !m_sessionTable->selectionModel()->selectedRows().isEmpty());
    m_export->setEnabled(store && (session > 0 || m_live > 0));
}

} // namespace bp::ui
