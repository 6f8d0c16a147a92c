// The Fleet view's widgets, built once: the source row, the plan's chart,
// the autoscaler panel, the per-replica chart, the two tables and the
// splitters that hold them. The builders run in the order the widgets are
// made, which is the order the keyboard's tab visits them.
#include "fleet_view.h"

#include "source_picker.h"

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

#include <cmath>

namespace bp::ui {

namespace {

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

// Value axes at the bottom (any number) and left (whole replicas) of `c`.
std::pair<QValueAxis *, QValueAxis *> replicaAxes(QChart *c)
{
    auto *x = new QValueAxis, *y = new QValueAxis;
    x->setLabelFormat(QStringLiteral("%g"));
    y->setLabelFormat(QStringLiteral("%d"));
    y->setTitleText(QObject::tr("replicas"));
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    return {x, y};
}

QChartView *chartView(QChart *c, QWidget *parent, int minimumHeight)
{
    auto *view = new QChartView(c, parent);
    view->setRenderHint(QPainter::Antialiasing);
    if (minimumHeight > 0)
        view->setMinimumHeight(minimumHeight);
    return view;
}

} // namespace

QHBoxLayout *FleetView::buildSourceRow(TraceListModel *traces, QPushButton *&refresh)
{
    m_source = new SourcePicker(traces, m_sessions, SourcePicker::Detail::Brief, this);
    m_source->setToolTip(tr("A trace or a session: its stored capacity plans, "
                            "and its replicas when it is a "
                            "simulated fleet"));
    m_plan = new QComboBox(this);
    m_plan->setToolTip(tr("The capacity plans stored for this source (batchpilot "
                          "plan, or the Advisor's "
                          "Plan replicas), newest first"));
    refresh = new QPushButton(tr("↻"), this);
    refresh->setToolTip(tr("List the plans and autoscaler runs again"));
    refresh->setFixedWidth(refresh->fontMetrics().horizontalAdvance(QStringLiteral("↻")) + 20);
    auto *top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Source"), this));
    top->addWidget(m_source, 2);
    top->addWidget(new QLabel(tr("Plan"), this));
    top->addWidget(m_plan, 3);
    m_autoscale = new QComboBox(this);
    m_autoscale->setToolTip(tr("The autoscaler replays stored for this trace "
                               "(batchpilot autoscale --trace), "
                               "newest first"));
    m_autoscale->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_autoscale->setMinimumContentsLength(24);
    m_autoscaleLabel = new QLabel(tr("Autoscaler"), this);
    top->addWidget(m_autoscaleLabel);
    top->addWidget(m_autoscale, 3);
    top->addWidget(refresh);
    m_summary = new QLabel(tr("Pick a trace or session with a capacity plan (batchpilot "
                              "plan --trace ID "
                              "--slo 'p99<=2s', or the Advisor's Plan replicas)."),
                           this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return top;
}

QChartView *FleetView::buildPlanChart()
{
    m_planChart = chart(tr("Replicas needed per window"));
    m_chosen = new QLineSeries(m_planChart);
    m_chosen->setName(tr("fewest replicas"));
    m_chosen->setPen(QPen(QColor(40, 110, 200), 2.5));
    m_planChart->addSeries(m_chosen);
    const auto [x, y] = replicaAxes(m_planChart);
    m_chosen->attachAxis(x);
    m_chosen->attachAxis(y);
    return chartView(m_planChart, this, 200);
}

// Replicas over time for the picked autoscaler run, the plan's step on the same
// axes.
QChartView *FleetView::buildAutoscaleChart()
{
    m_autoscaleChart = chart(tr("Replicas over time"));
    const auto step = [this](const QString &name, const QPen &pen) {
        auto *s = new QLineSeries(m_autoscaleChart);
        s->setName(name);
        s->setPen(pen);
        return s;
    };
    m_asPlan = step(tr("plan"), QPen(QColor(40, 110, 200), 2.5));
    // Billed: a shaded area under its step line (what serving does not cover:
    // starting and draining).
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
    const auto [ax, ay] = replicaAxes(m_autoscaleChart);
    for (QAbstractSeries *s : std::initializer_list<QAbstractSeries *>{billedArea, m_asPlan, m_asWanted,
                                                                       m_asServing, m_asColdMisses}) {
        m_autoscaleChart->addSeries(s); // in drawing order: the markers on top
        s->attachAxis(ax);
        s->attachAxis(ay);
    }
    connect(m_asColdMisses, &QXYSeries::hovered, this, &FleetView::coldMissHovered);
    return chartView(m_autoscaleChart, this, 200);
}

// The tooltip of the cold-start marker nearest the pointer.
void FleetView::coldMissHovered(const QPointF &point, bool state)
{
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
}

void FleetView::buildAutoscalePanel()
{
    QChartView *autoscaleView = buildAutoscaleChart();
    m_autoscaleSummary = new QLabel(this);
    m_autoscaleSummary->setWordWrap(true);
    m_autoscaleSummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_autoscalePanel = new QWidget(this);
    auto *autoscaleLayout = new QVBoxLayout(m_autoscalePanel);
    autoscaleLayout->setContentsMargins(0, 0, 0, 0);
    autoscaleLayout->addWidget(m_autoscaleSummary);
    autoscaleLayout->addWidget(autoscaleView, 1);
}

QChartView *FleetView::buildLoadChart()
{
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
    return chartView(m_loadChart, this, 0);
}

void FleetView::buildTables()
{
    m_windows = new QStandardItemModel(0, FirstRouterColumn, this);
    m_windowTable = table(m_windows, this);
    m_replicas = new QStandardItemModel(0, ReplicaColumns, this);
    m_replicas->setHorizontalHeaderLabels({tr("replica"), tr("routed"), tr("completed"), tr("busy"),
                                           tr("peak outstanding"), tr("peak KV tokens")});
    m_replicaTable = table(m_replicas, this);
    m_replicaTitle = new QLabel(this);
    m_replicaTitle->setWordWrap(true);
}

// Left: the plan's chart, the autoscaler panel, the windows; right: the
// per-replica chart and table; the source row and summary above.
void FleetView::layOut(QHBoxLayout *top, QChartView *planView, QChartView *loadView)
{
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
}

void FleetView::connectControls(QPushButton *refresh)
{
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
}

} // namespace bp::ui
