// The Fleet view's drawing of one stored plan (its document as
// `batchpilot plan --json` prints it, engine/sim/fleet/fleet_plan.h
// planDocument) and of the per-replica load.
#include "fleet_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QStandardItemModel>
#include <QTableView>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace bp::ui {

namespace {

using nlohmann::json;

QString clock(double seconds, double unit)
{
    if (unit < 60)
        return QStringLiteral("%1 s").arg(seconds, 0, 'f', seconds < 100 ? 1 : 0);
    const auto s = std::int64_t(seconds);
    const std::int64_t day = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60;
    return (day ? QObject::tr("day %1 ").arg(day + 1) : QString()) +
           QStringLiteral("%1:%2").arg(h, 2, 10, QChar('0')).arg(m, 2, 10, QChar('0'));
}

const QColor kRouterColors[] = {QColor(220, 110, 20), QColor(40, 160, 90), QColor(150, 60, 180),
                                QColor(120, 120, 120)};

} // namespace

namespace {

// The windows table's header: the fixed columns, then each router's minimum.
QStringList planHeaders(const json &routers)
{
    QStringList headers{QObject::tr("window"), QObject::tr("requests"), QObject::tr("replicas"),
                        QObject::tr("router"), QObject::tr("p99 (s)"),  QObject::tr("busiest")};
    for (const json &name : routers)
        headers << QObject::tr("%1 min").arg(QString::fromStdString(name.get<std::string>()));
    return headers;
}

// One window's fixed cells (a window not planned yet shows "–").
QList<QStandardItem *> windowCells(const json &w, double unit, int maxReplicas)
{
    const bool done = w.value("done", false);
    const int replicas = w.value("replicas", 0);
    const auto busy = w.value("replica_busy", std::vector<double>{});
    const double busiest = busy.empty() ? 0 : 100 * *std::max_element(busy.begin(), busy.end());
    return {
        fleetCell(clock(w.value("begin_s", 0.0), unit)),
        fleetCell(QString::number(w.value("requests", 0)), w.value("requests", 0)),
        fleetCell(!done          ? QStringLiteral("–")
                  : replicas > 0 ? QString::number(replicas)
                                 : QObject::tr("not met at %1").arg(maxReplicas),
                  replicas),
        fleetCell(done ? QString::fromStdString(w.value("router", std::string("–"))) : QStringLiteral("–")),
        fleetCell(done ? QString::number(w.value("p99_s", 0.0), 'f', 3) : QStringLiteral("–"),
                  w.value("p99_s", 0.0)),
        fleetCell(done ? QStringLiteral("%1%").arg(busiest, 0, 'f', 0) : QStringLiteral("–"), busiest)};
}

// Router `i`'s own minimum in window `w`: "≥ N" where only the best so far was
// searched.
QStandardItem *routerCell(const json &w, std::size_t i, const std::string &name)
{
    const bool done = w.value("done", false);
    const int replicas = w.value("replicas", 0);
    const int n = w.value("router_minimum", json::object()).value(name, -1);
    return fleetCell(n > 0                     ? QString::number(n)
                     : n < 0 || !done          ? QStringLiteral("–")
                     : i == 0 || replicas == 0 ? QObject::tr("not met")
                                               : QStringLiteral("≥ %1").arg(replicas),
                     n);
}

// The summary above the chart: the search, the peak, the cost, what missed.
QString planSummary(const StoredPlan &plan, const QStringList &routerNames, int unmet)
{
    const json &r = plan.result;
    const json range = r.value("replicas_searched", json::array({1, 1}));
    const int maxReplicas = range.size() == 2 ? range[1].get<int>() : 1;
    QString text = QObject::tr("<b>Plan %1</b>: the fewest replicas meeting %2 in each %3 "
                               "window at %4× the rate, "
                               "searched %5..%6 with %7; config <code>%8</code>.<br>Peak "
                               "<b>%9 replicas</b>, %10 "
                               "replica-hours, %11 simulations in %12 s.")
                       .arg(plan.id)
                       .arg(QString::fromStdString(plan.slo).toHtmlEscaped())
                       .arg(windowLength(r.value("window_s", 0.0)))
                       .arg(r.value("rate_scale", 1.0))
                       .arg(range.size() == 2 ? range[0].get<int>() : 1)
                       .arg(maxReplicas)
                       .arg(routerNames.join(", "))
                       .arg(QString::fromStdString(r.value("config", std::string())).toHtmlEscaped())
                       .arg(r.value("peak_replicas", 0))
                       .arg(r.value("replica_hours", 0.0), 0, 'f', 1)
                       .arg(r.value("evaluations", 0))
                       .arg(r.value("wall_s", 0.0), 0, 'f', 1);
    if (r.contains("cost"))
        text += QObject::tr(" Cost %1 in all, %2 per 1M output tokens.")
                    .arg(r["cost"].value("total", 0.0), 0, 'f', 2)
                    .arg(r["cost"].value("per_million_output_tokens", 0.0), 0, 'f', 4);
    const auto daily = r.value("daily_schedule", std::vector<int>{});
    if (!daily.empty()) {
        QStringList hours;
        for (int n : daily)
            hours << QString::number(n);
        text +=
            QObject::tr("<br>By hour of day (the most any day needed): %1").arg(hours.join(QLatin1Char(' ')));
    }
    if (unmet)
        text += QObject::tr("<br><span style='color:#b00020'>%1 windows miss the "
                            "SLO even with %2 "
                            "replicas.</span>")
                    .arg(unmet)
                    .arg(maxReplicas);
    if (r.value("cancelled", false))
        text += QObject::tr("<br>Cancelled: the windows planned before are shown.");
    return text;
}

} // namespace

void FleetView::showPlan(StoredPlan plan)
{
    const json &r = plan.result;
    const json routers = r.value("routers", json::array());
    const json windows = r.value("windows", json::array());
    const json range = r.value("replicas_searched", json::array({1, 1}));
    const int maxReplicas = range.size() == 2 ? range[1].get<int>() : 1;
    const double windowS = r.value("window_s", 0.0);
    const double spanS = std::max(1.0, double(windows.size()) * windowS);
    const double unit = spanS >= 7200 ? 3600 : spanS >= 120 ? 60 : 1;

    const QStringList headers = planHeaders(routers);
    m_windows->clear();
    m_windows->setColumnCount(int(headers.size()));
    m_windows->setHorizontalHeaderLabels(headers);
    for (int c = FirstRouterColumn; c < m_windows->columnCount(); ++c)
        m_windows->horizontalHeaderItem(c)->setToolTip(
            tr("This router's own fewest replicas. The first router is searched in "
               "full; the others only "
               "below the best so far: \"≥ N\" means no fewer than the best"));
    resetRouterSeries(routers);
    const PlanPeak peak = addPlanWindows(windows, routers, unit, windowS, maxReplicas);
    placePlanSeries(spanS, unit, peak.replicas);
    m_windowTable->resizeColumnsToContents();

    m_summary->setText(
        planSummary(plan, QStringList(headers.mid(FirstRouterColumn)).replaceInStrings(tr(" min"), QString()),
                    peak.unmet));
    m_shown = std::move(plan);
    if (!m_fleetSession && peak.row >= 0) {
        {
            const QSignalBlocker block(m_windowTable->selectionModel());
            m_windowTable->selectRow(peak.row);
        }
        showWindowLoad(peak.row);
    }
    emit planShown(m_shown->id);
}

// The chart's series for a new plan: the first router's minimum as a dashed
// step, the other routers' minima as points where they were found (each
// window's router effect); the chosen count (drawn over them) emptied.
void FleetView::resetRouterSeries(const json &routers)
{
    for (QXYSeries *s : m_routerLines) {
        m_planChart->removeSeries(s);
        delete s;
    }
    m_routerLines.clear();
    m_planChart->removeSeries(m_chosen);
    m_chosen->clear();
    for (std::size_t i = 0; i < routers.size(); ++i) {
        QXYSeries *s = nullptr;
        if (i == 0) {
            auto *line = new QLineSeries;
            line->setPen(QPen(kRouterColors[0], 1.5, Qt::DashLine));
            s = line;
        } else {
            auto *points = new QScatterSeries;
            points->setMarkerSize(9);
            points->setColor(kRouterColors[i % std::size(kRouterColors)]);
            points->setBorderColor(Qt::transparent);
            s = points;
        }
        s->setName(QString::fromStdString(routers[i].get<std::string>()));
        m_routerLines << s;
    }
}

// A row and the chart's points for each window: the chosen count as a step
// (the most searched where none met the SLO), each router's minimum.
FleetView::PlanPeak FleetView::addPlanWindows(const json &windows, const json &routers, double unit,
                                              double windowS, int maxReplicas)
{
    PlanPeak peak;
    for (std::size_t row = 0; row < windows.size(); ++row) {
        const json &w = windows[row];
        const double begin = w.value("begin_s", 0.0), end = begin + w.value("length_s", windowS);
        const bool done = w.value("done", false);
        const int replicas = w.value("replicas", 0);
        QList<QStandardItem *> cells = windowCells(w, unit, maxReplicas);
        for (std::size_t i = 0; i < routers.size(); ++i) {
            const std::string name = routers[i].get<std::string>();
            cells << routerCell(w, i, name);
            const int n = w.value("router_minimum", json::object()).value(name, -1);
            if (!done || n <= 0)
                continue;
            if (i == 0)
                m_routerLines[0]->append({QPointF(begin / unit, n), QPointF(end / unit, n)});
            else
                m_routerLines[int(i)]->append((begin + end) / 2 / unit, n);
        }
        m_windows->appendRow(cells);
        if (!done)
            continue;
        const int n = replicas > 0 ? replicas : maxReplicas;
        peak.unmet += replicas == 0;
        m_chosen->append({QPointF(begin / unit, n), QPointF(end / unit, n)});
        if (n > peak.replicas) {
            peak.replicas = n;
            peak.row = int(row);
        }
    }
    return peak;
}

// The series back on the chart's axes, the chosen count last (on top); the
// axes over the plan's span and up to one above its peak.
void FleetView::placePlanSeries(double spanS, double unit, int peak)
{
    auto *x = qobject_cast<QValueAxis *>(m_planChart->axes(Qt::Horizontal).value(0));
    auto *y = qobject_cast<QValueAxis *>(m_planChart->axes(Qt::Vertical).value(0));
    for (QXYSeries *s : m_routerLines) {
        m_planChart->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    m_planChart->addSeries(m_chosen); // last: drawn on top
    m_chosen->attachAxis(x);
    m_chosen->attachAxis(y);
    x->setRange(0, spanS / unit);
    x->setTitleText(unit == 3600 ? tr("hours from the source's start")
                    : unit == 60 ? tr("minutes from the source's start")
                                 : tr("seconds from the source's start"));
    y->setRange(0, std::max(peak, 1) + 1);
    y->setTickCount(std::min(std::max(peak, 1) + 2, 11));
}

void FleetView::showWindowLoad(int row)
{
    if (!m_shown)
        return;
    const json windows = m_shown->result.value("windows", json::array());
    if (row < 0 || std::size_t(row) >= windows.size())
        return;
    const json &w = windows[std::size_t(row)];
    const auto busy = w.value("replica_busy", std::vector<double>{});
    const auto routed = w.value("replica_routed", std::vector<std::int64_t>{});
    const double spanS = double(windows.size()) * m_shown->result.value("window_s", 0.0);
    m_replicaTitle->setText(tr("Window %1 of plan %2 (%3 requests): %4 replicas behind the %5 "
                               "router, as the "
                               "plan simulated it (busy: of the window)")
                                .arg(clock(w.value("begin_s", 0.0), spanS >= 120 ? 60 : 1))
                                .arg(m_shown->id)
                                .arg(w.value("requests", 0))
                                .arg(busy.size())
                                .arg(QString::fromStdString(w.value("router", std::string("–")))));
    m_replicas->removeRows(0, m_replicas->rowCount());
    for (int c : {Completed, PeakOutstanding, PeakKv}) // the plan keeps routed and busy only
        m_replicaTable->setColumnHidden(c, true);
    QStringList labels;
    QList<double> load;
    for (std::size_t i = 0; i < busy.size(); ++i) {
        const std::int64_t n = i < routed.size() ? routed[i] : 0;
        m_replicas->appendRow({fleetCell(QString::number(i), qlonglong(i)),
                               fleetCell(QString::number(n), qlonglong(n)), fleetCell(QStringLiteral("–")),
                               fleetCell(QStringLiteral("%1%").arg(100 * busy[i], 0, 'f', 1), 100 * busy[i]),
                               fleetCell(QStringLiteral("–")), fleetCell(QStringLiteral("–"))});
        labels << QString::number(i);
        load << 100 * busy[i];
    }
    showReplicas(labels, load);
}

void FleetView::showReplicas(const QStringList &labels, const QList<double> &busy)
{
    m_busySet->remove(0, m_busySet->count());
    m_busySet->append(busy);
    if (auto *x = qobject_cast<QBarCategoryAxis *>(m_loadChart->axes(Qt::Horizontal).value(0))) {
        x->clear();
        x->append(labels);
        x->setTitleText(tr("replica"));
    }
    const double most = busy.isEmpty() ? 0 : *std::max_element(busy.begin(), busy.end());
    if (auto *y = qobject_cast<QValueAxis *>(m_loadChart->axes(Qt::Vertical).value(0)))
        y->setRange(0, std::max(100.0, std::ceil(most / 10) * 10));
    m_replicaTable->resizeColumnsToContents();
    emit replicasShown();
}

} // namespace bp::ui
