// The Fleet view's autoscaler runs: a stored replay of a
// policy over a trace (`batchpilot autoscale --trace`, table autoscale_runs)
// drawn as replicas over time beside the plan's replicas per window, the
// windows with misses during a cold start marked.
//
// The document is read and reduced off the GUI thread: a week's run has
// ~40k timeline rows (one per 15 s decision where anything changed); each
// step line keeps only the points where its own value changes.
#include "fleet_view.h"

#include "trace_list_model.h"

#include <QChart>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <vector>

namespace bp::ui {

namespace {

using nlohmann::json;

// A step line through (at_s, value) rows: the first row, then two points
// (old value, new value) where the value changes, and the last value held
// to `endS`. x in `unit` seconds.
struct Step {
    QList<QPointF> points;
    double unit = 1;
    bool started = false;
    double last = 0;
    void add(double atS, double value)
    {
        if (!started) {
            points << QPointF(atS / unit, value);
            started = true;
        } else if (value != last) {
            points << QPointF(atS / unit, last) << QPointF(atS / unit, value);
        }
        last = value;
    }
    void end(double endS)
    {
        if (started && endS / unit > points.back().x())
            points << QPointF(endS / unit, last);
    }
};

// A line that changes more often than a chart can show (a policy that
// flaps every period over a week: ~80k points, seconds to paint) drawn as
// its envelope: the span cut into `buckets`, each bucket with changes as
// the value it was entered with, its lowest and highest, and its last —
// at most 4 points a bucket (a pixel or two), the first and last points
// kept. A line of at most 4 × `buckets` points is kept whole.
QList<QPointF> envelope(const QList<QPointF> &points, int buckets)
{
    if (points.size() <= 4 * buckets)
        return points;
    const double x0 = points.front().x(), x1 = points.back().x();
    const double width = (x1 - x0) / buckets;
    QList<QPointF> out;
    out.reserve(4 * buckets + 2);
    out << points.front();
    double carry = points.front().y();
    const auto push = [&out](QPointF p) {
        if (out.back() != p)
            out << p;
    };
    for (qsizetype i = 1; i + 1 < points.size();) {
        const auto bucket = std::int64_t((points[i].x() - x0) / width);
        const double first = points[i].x();
        double low = points[i].y(), high = low, lastX = first, lastY = low;
        for (; i + 1 < points.size() && std::int64_t((points[i].x() - x0) / width) == bucket; ++i) {
            low = std::min(low, points[i].y());
            high = std::max(high, points[i].y());
            lastX = points[i].x();
            lastY = points[i].y();
        }
        push({first, carry});
        push({first, low});
        push({first, high});
        push({lastX, lastY});
        carry = lastY;
    }
    push(points.back());
    return out;
}
constexpr int kEnvelopeBuckets = 400;
constexpr int kDashedPoints = 500;

QString hours(double h)
{
    return QString::number(h, 'f', h >= 100 ? 0 : 1);
}

QString money(const json &v)
{
    return QString::number(v.get<double>(), 'f', 2);
}

QString clockOf(double seconds)
{
    const auto s = std::int64_t(std::llround(seconds));
    const std::int64_t day = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, sec = s % 60;
    QString t = QStringLiteral("%1:%2").arg(h, 2, 10, QChar('0')).arg(m, 2, 10, QChar('0'));
    if (sec)
        t += QStringLiteral(":%1").arg(sec, 2, 10, QChar('0'));
    return (day ? QObject::tr("day %1 ").arg(day + 1) : QString()) + t;
}

double number(const json &o, const char *key, double otherwise = 0)
{
    const auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<double>() : otherwise;
}

} // namespace

Result<AutoscaleDrawing> autoscaleDrawing(const StoredAutoscaleRun &stored)
{
    const auto refuse = [&stored](const QString &why) {
        return Status(
            StatusCode::InvalidArgument,
            QObject::tr("Autoscaler run %1 cannot be drawn: %2").arg(stored.id).arg(why).toStdString());
    };
    const json &doc = stored.result;
    if (!doc.is_object() || !doc.contains("run") || !doc["run"].is_object())
        return refuse(QObject::tr("its document has no \"run\""));
    const json &run = doc["run"];
    if (!run.contains("timeline") || !run["timeline"].is_array())
        return refuse(QObject::tr("its document has no replicas over time (run.timeline)"));
    if (!run.contains("windows") || !run["windows"].is_array())
        return refuse(QObject::tr("its document has no SLO windows (run.windows)"));

    AutoscaleDrawing d;
    d.id = stored.id;
    try {
        // The columns by name when the document names them.
        int at = 0, ready = 1, starting = 2, draining = 3, wanted = 4;
        if (run.contains("timeline_columns") && run["timeline_columns"].is_array()) {
            const auto columns = run["timeline_columns"].get<std::vector<std::string>>();
            const auto index = [&columns](const char *name, int otherwise) {
                const auto it = std::find(columns.begin(), columns.end(), name);
                return it == columns.end() ? otherwise : int(it - columns.begin());
            };
            at = index("at_s", at);
            ready = index("ready", ready);
            starting = index("starting", starting);
            draining = index("draining", draining);
            wanted = index("wanted", wanted);
        }
        const int width = std::max({at, ready, starting, draining, wanted}) + 1;
        const json &timeline = run["timeline"];
        const json &windows = run["windows"];
        const json plan = doc.value("plan", json());
        const bool hasPlan = plan.is_object() && plan.contains("replicas") && plan["replicas"].is_array();
        const double planWindowS = hasPlan ? number(plan, "window_s", 3600) : 0;
        if (hasPlan && planWindowS <= 0)
            return refuse(QObject::tr("its plan's window_s is not positive"));

        // The x range: the run's span, its last decision, the plan's last window.
        double spanS = number(run, "span_s");
        if (!timeline.empty()) {
            if (!timeline.back().is_array() || int(timeline.back().size()) < width)
                return refuse(QObject::tr("run.timeline rows are not [%1]")
                                  .arg(QStringLiteral("at_s, ready, starting, draining, wanted")));
            spanS = std::max(spanS, timeline.back()[std::size_t(at)].get<double>());
        }
        for (const json &w : windows)
            spanS = std::max(spanS, number(w, "begin_s") + number(w, "length_s"));
        if (hasPlan)
            spanS = std::max(spanS, planWindowS * double(plan["replicas"].size()));
        d.spanS = std::max(spanS, 1.0);
        d.unitS = d.spanS >= 7200 ? 3600 : d.spanS >= 120 ? 60 : 1; // as the plan's chart

        Step serving{{}, d.unitS}, billed{{}, d.unitS}, want{{}, d.unitS};
        double peak = 0;
        for (const json &row : timeline) {
            if (!row.is_array() || int(row.size()) < width)
                return refuse(QObject::tr("run.timeline rows are not [%1]")
                                  .arg(QStringLiteral("at_s, ready, starting, draining, wanted")));
            const double t = row[std::size_t(at)].get<double>();
            const double r = row[std::size_t(ready)].get<double>();
            const double b =
                r + row[std::size_t(starting)].get<double>() + row[std::size_t(draining)].get<double>();
            const double w = row[std::size_t(wanted)].get<double>();
            serving.add(t, r);
            billed.add(t, b);
            want.add(t, w);
            peak = std::max({peak, b, w});
        }
        for (Step *s : {&serving, &billed, &want})
            s->end(d.spanS);
        d.serving = envelope(serving.points, kEnvelopeBuckets);
        d.billed = envelope(billed.points, kEnvelopeBuckets);
        d.wanted = envelope(want.points, kEnvelopeBuckets);

        if (hasPlan) {
            double begin = 0;
            for (const json &n : plan["replicas"]) {
                const double replicas = n.is_number() ? n.get<double>() : 0;
                d.plan << QPointF(begin / d.unitS, replicas)
                       << QPointF((begin + planWindowS) / d.unitS, replicas);
                peak = std::max(peak, replicas);
                begin += planWindowS;
            }
        }

        std::int64_t misses = 0, coldMisses = 0, requests = 0, met = 0;
        double windowS = number(doc, "window_s");
        for (const json &w : windows) {
            if (!w.is_object())
                return refuse(QObject::tr("run.windows holds something other than windows"));
            const auto cold = std::int64_t(number(w, "cold_start_misses"));
            const auto missed = std::int64_t(number(w, "misses"));
            requests += std::int64_t(number(w, "requests"));
            misses += missed;
            coldMisses += cold;
            met += w.value("met", false) ? 1 : 0;
            if (windowS <= 0)
                windowS = number(w, "length_s");
            if (cold <= 0)
                continue;
            const double begin = number(w, "begin_s"), length = number(w, "length_s");
            const double mean = number(w, "mean_replicas");
            d.coldMisses << QPointF((begin + length / 2) / d.unitS, mean);
            d.coldMissCounts << int(cold);
            d.coldMissTips << QObject::tr(
                                  "%1 – %2: %3 cold-start misses of %4 misses (%5 requests), %6 replicas "
                                  "billed on average")
                                  .arg(clockOf(begin))
                                  .arg(clockOf(begin + length))
                                  .arg(cold)
                                  .arg(missed)
                                  .arg(std::int64_t(number(w, "requests")))
                                  .arg(mean, 0, 'f', 1);
            peak = std::max(peak, mean);
        }
        d.peak = int(std::ceil(peak));

        // The summary: the policy, the windows met, what it billed against the plan and a fixed fleet.
        const QString slo =
            QString::fromStdString(stored.slo.empty() ? doc.value("slo", std::string("?")) : stored.slo);
        const QString policy = QString::fromStdString(
            stored.policy.empty() ? run.value("policy", std::string("?")) : stored.policy);
        const double share =
            number(run, "windows_met_share", windows.empty() ? 1 : double(met) / windows.size());
        QString text = QObject::tr("<b>Autoscaler run %1</b>: <code>%2</code> for %3")
                           .arg(stored.id)
                           .arg(policy.toHtmlEscaped())
                           .arg(slo.toHtmlEscaped());
        if (doc.contains("cold_start_s"))
            text += QObject::tr(", cold start %1 s").arg(number(doc, "cold_start_s"));
        if (doc.contains("period_s"))
            text += QObject::tr(", a decision every %1 s").arg(number(doc, "period_s"));
        text +=
            QObject::tr(".<br><b>%1% of %2 windows met</b>").arg(100 * share, 0, 'f', 1).arg(windows.size());
        if (windowS > 0)
            text += QObject::tr(" (%1 each)").arg(windowLength(windowS));
        text += QObject::tr("; <b>%1 replica-hours</b>").arg(hours(number(run, "replica_hours")));
        if (number(run, "cost") > 0)
            text += QObject::tr(" (cost %1)").arg(money(run["cost"]));
        text += QObject::tr(", peak %1 replicas").arg(number(run, "peak_replicas"));
        if (hasPlan) {
            text += QObject::tr("; the plan: %1 replica-hours").arg(hours(number(plan, "replica_hours")));
            if (number(plan, "cost") > 0)
                text += QObject::tr(" (cost %1)").arg(money(plan["cost"]));
        }
        if (doc.contains("fixed") && doc["fixed"].is_object()) {
            const json &fixed = doc["fixed"];
            text += QObject::tr("; a fixed fleet of %1: %2 replica-hours")
                        .arg(number(fixed, "replicas"))
                        .arg(hours(number(fixed, "replica_hours")));
            if (number(fixed, "cost") > 0)
                text += QObject::tr(" (cost %1)").arg(money(fixed["cost"]));
        }
        text += QObject::tr(".<br>Cold-start misses: <b>%1 of %2 misses</b> (%3 requests), in %4 windows "
                            "(red points)")
                    .arg(coldMisses)
                    .arg(misses)
                    .arg(requests)
                    .arg(d.coldMisses.size());
        text += QLatin1Char('.');
        d.summary = text;
    } catch (const json::exception &e) {
        return refuse(QObject::tr("a malformed document (%1)").arg(QString::fromUtf8(e.what())));
    }
    return d;
}

void FleetView::listAutoscaleRuns(const std::vector<AutoscaleHeadline> &runs)
{
    // The run shown stays, unless a newer one was stored since (then the newest).
    const std::int64_t kept = m_autoscale->currentData().toLongLong();
    const std::int64_t newestBefore = m_autoscale->count() ? m_autoscale->itemData(0).toLongLong() : 0;
    {
        QSignalBlocker block(m_autoscale);
        m_autoscale->clear();
        for (const AutoscaleHeadline &h : runs) {
            const QString text = tr("#%1 %2 — %3% windows met, %4 replica-h, peak %5 (%6)")
                                     .arg(h.id)
                                     .arg(QString::fromStdString(h.policy))
                                     .arg(100 * h.windowsMetShare, 0, 'f', 1)
                                     .arg(hours(h.replicaHours))
                                     .arg(h.peakReplicas)
                                     .arg(formatWallClock(h.createdAtUs));
            m_autoscale->addItem(text, qlonglong(h.id));
            m_autoscale->setItemData(m_autoscale->count() - 1,
                                     tr("%1<br>SLO: %2")
                                         .arg(text.toHtmlEscaped())
                                         .arg(QString::fromStdString(h.slo).toHtmlEscaped()),
                                     Qt::ToolTipRole);
        }
        const bool newer = !runs.empty() && runs.front().id != newestBefore;
        const int keptRow = newer ? -1 : m_autoscale->findData(qlonglong(kept));
        m_autoscale->setCurrentIndex(keptRow >= 0 ? keptRow : m_autoscale->count() ? 0 : -1);
    }
    const bool any = !runs.empty();
    m_autoscale->setVisible(any);
    m_autoscaleLabel->setVisible(any);
    m_autoscalePanel->setVisible(any);
    emit autoscaleRunsListed();
    if (!any) {
        m_autoscaleJobs.reset();
        m_autoscaleShown.reset();
        clearAutoscaleChart();
    } else if (!m_autoscaleShown || *m_autoscaleShown != m_autoscale->currentData().toLongLong()) {
        loadAutoscaleRun();
    }
}

void FleetView::loadAutoscaleRun()
{
    if (!m_store || m_autoscale->currentIndex() < 0)
        return;
    const std::int64_t id = m_autoscale->currentData().toLongLong();
    m_autoscaleJobs.startJob(
        [store = m_store, id](const JobTracker::Ticket &) -> Result<AutoscaleDrawing> {
            Result<StoredAutoscaleRun> run = autoscaleRun(*store, id);
            if (!run)
                return run.status();
            return autoscaleDrawing(*run);
        },
        [this](Result<AutoscaleDrawing> d) {
            if (!d) {
                m_autoscaleShown.reset();
                clearAutoscaleChart();
                m_autoscaleSummary->setText(QString::fromStdString(d.status().message()).toHtmlEscaped());
                emit failed(QString::fromStdString(d.status().message()));
                return;
            }
            showAutoscaleRun(*d);
        });
}

void FleetView::clearAutoscaleChart()
{
    for (QXYSeries *s :
         std::initializer_list<QXYSeries *>{m_asServing, m_asBilled, m_asWanted, m_asPlan, m_asColdMisses})
        s->clear();
    m_coldMissCounts.clear();
    m_coldMissTips.clear();
    m_autoscaleSummary->clear();
}

void FleetView::showAutoscaleRun(const AutoscaleDrawing &d)
{
    m_asServing->replace(d.serving);
    m_asBilled->replace(d.billed);
    m_asWanted->replace(d.wanted);
    // Dashing a line of thousands of jumps takes seconds to paint: solid then.
    QPen wantedPen = m_asWanted->pen();
    wantedPen.setStyle(d.wanted.size() <= kDashedPoints ? Qt::DashLine : Qt::SolidLine);
    m_asWanted->setPen(wantedPen);
    m_asPlan->replace(d.plan);
    m_asColdMisses->replace(d.coldMisses);
    m_coldMissCounts = d.coldMissCounts;
    m_coldMissTips = d.coldMissTips;
    m_autoscaleUnitS = d.unitS;
    m_asPlan->setVisible(!d.plan.isEmpty()); // no plan: no plan line, and none in the legend
    if (auto *x = qobject_cast<QValueAxis *>(m_autoscaleChart->axes(Qt::Horizontal).value(0))) {
        // Ticks at whole hours (minutes, seconds) from 0, at most 8 intervals.
        const double span = d.spanS / d.unitS;
        static const std::vector<double> hourSteps{1, 2, 3, 6, 12, 24, 48, 72, 168},
            otherSteps{1, 2, 5, 10, 15, 30, 60};
        double interval = 1;
        for (double c : d.unitS == 3600 ? hourSteps : otherSteps)
            if ((interval = c) * 8 >= span)
                break;
        while (interval * 8 < span)
            interval *= 2;
        x->setTickType(QValueAxis::TicksDynamic);
        x->setTickAnchor(0);
        x->setTickInterval(interval);
        x->setRange(0, span);
        x->setTitleText(d.unitS == 3600 ? tr("hours of serving time")
                        : d.unitS == 60 ? tr("minutes of serving time")
                                        : tr("seconds of serving time"));
    }
    if (auto *y = qobject_cast<QValueAxis *>(m_autoscaleChart->axes(Qt::Vertical).value(0))) {
        // Whole replicas on the ticks: at most 10 intervals of a whole step.
        int top = std::max(d.peak, 1) + 1;
        const int step = (top + 9) / 10;
        top = (top + step - 1) / step * step;
        y->setRange(0, top);
        y->setTickCount(top / step + 1);
    }
    m_autoscaleSummary->setText(d.summary);
    m_autoscaleShown = d.id;
    emit autoscaleRunShown(d.id);
}

} // namespace bp::ui
