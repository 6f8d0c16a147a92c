#include "advisor_dock.h"

#include "advisor_candidates_model.h"
#include "advisor_chart.h"
#include "config_change_command.h"
#include "duration_spin_box.h"
#include "session_list_model.h"
#include "trace_list_model.h"

#include "engine/sim/calibration_store.h"

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
constexpr int kTrace = 0, kSession = 1; // the source box's Qt::UserRole + 1

QString ms(double seconds)
{
    return std::isfinite(seconds) ? QString::number(seconds * 1e3, 'f', seconds < 0.01 ? 2 : 1)
                                  : QStringLiteral("∞");
}
} // namespace

AdvisorDock::AdvisorDock(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store, TraceListModel *traces,
                         SessionListModel *sessions, QUndoStack *undo, QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_store(std::move(store)), m_traces(traces), m_sessions(sessions),
      m_undo(undo)
{
    qRegisterMetaType<AdvisorPrediction>();
    m_search = new AdvisorSearch(m_store, this);
    const ModelInfo &model = bridge.engine().model();

    auto *form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_source = new QComboBox(this);
    m_source->setToolTip(tr("The arrivals to tune for: an imported trace or a recorded session"));
    form->addRow(tr("&Source"), m_source);

    // A row whose field is a layout gets no buddy from QFormLayout (its
    // mnemonic would show as a literal '&'): label it with one.
    auto buddyLabel = [this](const QString &text, QWidget *buddy) {
        auto *label = new QLabel(text, this);
        label->setBuddy(buddy);
        return label;
    };
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
    form->addRow(buddyLabel(tr("Spee&d"), m_speed), load);

    m_sloKind = new QComboBox(this);
    m_sloKind->addItem(tr("p99 latency (end to end)"));
    m_sloKind->addItem(tr("TTFT p99 + TPOT p99 (generation)"));
    m_sloKind->setCurrentIndex(model.generative && model.name != "builtin:echo" ? 1 : 0);
    form->addRow(tr("S&LO"), m_sloKind);
    auto bound = [this](qint64 us) {
        auto *box = new DurationSpinBox(this);
        box->setMinimumUs(100);
        box->setMaximumUs(600'000'000);
        box->setValueUs(us);
        return box;
    };
    m_p99 = bound(200'000);
    m_ttft = bound(500'000);
    m_tpot = bound(50'000);
    form->addRow(tr("p99 ≤"), m_p99);
    m_e2eRows << m_p99 << form->labelForField(m_p99);
    form->addRow(tr("TTFT p99 ≤"), m_ttft);
    form->addRow(tr("TPOT p99 ≤"), m_tpot);
    m_tokenRows << m_ttft << form->labelForField(m_ttft) << m_tpot << form->labelForField(m_tpot);

    m_objective = new QComboBox(this);
    m_objective->addItem(tr("goodput (requests/s within the SLO)"), int(TuneObjective::Goodput));
    m_objective->addItem(tr("throughput (among configs meeting the SLO)"), int(TuneObjective::Throughput));
    form->addRow(tr("&Objective"), m_objective);

    auto *calRow = new QHBoxLayout;
    m_calibration = new QComboBox(this);
    m_calibration->setToolTip(tr("The cost model the simulation charges each batch (batchpilot calibrate)"));
    auto *refresh = new QPushButton(tr("↻"), this);
    refresh->setToolTip(tr("List the calibrations again"));
    refresh->setFixedWidth(refresh->fontMetrics().horizontalAdvance(QStringLiteral("↻")) + 20);
    calRow->addWidget(m_calibration, 1);
    calRow->addWidget(refresh);
    form->addRow(buddyLabel(tr("&Calibration"), m_calibration), calRow);
    m_calibrationNote = new QLabel(this);
    m_calibrationNote->setWordWrap(true);
    m_calibrationNote->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_calibrationNote->setStyleSheet(QStringLiteral("color: #b00020"));
    m_calibrationNote->hide();
    form->addRow(m_calibrationNote);

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
    form->addRow(buddyLabel(tr("&Budget"), m_budget), effort);

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

    m_apply = new QPushButton(tr("&Apply live"), this);
    m_apply->setToolTip(tr("Set the selected candidate's knobs (the recommendation when none is selected) "
                           "on the running engine; origin \"advisor\", undoable"));

    auto *top = new QWidget(this);
    auto *topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addLayout(form);
    topLayout->addLayout(runRow);
    topLayout->addWidget(m_status);
    topLayout->addWidget(m_summary);
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

    connect(m_sloKind, &QComboBox::currentIndexChanged, this, &AdvisorDock::updateSloRows);
    connect(refresh, &QPushButton::clicked, this, &AdvisorDock::refreshCalibrations);
    connect(m_run, &QPushButton::clicked, this, &AdvisorDock::run);
    connect(m_cancel, &QPushButton::clicked, this, &AdvisorDock::cancel);
    connect(m_apply, &QPushButton::clicked, this, &AdvisorDock::applyLive);
    connect(m_calibration, &QComboBox::currentIndexChanged, this, &AdvisorDock::updateButtons);
    connect(m_source, &QComboBox::currentIndexChanged, this, &AdvisorDock::updateButtons);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex &current) {
                m_chart->setHighlighted(m_model->candidateAt(current.row()));
                updateButtons();
            });
    connect(m_search, &AdvisorSearch::progressChanged, this, [this](int done, int total) {
        m_progress->setValue(total > 0 ? std::min(100, 100 * done / total) : 0);
        m_status->setText(tr("Simulating: %1 of about %2 configs and capacity probes").arg(done).arg(total));
    });
    connect(m_search, &AdvisorSearch::finished, this, &AdvisorDock::showResult);
    connect(m_search, &AdvisorSearch::failed, this, [this](const QString &m) {
        showProblem(m);
        updateButtons();
        emit searchFinished();
    });
    for (QAbstractItemModel *m :
         {static_cast<QAbstractItemModel *>(m_traces), static_cast<QAbstractItemModel *>(m_sessions)}) {
        if (!m)
            continue;
        connect(m, &QAbstractItemModel::modelReset, this, &AdvisorDock::rebuildSources);
        connect(m, &QAbstractItemModel::rowsInserted, this, &AdvisorDock::rebuildSources);
        connect(m, &QAbstractItemModel::rowsRemoved, this, &AdvisorDock::rebuildSources);
        connect(m, &QAbstractItemModel::dataChanged, this, &AdvisorDock::rebuildSources);
    }
    rebuildSources();
    updateSloRows();
    refreshCalibrations();
    updateButtons();
}

AdvisorDock::~AdvisorDock()
{
    m_pool.waitForDone();
}

void AdvisorDock::rebuildSources()
{
    const QVariant kept = m_source->currentData();
    const QVariant keptKind = m_source->currentData(Qt::UserRole + 1);
    QSignalBlocker block(m_source);
    m_source->clear();
    if (m_traces)
        for (const TraceInfo &t : m_traces->traces())
            m_source->addItem(tr("trace %1: %2 (%3 requests, %4 s)")
                                  .arg(t.id)
                                  .arg(QString::fromStdString(t.name))
                                  .arg(t.rows)
                                  .arg(t.durationS, 0, 'f', 0),
                              qlonglong(t.id));
    const int sessionsFrom = m_source->count();
    if (m_sessions)
        for (const SessionInfo &s : m_sessions->sessions())
            m_source->addItem(tr("session %1: %2, %3 requests")
                                  .arg(s.id)
                                  .arg(m_sessions->describeKind(s))
                                  .arg(s.requestCount),
                              qlonglong(s.id));
    for (int i = 0; i < m_source->count(); ++i)
        m_source->setItemData(i, i < sessionsFrom ? kTrace : kSession, Qt::UserRole + 1);
    int index = 0;
    for (int i = 0; i < m_source->count(); ++i)
        if (m_source->itemData(i) == kept && m_source->itemData(i, Qt::UserRole + 1) == keptKind)
            index = i;
    m_source->setCurrentIndex(m_source->count() ? index : -1);
    updateButtons();
}

void AdvisorDock::updateSloRows()
{
    const bool tokens = m_sloKind->currentIndex() == 1;
    for (QWidget *w : m_e2eRows)
        w->setVisible(!tokens);
    for (QWidget *w : m_tokenRows)
        w->setVisible(tokens);
}

void AdvisorDock::refreshCalibrations()
{
    if (!m_store) {
        m_calibrationNote->setText(tr("No trace database: calibrations are stored in it."));
        m_calibrationNote->show();
        return;
    }
    m_calibrationJobs.startJob(
        [store = m_store](const JobTracker::Ticket &) { return listCalibrations(*store); },
        [this](Result<std::vector<Calibration>> list) {
            const QVariant kept = m_calibration->currentData();
            QSignalBlocker block(m_calibration);
            m_calibration->clear();
            if (!list) {
                showProblem(QString::fromStdString(list.status().message()));
                emit calibrationsListed();
                return;
            }
            const ModelInfo &model = m_bridge.engine().model();
            int match = -1;
            for (const Calibration &c : *list) { // newest first
                m_calibration->addItem(
                    tr("#%1 %2 — %3, fit error %4%")
                        .arg(c.id)
                        .arg(QString::fromStdString(c.describe()), QString::fromStdString(c.source))
                        .arg(100 * c.batchError.medianRel, 0, 'f', 1),
                    qlonglong(c.id));
                if (match < 0 && c.model == model.name)
                    match = m_calibration->count() - 1;
            }
            const int kept_ = m_calibration->findData(kept);
            m_calibration->setCurrentIndex(kept_ >= 0 ? kept_ : std::max(0, match));
            if (list->empty()) {
                m_calibrationNote->setText(tr("No calibration yet: calibrate first. The search simulates "
                                              "with a cost model of the model: run\n  batchpilot calibrate "
                                              "--model %1 --quick\n(or --session ID to fit a recorded "
                                              "session), then press ↻.")
                                               .arg(QString::fromStdString(model.name)));
                m_calibrationNote->show();
            } else if (match < 0) {
                m_calibrationNote->setText(tr("No calibration of %1, the model this console serves: the "
                                              "search would predict another model. Calibrate first: "
                                              "batchpilot calibrate --model %1 --quick")
                                               .arg(QString::fromStdString(model.name)));
                m_calibrationNote->show();
            } else {
                m_calibrationNote->hide();
            }
            updateButtons();
            emit calibrationsListed();
        });
}

Result<AdvisorRequest> AdvisorDock::request() const
{
    if (m_source->currentIndex() < 0)
        return Status(StatusCode::InvalidArgument,
                      "no trace or session to tune for: import a trace or record a session first");
    if (m_calibration->currentIndex() < 0)
        return Status(StatusCode::InvalidArgument,
                      "no calibration: calibrate first (batchpilot calibrate --model " +
                          m_bridge.engine().model().name + " --quick)");
    AdvisorRequest r;
    r.source = {m_source->currentData(Qt::UserRole + 1).toInt() == kTrace ? ReplaySource::Kind::Trace
                                                                          : ReplaySource::Kind::Session,
                m_source->currentData().toLongLong()};
    r.speed = m_speed->value();
    r.lengthScale = m_lengthScale->value();
    r.limit = std::size_t(m_limit->value());
    if (m_sloKind->currentIndex() == 0) {
        r.slo.e2eP99 = std::chrono::microseconds(m_p99->valueUs());
    } else {
        r.slo.ttftP99 = std::chrono::microseconds(m_ttft->valueUs());
        r.slo.tpotP99 = std::chrono::microseconds(m_tpot->valueUs());
    }
    r.objective = TuneObjective(m_objective->currentData().toInt());
    r.calibrationId = m_calibration->currentData().toLongLong();
    r.base = m_bridge.engine().config();
    r.budget = std::size_t(m_budget->value());
    r.maxInstances = m_instances->value();
    // Leave a core to the GUI and the live engine.
    r.threads = std::clamp(QThread::idealThreadCount() - 1, 1, 16);
    return r;
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
                          .arg(result.calibration));
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
        m_summary->setText(text);
    }
    updateButtons();
    emit searchFinished();
}

void AdvisorDock::applyLive()
{
    if (!m_result || m_model->rowCount() == 0)
        return;
    const QModelIndex current = m_table->selectionModel()->currentIndex();
    const int row = current.isValid() ? current.row() : 0; // row 0 is the recommendation
    const TuneCandidate *c = m_model->candidate(row);
    if (!c)
        return;
    // Only the knobs the search moved; the rest stays as it is now (other
    // changes made since the search are kept).
    const BatchingConfig now = m_bridge.engine().config();
    const BatchingConfig target =
        ConfigPatch::fields(c->config, AdvisorSearch::searchedKnobs()).value().appliedTo(now);
    const std::optional<ConfigUpdate> update = m_bridge.applyPatch(
        ConfigPatch::diff(now, target), QString::fromStdString(std::string(kAdvisorOrigin)));
    if (!update) {
        showProblem(
            tr("The engine refused %1 (see the Batching dock)").arg(QString::fromStdString(c->label)));
        return;
    }
    const QString summary = update->version == 0
                                ? tr("the engine already runs %1").arg(QString::fromStdString(c->label))
                                : QString::fromStdString(describeChange(update->before, update->after));
    if (update->version != 0 && m_undo)
        m_undo->push(new ConfigChangeCommand(m_bridge, update->before, update->after));
    AdvisorPrediction p;
    p.configVersion = update->version != 0 ? update->version : m_bridge.engine().snapshot().configVersion;
    p.label = QString::fromStdString(c->label);
    p.p99Ms = c->figures.p99S * 1e3;
    if (m_result->request.slo.tokenLevel() || c->figures.ttftP99S > 0) {
        p.ttftP99Ms = c->figures.ttftP99S * 1e3;
        p.tpotP99Ms = c->figures.tpotP99S * 1e3;
    }
    m_status->setStyleSheet({});
    m_status->setText(tr("Applied %1 live: %2").arg(p.label, summary));
    emit configApplied(summary);
    emit predictionApplied(p);
}

void AdvisorDock::updateButtons()
{
    const bool running = m_search->running();
    m_run->setEnabled(!running && m_source->currentIndex() >= 0 && m_calibration->currentIndex() >= 0);
    m_cancel->setEnabled(running);
    m_apply->setEnabled(!running && m_result && m_model->rowCount() > 0);
}

} // namespace bp::ui
