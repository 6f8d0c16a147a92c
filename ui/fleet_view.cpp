#include "fleet_view.h"

#include "session_list_model.h"
#include "source_picker.h"
#include "trace_list_model.h"

#include "engine/store/trace_store.h"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCursor>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
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

namespace {

struct Listing {
    Result<std::vector<PlanHeadline>> plans = std::vector<PlanHeadline>{};
    Result<std::vector<StoredReplica>> replicas = std::vector<StoredReplica>{};
    Result<std::vector<AutoscaleHeadline>> runs = std::vector<AutoscaleHeadline>{};
    double spanS = 0;
};

QTableView *table(QStandardItemModel *model, QWidget *parent)
{
    auto *view = new QTableView(parent);
    view->setModel(model);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
    view->horizontalHeader()->setStretchLastSection(true);
    view->setAlternatingRowColors(true);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setWordWrap(false);
    return view;
}

QChart *chart(const QString &title)
{
    auto *c = new QChart;
    c->setTitle(title);
    c->setMargins(QMargins(4, 2, 4, 2));
    c->setBackgroundRoundness(0);
    QFont bold;
    bold.setBold(true);
    c->setTitleFont(bold);
    c->legend()->setAlignment(Qt::AlignBottom);
    return c;
}

} // namespace

FleetView::FleetView(std::shared_ptr<TraceStore> store, TraceListModel *traces, SessionListModel *sessions,
                     QWidget *parent)
    : QWidget(parent), m_store(std::move(store)), m_sessions(sessions)
{
    m_source = new SourcePicker(traces, sessions, SourcePicker::Detail::Brief, this);
    m_source->setToolTip(tr("A trace or a session: its stored capacity plans, and its replicas when it is a "
                            "simulated fleet"));
    m_plan = new QComboBox(this);
    m_plan->setToolTip(tr("The capacity plans stored for this source (batchpilot plan, or the Advisor's "
                          "Plan replicas), newest first"));
    auto *refresh = new QPushButton(tr("↻"), this);
    refresh->setToolTip(tr("List the plans and autoscaler runs again"));
    refresh->setFixedWidth(refresh->fontMetrics().horizontalAdvance(QStringLiteral("↻")) + 20);
    auto *top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Source"), this));
    top->addWidget(m_source, 2);
    top->addWidget(new QLabel(tr("Plan"), this));
    top->addWidget(m_plan, 3);
    m_autoscale = new QComboBox(this);
    m_autoscale->setToolTip(tr("The autoscaler replays stored for this trace (batchpilot autoscale --trace), "
                               "newest first"));
    m_autoscale->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_autoscale->setMinimumContentsLength(24);
    m_autoscaleLabel = new QLabel(tr("Autoscaler"), this);
    top->addWidget(m_autoscaleLabel);
    top->addWidget(m_autoscale, 3);
    top->addWidget(refresh);
    m_summary = new QLabel(tr("Pick a trace or session with a capacity plan (batchpilot plan --trace ID "
                              "--slo 'p99<=2s', or the Advisor's Plan replicas)."),
                           this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_planChart = chart(tr("Replicas needed per window"));
    m_chosen = new QLineSeries(m_planChart);
    m_chosen->setName(tr("fewest replicas"));
    m_chosen->setPen(QPen(QColor(40, 110, 200), 2.5));
    m_planChart->addSeries(m_chosen);
    auto *x = new QValueAxis, *y = new QValueAxis;
    x->setLabelFormat(QStringLiteral("%g"));
    y->setLabelFormat(QStringLiteral("%d"));
    y->setTitleText(tr("replicas"));
    m_planChart->addAxis(x, Qt::AlignBottom);
    m_planChart->addAxis(y, Qt::AlignLeft);
    m_chosen->attachAxis(x);
    m_chosen->attachAxis(y);
    auto *planView = new QChartView(m_planChart, this);
    planView->setRenderHint(QPainter::Antialiasing);
    planView->setMinimumHeight(200);

    // Replicas over time for the picked autoscaler run, the plan's step on the same axes.
    m_autoscaleChart = chart(tr("Replicas over time"));
    const auto step = [this](const QString &name, const QPen &pen) {
        auto *s = new QLineSeries(m_autoscaleChart);
        s->setName(name);
        s->setPen(pen);
        return s;
    };
    m_asPlan = step(tr("plan"), QPen(QColor(40, 110, 200), 2.5));
    // Billed: a shaded area under its step line (what serving does not cover: starting and draining).
    m_asBilled = step(QString(), QPen(QColor(220, 110, 20), 1));
    auto *billedArea = new QAreaSeries(m_asBilled);
    billedArea->setName(tr("billed (serving + starting + draining)"));
    billedArea->setPen(QPen(QColor(220, 110, 20), 1));
    billedArea->setBrush(QColor(245, 170, 90, 140));
    m_asWanted = step(tr("wanted"), QPen(QColor(60, 60, 60), 1.2, Qt::DashLine));
    m_asServing = step(tr("serving"), QPen(QColor(30, 150, 80), 2));
    m_asColdMisses = new QScatterSeries(m_autoscaleChart);
    m_asColdMisses->setName(tr("cold-start misses (window; hover for the count)"));
    m_asColdMisses->setMarkerSize(10);
    m_asColdMisses->setColor(QColor(210, 20, 30));
    m_asColdMisses->setBorderColor(Qt::white);
    auto *ax = new QValueAxis, *ay = new QValueAxis;
    ax->setLabelFormat(QStringLiteral("%g"));
    ay->setLabelFormat(QStringLiteral("%d"));
    ay->setTitleText(tr("replicas"));
    m_autoscaleChart->addAxis(ax, Qt::AlignBottom);
    m_autoscaleChart->addAxis(ay, Qt::AlignLeft);
    for (QAbstractSeries *s : std::initializer_list<QAbstractSeries *>{billedArea, m_asPlan, m_asWanted,
                                                                       m_asServing, m_asColdMisses}) {
        m_autoscaleChart->addSeries(s); // in drawing order: the markers on top
        s->attachAxis(ax);
        s->attachAxis(ay);
    }
    connect(m_asColdMisses, &QXYSeries::hovered, this, [this](const QPointF &point, bool state) {
        if (!state) {
            QToolTip::hideText();
            return;
        }
        int best = -1;
        for (int i = 0; i < m_asColdMisses->count(); ++i)
            if (best < 0 || std::abs(m_asColdMisses->at(i).x() - point.x()) <
                                std::abs(m_asColdMisses->at(best).x() - point.x()))
                best = i;
        if (best >= 0 && best < m_coldMissTips.size())
            QToolTip::showText(QCursor::pos(), m_coldMissTips[best]);
    });
    auto *autoscaleView = new QChartView(m_autoscaleChart, this);
    autoscaleView->setRenderHint(QPainter::Antialiasing);
    autoscaleView->setMinimumHeight(200);
    m_autoscaleSummary = new QLabel(this);
    m_autoscaleSummary->setWordWrap(true);
    m_autoscaleSummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_autoscalePanel = new QWidget(this);
    auto *autoscaleLayout = new QVBoxLayout(m_autoscalePanel);
    autoscaleLayout->setContentsMargins(0, 0, 0, 0);
    autoscaleLayout->addWidget(m_autoscaleSummary);
    autoscaleLayout->addWidget(autoscaleView, 1);

    m_loadChart = chart(tr("Per-replica load"));
    auto *bars = new QBarSeries(m_loadChart);
    m_busySet = new QBarSet(tr("busy %"), bars);
    m_busySet->setColor(QColor(40, 110, 200));
    bars->append(m_busySet);
    m_loadChart->addSeries(bars);
    auto *bx = new QBarCategoryAxis;
    auto *by = new QValueAxis;
    by->setRange(0, 100);
    by->setLabelFormat(QStringLiteral("%d%%"));
    m_loadChart->addAxis(bx, Qt::AlignBottom);
    m_loadChart->addAxis(by, Qt::AlignLeft);
    bars->attachAxis(bx);
    bars->attachAxis(by);
    m_loadChart->legend()->hide();
    auto *loadView = new QChartView(m_loadChart, this);
    loadView->setRenderHint(QPainter::Antialiasing);

    m_windows = new QStandardItemModel(0, FirstRouterColumn, this);
    m_windowTable = table(m_windows, this);
    m_replicas = new QStandardItemModel(0, ReplicaColumns, this);
    m_replicas->setHorizontalHeaderLabels({tr("replica"), tr("routed"), tr("completed"), tr("busy"),
                                           tr("peak outstanding"), tr("peak KV tokens")});
    m_replicaTable = table(m_replicas, this);
    m_replicaTitle = new QLabel(this);
    m_replicaTitle->setWordWrap(true);

    auto *left = new QSplitter(Qt::Vertical, this);
    left->addWidget(planView);
    left->addWidget(m_autoscalePanel);
    left->addWidget(m_windowTable);
    left->setStretchFactor(0, 3);
    left->setStretchFactor(1, 4);
    left->setStretchFactor(2, 2);
    auto *right = new QWidget(this);
    auto *rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addWidget(m_replicaTitle);
    rightLayout->addWidget(loadView, 3);
    rightLayout->addWidget(m_replicaTable, 2);
    auto *split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_summary);
    layout->addWidget(split, 1);

    connect(refresh, &QPushButton::clicked, this, &FleetView::refresh);
    connect(m_source, &QComboBox::currentIndexChanged, this, &FleetView::sourceChanged);
    connect(m_plan, &QComboBox::currentIndexChanged, this, &FleetView::loadPlan);
    connect(m_autoscale, &QComboBox::currentIndexChanged, this, &FleetView::loadAutoscaleRun);
    connect(m_windowTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex &current) {
                if (!m_fleetSession && current.isValid())
                    showWindowLoad(current.row());
            });
    // The same source after a rebuild of the lists: its plans stay shown.
    connect(m_source, &SourcePicker::rebuilt, this, [this](bool samePick) {
        if (!samePick)
            sourceChanged();
    });
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
    m_listJobs.startJob(
        [store = m_store, session, id](const JobTracker::Ticket &) {
            Listing l;
            l.plans = capacityPlanHeadlines(*store, session ? std::optional(id) : std::nullopt,
                                            session ? std::nullopt : std::optional(id));
            if (session) {
                l.replicas = replicaFigures(*store, id);
                if (l.replicas && !l.replicas->empty())
                    if (auto span = sessionSpanS(*store, id))
                        l.spanS = *span;
            } else {
                l.runs = autoscaleRunHeadlines(*store, id);
            }
            return l;
        },
        [this, session, id](Listing l) {
            for (const Status &s : {l.plans.status(), l.replicas.status(), l.runs.status()})
                if (!s) {
                    m_summary->setText(QString::fromStdString(s.message()));
                    emit failed(m_summary->text());
                    return;
                }
            // The plan shown stays, unless a newer one was stored since (then the newest).
            const std::int64_t kept = m_plan->currentData().toLongLong();
            const std::int64_t newestBefore = m_plan->count() ? m_plan->itemData(0).toLongLong() : 0;
            {
                QSignalBlocker block(m_plan);
                m_plan->clear();
                for (const PlanHeadline &h : *l.plans)
                    m_plan->addItem(tr("plan %1: %2, %3 windows of %4, peak %5 replicas (%6)")
                                        .arg(h.id)
                                        .arg(QString::fromStdString(h.slo))
                                        .arg(h.windows)
                                        .arg(windowLength(h.windowS))
                                        .arg(h.peakReplicas)
                                        .arg(formatWallClock(h.createdAtUs)),
                                    qlonglong(h.id));
                const bool newer = !l.plans->empty() && l.plans->front().id != newestBefore;
                const int keptRow = newer ? -1 : m_plan->findData(qlonglong(kept));
                m_plan->setCurrentIndex(keptRow >= 0 ? keptRow : m_plan->count() ? 0 : -1);
            }
            m_fleetSession = session && !l.replicas->empty();
            if (m_fleetSession) {
                QString router = QStringLiteral("?");
                if (m_sessions && m_sessions->rowOf(id) >= 0) {
                    const SessionInfo &s = m_sessions->sessions()[std::size_t(m_sessions->rowOf(id))];
                    router = QString::fromStdString(
                        s.replay.value("fleet", nlohmann::json::object()).value("router", std::string("?")));
                }
                m_replicaTitle->setText(
                    tr("Simulated fleet: session %1, %2 replicas behind the %3 router (busy: of the "
                       "session's %4 s)")
                        .arg(id)
                        .arg(l.replicas->size())
                        .arg(router)
                        .arg(l.spanS, 0, 'f', 1));
                m_replicas->removeRows(0, m_replicas->rowCount());
                for (int c = 0; c < ReplicaColumns; ++c)
                    m_replicaTable->setColumnHidden(c, false);
                QStringList labels;
                QList<double> busy;
                for (const StoredReplica &r : *l.replicas) {
                    const double b = l.spanS > 0 ? 100 * r.busyS / l.spanS : 0;
                    m_replicas->appendRow(
                        {fleetCell(QString::number(r.replica), r.replica),
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
            listAutoscaleRuns(*l.runs);
            emit plansListed();
            if (m_plan->count() == 0) {
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
            } else if (!m_shown || m_shown->id != m_plan->currentData().toLongLong()) {
                loadPlan();
            }
        });
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
