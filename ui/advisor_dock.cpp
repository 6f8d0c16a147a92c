#include "advisor_dock.h"

#include "advisor_candidates_model.h"
#include "advisor_chart.h"
#include "advisor_replicas_panel.h"
#include "duration_spin_box.h"
#include "source_picker.h"

#include "engine/sim/calibration/calibration_store.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QThread>
#include <QUndoStack>
#include <QVBoxLayout>

#include <cmath>

namespace bp::ui {

namespace {
QString ms(double seconds)
{
    return std::isfinite(seconds) ? QString::number(seconds * 1e3, 'f', seconds < 0.01 ? 2 : 1)
                                  : QStringLiteral("∞");
}

// A row whose field is a layout gets no buddy from QFormLayout (its
// mnemonic would show as a literal '&'): label it with one.
QLabel *buddyLabel(const QString &text, QWidget *buddy, QWidget *parent)
{
    auto *label = new QLabel(text, parent);
    label->setBuddy(buddy);
    return label;
}

DurationSpinBox *bound(qint64 us, QWidget *parent)
{
    auto *box = new DurationSpinBox(parent);
    box->setMinimumUs(100);
    box->setMaximumUs(600'000'000);
    box->setValueUs(us);
    return box;
}
} // namespace

AdvisorDock::AdvisorDock(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store, TraceListModel *traces,
                         SessionListModel *sessions, QUndoStack *undo, QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_store(std::move(store)), m_undo(undo)
{
    qRegisterMetaType<AdvisorPrediction>();
    m_search = new AdvisorSearch(m_store, this);

    auto *form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    addSourceRows(form, traces, sessions);
    addLoadRow(form);
    addSloRows(form);
    addCalibrationRows(form);
    addBudgetRow(form);
    QLayout *runRow = buildRunRow();
    buildResults();
    layOut(form, runRow);
    connectForm();
    connectSearch();

    updatePrefixShare();
    updateSloRows();
    refreshCalibrations();
    updateButtons();
}

void AdvisorDock::addSourceRows(QFormLayout *form, TraceListModel *traces, SessionListModel *sessions)
{
    m_source = new SourcePicker(traces, sessions, SourcePicker::Detail::Counts, this);
    m_source->setToolTip(tr("The arrivals to tune for: an imported trace or a recorded session"));
    form->addRow(tr("&Source"), m_source);
    m_prefixShare = new QLabel(this); // the source's reusable prefix, before a search (advisor_sources.cpp)
    m_prefixShare->setWordWrap(true);
    form->addRow(m_prefixShare);
}

void AdvisorDock::addLoadRow(QFormLayout *form)
{
    auto *load = new QHBoxLayout;
    m_speed = new QDoubleSpinBox(this);
    m_speed->setRange(0.01, 10000);
    m_speed->setDecimals(2);
    m_speed->setValue(1);
    m_speed->setSuffix(QStringLiteral(" ×"));
    m_speed->setToolTip(tr("2 = arrival gaps halved (twice the rate)"));
    m_limit = new QSpinBox(this);
    m_limit->setRange(0, std::numeric_limits<int>::max());
    m_limit->setSpecialValueText(tr("all requests"));
    m_limit->setToolTip(tr("Only the first N arrivals"));
    m_lengthScale = new QDoubleSpinBox(this);
    m_lengthScale->setRange(0.001, 1000);
    m_lengthScale->setDecimals(3);
    m_lengthScale->setValue(1);
    m_lengthScale->setToolTip(tr("Multiplies input and output token counts (0.125 = divide by 8)"));
    load->addWidget(m_speed);
    load->addWidget(new QLabel(tr("lengths"), this));
    load->addWidget(m_lengthScale);
    load->addWidget(new QLabel(tr("limit"), this));
    load->addWidget(m_limit, 1);
    form->addRow(buddyLabel(tr("Spee&d"), m_speed, this), load);
}

void AdvisorDock::addSloRows(QFormLayout *form)
{
    const ModelInfo &model = m_bridge.engine().model();
    m_sloKind = new QComboBox(this);
    m_sloKind->addItem(tr("p99 latency (end to end)"));
    m_sloKind->addItem(tr("TTFT p99 + TPOT p99 (generation)"));
    m_sloKind->setCurrentIndex(model.generative && model.name != "builtin:echo" ? 1 : 0);
    form->addRow(tr("S&LO"), m_sloKind);
    m_p99 = bound(200'000, this);
    m_ttft = bound(500'000, this);
    m_tpot = bound(50'000, this);
    form->addRow(tr("p99 ≤"), m_p99);
    m_e2eRows << m_p99 << form->labelForField(m_p99);
    form->addRow(tr("TTFT p99 ≤"), m_ttft);
    form->addRow(tr("TPOT p99 ≤"), m_tpot);
    m_tokenRows << m_ttft << form->labelForField(m_ttft) << m_tpot << form->labelForField(m_tpot);

    m_objective = new QComboBox(this);
    m_objective->addItem(tr("goodput (requests/s within the SLO)"), int(TuneObjective::Goodput));
    m_objective->addItem(tr("throughput (among configs meeting the SLO)"), int(TuneObjective::Throughput));
    form->addRow(tr("&Objective"), m_objective);
}

void AdvisorDock::addCalibrationRows(QFormLayout *form)
{
    auto *calRow = new QHBoxLayout;
    m_calibration = new QComboBox(this);
    m_calibration->setToolTip(tr("The cost model the simulation charges each batch (batchpilot calibrate)"));
    auto *refresh = new QPushButton(tr("↻"), this);
    refresh->setToolTip(tr("List the calibrations again"));
    refresh->setFixedWidth(refresh->fontMetrics().horizontalAdvance(QStringLiteral("↻")) + 20);
    connect(refresh, &QPushButton::clicked, this, &AdvisorDock::refreshCalibrations);
    calRow->addWidget(m_calibration, 1);
    calRow->addWidget(refresh);
    form->addRow(buddyLabel(tr("&Calibration"), m_calibration, this), calRow);
    m_calibrationNote = new QLabel(this);
    m_calibrationNote->setWordWrap(true);
    m_calibrationNote->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_calibrationNote->setStyleSheet(QStringLiteral("color: #b00020"));
    m_calibrationNote->hide();
    form->addRow(m_calibrationNote);
}

void AdvisorDock::addBudgetRow(QFormLayout *form)
{
    auto *effort = new QHBoxLayout;
    m_budget = new QSpinBox(this);
    m_budget->setRange(10, 5000);
    m_budget->setValue(240);
    m_budget->setSuffix(tr(" configs"));
    m_budget->setToolTip(tr("Candidate configs simulated at most (capacity probes come on top)"));
    m_instances = new QSpinBox(this);
    m_instances->setRange(1, 16);
    m_instances->setValue(2);
    m_instances->setToolTip(tr("Model instances searched: 1 up to this"));
    effort->addWidget(m_budget, 1);
    effort->addWidget(new QLabel(tr("instances ≤"), this));
    effort->addWidget(m_instances);
    form->addRow(buddyLabel(tr("&Budget"), m_budget, this), effort);
}

QLayout *AdvisorDock::buildRunRow()
{
    auto *runRow = new QHBoxLayout;
    m_run = new QPushButton(tr("&Run search"), this);
    m_run->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    runRow->addWidget(m_run);
    runRow->addWidget(m_cancel);
    runRow->addWidget(m_progress, 1);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return runRow;
}

void AdvisorDock::buildResults()
{
    m_chart = new AdvisorChart(this);
    m_model = new AdvisorCandidatesModel(this);
    m_table = new QTableView(this);
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);

    m_verifyPanel = new AdvisorVerifyPanel(m_search, this);
    m_replicas = new AdvisorReplicasPanel(m_store, this);

    m_apply = new QPushButton(tr("&Apply live"), this);
    m_apply->setToolTip(tr("Set the selected candidate's knobs (the recommendation when none is selected) "
                           "on the running engine; origin \"advisor\", undoable"));
}

// The form and its run row above, the chart, the table and Apply below.
void AdvisorDock::layOut(QFormLayout *form, QLayout *runRow)
{
    auto *top = new QWidget(this);
    auto *topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addLayout(form);
    topLayout->addLayout(runRow);
    topLayout->addWidget(m_status);
    topLayout->addWidget(m_summary);
    topLayout->addWidget(m_verifyPanel);
    topLayout->addWidget(m_replicas);
    auto *bottom = new QWidget(this);
    auto *bottomLayout = new QVBoxLayout(bottom);
    bottomLayout->setContentsMargins(0, 0, 0, 0);
    bottomLayout->addWidget(m_table, 1);
    bottomLayout->addWidget(m_apply, 0, Qt::AlignRight);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(m_chart);
    split->addWidget(bottom);
    split->setStretchFactor(1, 3);
    split->setStretchFactor(2, 2);
    split->setChildrenCollapsible(false);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(split);
}

void AdvisorDock::connectForm()
{
    connect(m_sloKind, &QComboBox::currentIndexChanged, this, &AdvisorDock::updateSloRows);
    connect(m_run, &QPushButton::clicked, this, &AdvisorDock::run);
    connect(m_cancel, &QPushButton::clicked, this, &AdvisorDock::cancel);
    connect(m_apply, &QPushButton::clicked, this, &AdvisorDock::applyLive);
    connect(m_calibration, &QComboBox::currentIndexChanged, this, &AdvisorDock::updateButtons);
    connect(m_calibration, &QComboBox::currentIndexChanged, this, &AdvisorDock::updateCalibrationNote);
    connect(m_source, &QComboBox::currentIndexChanged, this, &AdvisorDock::updateButtons);
    connect(m_source, &QComboBox::currentIndexChanged, this, &AdvisorDock::updatePrefixShare);
    // A rebuild of the lists keeps the signals of the box blocked.
    connect(m_source, &SourcePicker::rebuilt, this, [this] {
        updateButtons();
        updatePrefixShare();
    });
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex &current) {
                m_chart->setHighlighted(m_model->candidateAt(current.row()));
                updateButtons();
            });
    connect(m_verifyPanel, &AdvisorVerifyPanel::verifyRequested, this, &AdvisorDock::verify);
    connect(m_replicas, &AdvisorReplicasPanel::planRequested, this, &AdvisorDock::planReplicas);
}

// The search's and the verification's progress, answers and failures.
void AdvisorDock::connectSearch()
{
    connect(m_search, &AdvisorSearch::progressChanged, this, [this](int done, int total) {
        m_progress->setValue(total > 0 ? std::min(100, 100 * done / total) : 0);
        m_status->setText(tr("Simulating: %1 of about %2 configs and capacity probes").arg(done).arg(total));
    });
    connect(m_search, &AdvisorSearch::finished, this, &AdvisorDock::showResult);
    connect(m_search, &AdvisorSearch::failed, this, [this](const QString &m) {
        const bool verifying = m_verifying;
        m_verifying = false;
        showProblem(m);
        updateButtons();
        if (verifying)
            emit verificationFinished();
        else
            emit searchFinished();
    });
    connect(m_search, &AdvisorSearch::verificationStarted, this, [this](const VerifyPlan &p) {
        m_status->setText(tr("Verifying %1 for real over %2: %3 requests, expected %4 of real time (Cancel "
                             "keeps what was verified)")
                              .arg(QString::fromStdString(p.label), QString::fromStdString(describe(p.spec)))
                              .arg(p.window.size())
                              .arg(aboutDuration(p.expectedSeconds)));
    });
    connect(m_search, &AdvisorSearch::verificationProgress, this, [this](int done, int total) {
        m_progress->setValue(total > 0 ? std::min(100, 100 * done / total) : 0);
    });
    connect(m_verifyPanel, &AdvisorVerifyPanel::verificationFinished, this, [this] {
        m_verifying = false;
        const Verification &v = m_verifyPanel->verification()->verification;
        m_status->setStyleSheet({});
        m_status->setText(
            v.partial ? tr("Verification cancelled: the %1 requests verified are kept, marked "
                           "partial (session %2)")
                            .arg(v.compared)
                            .arg(v.replay.sessionId)
                      : tr("Verified over %1 requests (session %2)").arg(v.compared).arg(v.replay.sessionId));
        if (!v.partial)
            m_progress->setValue(100);
        updateButtons();
        emit verificationFinished();
    });
}

AdvisorDock::~AdvisorDock()
{
    m_pool.waitForDone();
}

void AdvisorDock::run()
{
    auto r = request();
    if (!r) {
        showProblem(QString::fromStdString(r.status().message()));
        return;
    }
    m_status->setStyleSheet({});
    m_status->setText(tr("Planning the arrivals…"));
    m_progress->setValue(0);
    m_search->start(*r);
    updateButtons();
}

void AdvisorDock::cancel()
{
    if (!m_search->running())
        return;
    m_search->cancel();
    m_status->setText(tr("Cancelling…"));
}

void AdvisorDock::showProblem(const QString &text)
{
    m_status->setStyleSheet(QStringLiteral("color: #b00020"));
    m_status->setText(text);
    emit message(text);
}

void AdvisorDock::showResult(const AdvisorResult &result)
{
    m_result = result;
    m_verifyPanel->setResult(&result);
    m_replicas->setResult(&result);
    const TuneResult &t = result.tune;
    m_chart->setResult(t, result.request.slo);
    m_model->setResult(t, result.request.objective);
    m_table->resizeColumnsToContents();
    m_progress->setValue(t.cancelled ? m_progress->value() : 100);
    m_status->setStyleSheet({});
    m_status->setText(tr("%1 %2 configs and %3 capacity probes in %4 s over %5 requests (%6 req/s offered); "
                         "calibration %7")
                          .arg(t.cancelled ? tr("Cancelled after") : tr("Simulated"))
                          .arg(t.candidates.size())
                          .arg(t.probes)
                          .arg(t.wallSeconds, 0, 'f', 1)
                          .arg(result.requests)
                          .arg(result.offeredPerS, 0, 'f', 1)
                          .arg(result.calibration) +
                      (result.warning.isEmpty() ? QString() : QStringLiteral("\n⚠ ") + result.warning));
    if (!t.recommended) {
        m_summary->setText(tr("No config was evaluated."));
    } else {
        const TuneCandidate &rec = t.candidates[*t.recommended];
        const TuneFigures &f = rec.figures;
        const bool tokens = result.request.slo.tokenLevel();
        QString text = tr("<b>Recommended: %1</b>%2<br>predicted %3 req/s, goodput %4 req/s, p99 %5 ms")
                           .arg(QString::fromStdString(rec.label).toHtmlEscaped())
                           .arg(t.anyMet ? QString()
                                         : tr(" <span style='color:#b00020'>(no config meets %1 at this "
                                              "load: the nearest)</span>")
                                               .arg(QString::fromStdString(describe(result.request.slo))))
                           .arg(f.throughputPerS, 0, 'f', 1)
                           .arg(f.goodputPerS, 0, 'f', 1)
                           .arg(ms(f.p99S));
        if (tokens)
            text += tr(", TTFT p99 %1 ms, TPOT p99 %2 ms").arg(ms(f.ttftP99S), ms(f.tpotP99S));
        if (t.capacity > 0)
            text += tr("<br>meets %1 up to %2× this load (%3 req/s)")
                        .arg(QString::fromStdString(describe(result.request.slo)).toHtmlEscaped())
                        .arg(t.capacity, 0, 'f', 2)
                        .arg(t.capacity * result.offeredPerS, 0, 'f', 1);
        if (!result.interval.isEmpty())
            text += QStringLiteral("<br>") + result.interval.toHtmlEscaped();
        m_summary->setText(text);
    }
    updateButtons();
    emit searchFinished();
}

void AdvisorDock::updateButtons()
{
    const bool running = m_search->running();
    m_run->setEnabled(!running && m_source->currentIndex() >= 0 && m_calibration->currentIndex() >= 0);
    m_cancel->setEnabled(running);
    // A remote server's model (vLLM, TGI, SGLang, Triton) is not this
    // engine: its pick is applied on that server (tune --target prints how).
    const bool embedded =
        m_result && (m_result->tune.candidates.empty() ||
                     m_result->tune.candidates.front().config.server.kind == ServerKind::BatchPilot);
    m_apply->setEnabled(!running && m_result && embedded && m_model->rowCount() > 0);
    m_verifyPanel->verifyButton()->setEnabled(!running && m_result && embedded && m_result->run &&
                                              m_model->rowCount() > 0);
}

} // namespace bp::ui
