#include "traces_view.h"

#include "replay_dialog.h"
#include "session_list_model.h"
#include "trace_importer.h"
#include "trace_list_model.h"

#include "app/report/report_builder.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace bp::ui {

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

    QWidget *traceBox = buildTraceBox();
    QPushButton *refreshButton = nullptr;
    QWidget *sessionBox = buildSessionBox(refreshButton);
    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(traceBox);
    splitter->addWidget(sessionBox);
    splitter->setStretchFactor(1, 2);
    QHBoxLayout *jobRow = buildJobRow();
    QPushButton *dismiss = buildSampleOffer();

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_sampleOffer);
    layout->addWidget(splitter, 1);
    layout->addLayout(jobRow);
    m_progress->hide();
    m_cancel->hide();

    connectButtons(refreshButton, dismiss);
    connectJobs();

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
