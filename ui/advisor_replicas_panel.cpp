#include "advisor_replicas_panel.h"

#include "fleet_view.h"

#include "engine/core/span_text.h"
#include "engine/store/fleet_store.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QThread>

#include <algorithm>

namespace bp::ui {

namespace {
constexpr int kAllRouters = -1; // the router box's data for "all"
}

AdvisorReplicasPanel::AdvisorReplicasPanel(std::shared_ptr<TraceStore> store, QWidget *parent)
    : QWidget(parent), m_store(std::move(store))
{
    m_maxReplicas = new QSpinBox(this);
    m_maxReplicas->setRange(1, 1024);
    m_maxReplicas->setValue(8);
    m_maxReplicas->setPrefix(tr("≤ "));
    m_maxReplicas->setToolTip(tr("Replica counts searched: 1 up to this"));
    m_router = new QComboBox(this);
    m_router->addItem(tr("all routers"), kAllRouters);
    for (RouterPolicy p : {RouterPolicy::LeastOutstanding, RouterPolicy::PrefixAffinity,
                           RouterPolicy::LeastKv, RouterPolicy::RoundRobin})
        m_router->addItem(QString::fromStdString(std::string(routerPolicyName(p))), int(p));
    m_router->setToolTip(tr("The routers tried in front of the replicas; with all, each window keeps the one "
                            "that needs the fewest"));
    m_window = new QComboBox(this);
    m_window->setEditable(true);
    m_window->addItems(
        {QStringLiteral("1h"), QStringLiteral("15m"), QStringLiteral("1m"), QStringLiteral("10s")});
    m_window->setToolTip(tr("Each window of the source gets its own replica count (as batchpilot plan "
                            "--window): 1h, 15m, 30s, ..."));
    m_plan = new QPushButton(tr("Plan &replicas"), this);
    m_plan->setToolTip(tr("The fewest replicas and the router per window that meet the SLO with the "
                          "selected candidate's knobs (the recommendation when none is selected)"));
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_result = new QLabel(this);
    m_result->setWordWrap(true);
    m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_windows = new QStandardItemModel(0, 5, this);
    m_windows->setHorizontalHeaderLabels(
        {tr("window"), tr("requests"), tr("replicas"), tr("router"), tr("p99 (s)")});
    m_table = new QTableView(this);
    m_table->setModel(m_windows);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setAlternatingRowColors(true);
    m_table->setMaximumHeight(m_table->fontMetrics().height() * 9);
    m_table->hide(); // until a plan is shown

    auto *grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    auto *label = new QLabel(tr("Replicas"), this);
    label->setBuddy(m_maxReplicas);
    grid->addWidget(label, 0, 0);
    grid->addWidget(m_maxReplicas, 0, 1);
    grid->addWidget(m_router, 0, 2);
    grid->addWidget(new QLabel(tr("window"), this), 0, 3);
    grid->addWidget(m_window, 0, 4);
    grid->addWidget(m_plan, 1, 0, 1, 2);
    grid->addWidget(m_cancel, 1, 2);
    grid->addWidget(m_progress, 1, 3, 1, 2);
    grid->addWidget(m_result, 2, 0, 1, 5);
    grid->addWidget(m_table, 3, 0, 1, 5);
    grid->setColumnStretch(2, 1);
    grid->setColumnStretch(4, 1);

    connect(m_plan, &QPushButton::clicked, this, &AdvisorReplicasPanel::planRequested);
    connect(m_cancel, &QPushButton::clicked, this, &AdvisorReplicasPanel::cancel);
    updateButtons();
}

AdvisorReplicasPanel::~AdvisorReplicasPanel()
{
    if (m_cancelFlag)
        m_cancelFlag->store(true);
    m_jobs.reset();
    m_pool.waitForDone(); // the planner checks the flag between simulations
}

void AdvisorReplicasPanel::setResult(const AdvisorResult *result)
{
    if (result)
        m_source = *result;
    else
        m_source.reset();
    updateButtons();
}

Result<FleetPlanRequest> AdvisorReplicasPanel::request(std::size_t index) const
{
    if (!m_source || !m_source->run || index >= m_source->run->result.candidates.size())
        return Status(
            StatusCode::InvalidArgument,
            tr("Run a search first: the replicas are planned for one of its configs.").toStdString());
    const AdvisorRequest &a = m_source->request;
    FleetPlanRequest r;
    r.source = a.source;
    r.rateScale = a.speed;
    r.slo = a.slo;
    r.config = m_source->run->result.candidates[index].config;
    const QString text = m_window->currentText().trimmed();
    const auto window = parseSpan(text.toStdString(), fromSeconds(7 * 86400.0));
    if (!window || *window <= Duration::zero())
        return Status(StatusCode::InvalidArgument,
                      tr("The window must be a length such as 10s, 15m or 1h (at most 7d), not '%1'.")
                          .arg(text)
                          .toStdString());
    r.window = *window;
    r.search.minReplicas = 1;
    r.search.maxReplicas = m_maxReplicas->value();
    if (const int router = m_router->currentData().toInt(); router == kAllRouters)
        r.search.routers = {RouterPolicy::LeastOutstanding, RouterPolicy::PrefixAffinity,
                            RouterPolicy::LeastKv, RouterPolicy::RoundRobin};
    else
        r.search.routers = {RouterPolicy(router)};
    r.search.threads = std::clamp(QThread::idealThreadCount(), 1, 16);
    return r;
}

void AdvisorReplicasPanel::cancel()
{
    if (!running() || !m_cancelFlag)
        return;
    m_cancelFlag->store(true);
    m_result->setText(tr("Cancelling: the windows planned so far are kept…"));
}

void AdvisorReplicasPanel::plan(std::size_t index)
{
    auto r = request(index);
    if (!r) {
        m_result->setStyleSheet(QStringLiteral("color: #b00020"));
        m_result->setText(QString::fromStdString(r.status().message()));
        emit planFinished();
        return;
    }
    if (!m_store || running())
        return;
    if (m_cancelFlag)
        m_cancelFlag->store(true);
    m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
    const std::shared_ptr<const TuneRun> run = m_source->run;
    const bool scaled = m_source->request.lengthScale != 1 || m_source->request.limit != 0;
    const QString label = QString::fromStdString(run->result.candidates[index].label);
    m_result->setStyleSheet({});
    m_result->setText(tr("Planning replicas for %1…").arg(label));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_jobs.startJob(
        [store = m_store, run, request = *r, cancel = m_cancelFlag, label, scaled,
         self = QPointer<AdvisorReplicasPanel>(this)](
            const JobTracker::Ticket &ticket) -> Result<AdvisorFleetPlan> {
            FleetPlanRequest r = request;
            r.search.cancel = cancel.get();
            r.search.progress = [ticket, self](std::size_t done, std::size_t total) {
                ticket.post([self, done, total] {
                    if (!self)
                        return;
                    self->m_progress->setRange(0, int(total));
                    self->m_progress->setValue(int(done));
                });
            };
            auto plan = planFleet(*store, run->calibration, r);
            if (!plan)
                return plan.status();
            AdvisorFleetPlan out;
            out.candidate = label;
            out.slo = QString::fromStdString(describe(r.slo));
            out.scaled = scaled;
            r.search.progress = nullptr;
            r.search.cancel = nullptr;
            out.document = planDocument(*plan, r, run->calibration);
            StoredPlan stored;
            if (r.source.kind == ReplaySource::Kind::Trace)
                stored.sourceTraceId = r.source.id;
            else
                stored.sourceSessionId = r.source.id;
            stored.calibrationId = run->calibration.id;
            stored.slo = describe(r.slo);
            stored.result = out.document;
            auto id = saveCapacityPlan(*store, stored);
            if (!id)
                return id.status();
            out.planId = *id;
            out.document["plan_id"] = *id;
            out.plan = std::move(*plan);
            return out;
        },
        [this, source = r->source](Result<AdvisorFleetPlan> result) {
            if (!result) {
                m_result->setStyleSheet(QStringLiteral("color: #b00020"));
                m_result->setText(QString::fromStdString(result.status().message()));
            } else {
                show(*result);
                emit planStored(result->planId, source.kind == ReplaySource::Kind::Session, source.id);
            }
            updateButtons();
            emit planFinished();
        });
    updateButtons();
}

void AdvisorReplicasPanel::show(const AdvisorFleetPlan &p)
{
    m_last = p;
    const FleetPlan &plan = p.plan;
    const double windowS = p.document.value("window_s", 0.0);
    m_windows->removeRows(0, m_windows->rowCount());
    std::size_t done = 0;
    for (const PlannedWindow &w : plan.windows) {
        const WindowChoice &c = w.choice;
        done += c.done;
        m_windows->appendRow(
            {fleetCell(QStringLiteral("%1 s").arg(w.beginS, 0, 'f', 0)),
             fleetCell(QString::number(w.requests), qulonglong(w.requests)),
             fleetCell(!c.done          ? QStringLiteral("–")
                       : c.replicas > 0 ? QString::number(c.replicas)
                                        : tr("not met at %1").arg(m_maxReplicas->value()),
                       c.replicas),
             fleetCell(c.done ? QString::fromStdString(std::string(routerPolicyName(c.router)))
                              : QStringLiteral("–")),
             fleetCell(c.done ? QString::number(c.verdict.p99S, 'f', 3) : QStringLiteral("–"),
                       c.verdict.p99S)});
    }
    m_table->resizeColumnsToContents();
    m_table->show();
    if (!plan.cancelled)
        m_progress->setValue(m_progress->maximum());
    QString text = tr("%1 %2 with %3: peak <b>%4 replicas</b> over %5 windows of %6, %7 replica-hours; "
                      "%8 simulations in %9 s. Stored as capacity plan %10 (the Fleet view shows it).")
                       .arg(plan.cancelled ? tr("Cancelled: planned %1 windows of").arg(done) : tr("Planned"))
                       .arg(p.slo.toHtmlEscaped())
                       .arg(p.candidate.toHtmlEscaped())
                       .arg(plan.peakReplicas)
                       .arg(plan.windows.size())
                       .arg(windowLength(windowS))
                       .arg(plan.replicaHours, 0, 'f', 1)
                       .arg(plan.evaluations)
                       .arg(plan.wallSeconds, 0, 'f', 1)
                       .arg(p.planId);
    if (plan.anyUnmet)
        text += tr(" <span style='color:#b00020'>Some windows miss the SLO even with %1 replicas.</span>")
                    .arg(m_maxReplicas->value());
    if (p.scaled)
        text += tr(" (The planner takes every arrival at its recorded length: the search's lengths and "
                   "limit do not apply.)");
    m_result->setStyleSheet({});
    m_result->setText(text);
}

void AdvisorReplicasPanel::updateButtons()
{
    const bool busy = running();
    m_plan->setEnabled(!busy && m_source && m_source->run && !m_source->run->result.candidates.empty());
    m_cancel->setEnabled(busy);
}

} // namespace bp::ui
