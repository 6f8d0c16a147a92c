#include "fleet_view.h"

#include "session_list_model.h"
#include "source_picker.h"
#include "trace_list_model.h"

#include "engine/store/trace_store.h"

#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QTableView>

#include <cmath>

namespace bp::ui {

QString windowLength(double seconds)
{
    if (seconds >= 3600 && std::fmod(seconds, 3600) == 0)
        return QObject::tr("%1 h").arg(seconds / 3600);
    if (seconds >= 60 && std::fmod(seconds, 60) == 0)
        return QObject::tr("%1 min").arg(seconds / 60);
    return QObject::tr("%1 s").arg(seconds);
}

QStandardItem *fleetCell(const QString &text, const QVariant &value)
{
    auto *item = new QStandardItem(text);
    item->setEditable(false);
    if (value.isValid()) {
        item->setData(value, Qt::UserRole);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    return item;
}

// What a source's listing fetched (off the GUI thread).
struct FleetListing {
    Result<std::vector<PlanHeadline>> plans = std::vector<PlanHeadline>{};
    Result<std::vector<StoredReplica>> replicas = std::vector<StoredReplica>{};
    Result<std::vector<AutoscaleHeadline>> runs = std::vector<AutoscaleHeadline>{};
    double spanS = 0;
};

namespace {

// The plans of a trace or session; a simulated fleet session's replicas and
// span; a trace's autoscaler runs.
FleetListing listSource(TraceStore &store, bool session, std::int64_t id)
{
    FleetListing l;
    l.plans = capacityPlanHeadlines(store, session ? std::optional(id) : std::nullopt,
                                    session ? std::nullopt : std::optional(id));
    if (session) {
        l.replicas = replicaFigures(store, id);
        if (l.replicas && !l.replicas->empty())
            if (auto span = sessionSpanS(store, id))
                l.spanS = *span;
    } else {
        l.runs = autoscaleRunHeadlines(store, id);
    }
    return l;
}

} // namespace

FleetView::FleetView(std::shared_ptr<TraceStore> store, TraceListModel *traces, SessionListModel *sessions,
                     QWidget *parent)
    : QWidget(parent), m_store(std::move(store)), m_sessions(sessions)
{
    QPushButton *refresh = nullptr;
    QHBoxLayout *top = buildSourceRow(traces, refresh);
    QChartView *planView = buildPlanChart();
    buildAutoscalePanel();
    QChartView *loadView = buildLoadChart();
    buildTables();
    layOut(top, planView, loadView);
    connectControls(refresh);
    listAutoscaleRuns({});
    sourceChanged();
}

FleetView::~FleetView()
{
    m_listJobs.reset();
    m_planJobs.reset();
    m_autoscaleJobs.reset();
    m_pool.waitForDone();
}

bool FleetView::setSource(bool session, std::int64_t id)
{
    const int i = m_source->indexOf(session, id);
    if (i < 0)
        return false;
    if (m_source->currentIndex() == i)
        refresh();
    else
        m_source->setCurrentIndex(i);
    return true;
}

void FleetView::sourceChanged()
{
    m_fleetSession = false;
    refresh();
}

void FleetView::refresh()
{
    const std::optional<ReplaySource> source = m_source->source();
    if (!m_store || !source)
        return;
    const bool session = source->kind == ReplaySource::Kind::Session;
    const std::int64_t id = source->id;
    m_listJobs.startJob([store = m_store, session,
                         id](const JobTracker::Ticket &) { return listSource(*store, session, id); },
                        [this, session, id](FleetListing l) { showListing(l, session, id); });
}

void FleetView::showListing(FleetListing &l, bool session, std::int64_t id)
{
    for (const Status &s : {l.plans.status(), l.replicas.status(), l.runs.status()})
        if (!s) {
            m_summary->setText(QString::fromStdString(s.message()));
            emit failed(m_summary->text());
            return;
        }
    listPlans(*l.plans);
    m_fleetSession = session && !l.replicas->empty();
    if (m_fleetSession)
        showFleetReplicas(id, *l.replicas, l.spanS);
    listAutoscaleRuns(*l.runs);
    emit plansListed();
    if (m_plan->count() == 0)
        clearPlan(session, id);
    else if (!m_shown || m_shown->id != m_plan->currentData().toLongLong())
        loadPlan();
}

void FleetView::listPlans(const std::vector<PlanHeadline> &plans)
{
    // The plan shown stays, unless a newer one was stored since (then the
    // newest).
    const std::int64_t kept = m_plan->currentData().toLongLong();
    const std::int64_t newestBefore = m_plan->count() ? m_plan->itemData(0).toLongLong() : 0;
    QSignalBlocker block(m_plan);
    m_plan->clear();
    for (const PlanHeadline &h : plans)
        m_plan->addItem(tr("plan %1: %2, %3 windows of %4, peak %5 replicas (%6)")
                            .arg(h.id)
                            .arg(QString::fromStdString(h.slo))
                            .arg(h.windows)
                            .arg(windowLength(h.windowS))
                            .arg(h.peakReplicas)
                            .arg(formatWallClock(h.createdAtUs)),
                        qlonglong(h.id));
    const bool newer = !plans.empty() && plans.front().id != newestBefore;
    const int keptRow = newer ? -1 : m_plan->findData(qlonglong(kept));
    m_plan->setCurrentIndex(keptRow >= 0 ? keptRow : m_plan->count() ? 0 : -1);
}

// A simulated fleet session: its replica_figures rows, busy as a share of its
// span.
void FleetView::showFleetReplicas(std::int64_t id, const std::vector<StoredReplica> &replicas, double spanS)
{
    QString router = QStringLiteral("?");
    if (m_sessions && m_sessions->rowOf(id) >= 0) {
        const SessionInfo &s = m_sessions->sessions()[std::size_t(m_sessions->rowOf(id))];
        router = QString::fromStdString(
            s.replay.value("fleet", nlohmann::json::object()).value("router", std::string("?")));
    }
    m_replicaTitle->setText(tr("Simulated fleet: session %1, %2 replicas behind "
                               "the %3 router (busy: of the "
                               "session's %4 s)")
                                .arg(id)
                                .arg(replicas.size())
                                .arg(router)
                                .arg(spanS, 0, 'f', 1));
    m_replicas->removeRows(0, m_replicas->rowCount());
    for (int c = 0; c < ReplicaColumns; ++c)
        m_replicaTable->setColumnHidden(c, false);
    QStringList labels;
    QList<double> busy;
    for (const StoredReplica &r : replicas) {
        const double b = spanS > 0 ? 100 * r.busyS / spanS : 0;
        m_replicas->appendRow({fleetCell(QString::number(r.replica), r.replica),
                               fleetCell(QString::number(r.routed), qlonglong(r.routed)),
                               fleetCell(QString::number(r.completed), qlonglong(r.completed)),
                               fleetCell(QStringLiteral("%1%").arg(b, 0, 'f', 1), b),
                               fleetCell(QString::number(r.peakOutstanding), qlonglong(r.peakOutstanding)),
                               fleetCell(QString::number(r.peakKvTokens), qlonglong(r.peakKvTokens))});
        labels << QString::number(r.replica);
        busy << b;
    }
    showReplicas(labels, busy);
}

// No plan for the source: the windows, the plan's lines (and, but for a fleet
// session, the replicas) go.
void FleetView::clearPlan(bool session, std::int64_t id)
{
    m_shown.reset();
    m_windows->removeRows(0, m_windows->rowCount());
    m_chosen->clear();
    for (QXYSeries *s : m_routerLines)
        s->clear();
    m_summary->setText(tr("No capacity plan for this source yet: batchpilot plan %1 %2 --slo "
                          "'p99<=2s', or the Advisor's Plan replicas.")
                           .arg(session ? QStringLiteral("--session") : QStringLiteral("--trace"))
                           .arg(id));
    if (!m_fleetSession) {
        m_replicas->removeRows(0, m_replicas->rowCount());
        m_replicaTitle->clear();
        showReplicas({}, {});
    }
}

void FleetView::loadPlan()
{
    if (!m_store || m_plan->currentIndex() < 0)
        return;
    const std::int64_t id = m_plan->currentData().toLongLong();
    m_planJobs.startJob(
        [store = m_store, id](const JobTracker::Ticket &) { return capacityPlan(*store, id); },
        [this](Result<StoredPlan> plan) {
            if (!plan) {
                m_summary->setText(QString::fromStdString(plan.status().message()));
                emit failed(m_summary->text());
                return;
            }
            showPlan(std::move(*plan));
        });
}

} // namespace bp::ui
