// The Traces view's widgets and wiring, built once: the traces' box, the
// sessions' box, the job row, the first-run banner. The builders run in the
// order the widgets are made, which is the order the keyboard's tab visits
// them.
#include "traces_view.h"

#include "session_list_model.h"
#include "trace_importer.h"
#include "trace_list_model.h"

#include <QFrame>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

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

QWidget *TracesView::buildTraceBox()
{
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
    return traceBox;
}

QWidget *TracesView::buildSessionBox(QPushButton *&refreshButton)
{
    auto *sessionBox = new QGroupBox(tr("Recorded sessions"), this);
    auto *sessionLayout = new QVBoxLayout(sessionBox);
    auto *sessionButtons = new QHBoxLayout;
    m_replaySession = button(tr("Replay…"), tr("Re-drive the selected session's arrivals (Ctrl+R)"), this);
    m_compare = button(tr("Compare"), tr("Compare the two selected sessions (Ctrl+Shift+C)"), this);
    m_deleteSession = button(tr("Delete"), tr("Delete the selected session and its records"), this);
    m_export = button(tr("Export report…"),
                      tr("Write the selected session's report as HTML, PDF or JSON (Ctrl+E)"), this);
    refreshButton = button(tr("Refresh"), tr("Reload both lists (F5)"), this);
    for (QPushButton *b : {m_replaySession, m_compare, m_export, m_deleteSession, refreshButton})
        sessionButtons->addWidget(b);
    sessionButtons->addStretch();
    sessionLayout->addLayout(sessionButtons);
    m_sessionTable = makeTable(m_sessions, this);
    m_sessionTable->setSelectionMode(QAbstractItemView::ExtendedSelection);
    sessionLayout->addWidget(m_sessionTable);
    return sessionBox;
}

// What the running import or replay says, its progress, Cancel.
QHBoxLayout *TracesView::buildJobRow()
{
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
    return jobRow;
}

// First run: a non-modal banner above the lists while no trace exists.
// Returns its "Not now" button.
QPushButton *TracesView::buildSampleOffer()
{
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
    return dismiss;
}

void TracesView::connectButtons(QPushButton *refreshButton, QPushButton *dismiss)
{
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
}

// The importer's and the replay runner's progress and outcomes.
void TracesView::connectJobs()
{
    connect(m_importer, &TraceImporter::progressChanged, m_progress, &QProgressBar::setValue);
    connect(m_importer, &TraceImporter::imported, this, &TracesView::importDone);
    connect(m_importer, &TraceImporter::failed, this, [this](const QString &why) {
        m_sampleImporting = false;
        finishJobUi(tr("Import failed: %1").arg(why), true);
        updateSampleOffer();
    });
    connect(m_replay, &ReplayRunner::progressChanged, this, [this](int percent, const QString &text) {
        m_progress->setValue(percent);
        m_jobText->setText(text);
    });
    connect(m_replay, &ReplayRunner::finished, this, &TracesView::replayDone);
    connect(m_replay, &ReplayRunner::failed, this,
            [this](const QString &why) { finishJobUi(tr("Replay failed: %1").arg(why), true); });
}

void TracesView::importDone(const ImportResult &r)
{
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
}

void TracesView::replayDone(const ReplayOutcome &o)
{
    QString text = o.cancelled ? tr("Replay cancelled; session %1 keeps what ran").arg(o.sessionId)
                               : tr("Replay done: session %1, %2 requests (%3 ok, %4 refused) in %5 "
                                    "s")
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
}

} // namespace bp::ui
