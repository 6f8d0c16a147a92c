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
    m_export = button(tr("Export report…"),
                      tr("Write the selected session's report as HTML, PDF or JSON (Ctrl+E)"), this);
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
