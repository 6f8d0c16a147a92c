// A stored autoscaler run's document made ready to draw (any thread: the
// Fleet view calls it off the GUI thread). A week's run has ~40k timeline
// rows (one per 15 s decision where anything changed); each step line keeps
// only the points where its own value changes, and a line that still
// changes more often than a chart can show is drawn as its envelope.
#include "fleet_view.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace bp::ui {

QString replicaHours(double h)
{
    return QString::number(h, 'f', h >= 100 ? 0 : 1);
}

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

// The timeline's columns, by name when the document names them.
struct Columns {
    int at = 0, ready = 1, starting = 2, draining = 3, wanted = 4;
    int width() const { return std::max({at, ready, starting, draining, wanted}) + 1; }
};

Columns timelineColumns(const json &run)
{
    Columns c;
    if (!run.contains("timeline_columns") || !run["timeline_columns"].is_array())
        return c;
    const auto columns = run["timeline_columns"].get<std::vector<std::string>>();
    const auto index = [&columns](const char *name, int otherwise) {
        const auto it = std::find(columns.begin(), columns.end(), name);
        return it == columns.end() ? otherwise : int(it - columns.begin());
    };
    c.at = index("at_s", c.at);
    c.ready = index("ready", c.ready);
    c.starting = index("starting", c.starting);
    c.draining = index("draining", c.draining);
    c.wanted = index("wanted", c.wanted);
    return c;
}

QString badRows()
{
    return QObject::tr("run.timeline rows are not [%1]")
        .arg(QStringLiteral("at_s, ready, starting, draining, wanted"));
}

// The document's parts the drawing reads, and what it tallies of the windows.
struct Run {
    Run(const json &doc, const json &run)
        : doc(doc), run(run), timeline(run["timeline"]), windows(run["windows"])
    {
    }
    const json &doc, &run, &timeline, &windows;
    json plan;
    bool hasPlan = false;
    double planWindowS = 0;
    Columns columns;
    double peak = 0; // the most any line reaches so far
    std::int64_t misses = 0, coldMisses = 0, requests = 0, met = 0;
    double windowS = 0; // the SLO windows' length
};

// The x range: the run's span, its last decision, the plan's last window.
// An error text when the last timeline row is malformed.
QString drawSpan(const Run &r, AutoscaleDrawing &d)
{
    double spanS = number(r.run, "span_s");
    if (!r.timeline.empty()) {
        if (!r.timeline.back().is_array() || int(r.timeline.back().size()) < r.columns.width())
            return badRows();
        spanS = std::max(spanS, r.timeline.back()[std::size_t(r.columns.at)].get<double>());
    }
    for (const json &w : r.windows)
        spanS = std::max(spanS, number(w, "begin_s") + number(w, "length_s"));
    if (r.hasPlan)
        spanS = std::max(spanS, r.planWindowS * double(r.plan["replicas"].size()));
    d.spanS = std::max(spanS, 1.0);
    d.unitS = d.spanS >= 7200 ? 3600 : d.spanS >= 120 ? 60 : 1; // as the plan's chart
    return {};
}

// Serving, billed and wanted as step lines (their envelopes when long).
QString drawTimeline(Run &r, AutoscaleDrawing &d)
{
    const Columns &c = r.columns;
    Step serving{{}, d.unitS}, billed{{}, d.unitS}, want{{}, d.unitS};
    for (const json &row : r.timeline) {
        if (!row.is_array() || int(row.size()) < c.width())
            return badRows();
        const double t = row[std::size_t(c.at)].get<double>();
        const double ready = row[std::size_t(c.ready)].get<double>();
        const double b =
            ready + row[std::size_t(c.starting)].get<double>() + row[std::size_t(c.draining)].get<double>();
        const double w = row[std::size_t(c.wanted)].get<double>();
        serving.add(t, ready);
        billed.add(t, b);
        want.add(t, w);
        r.peak = std::max({r.peak, b, w});
    }
    for (Step *s : {&serving, &billed, &want})
        s->end(d.spanS);
    d.serving = envelope(serving.points, kEnvelopeBuckets);
    d.billed = envelope(billed.points, kEnvelopeBuckets);
    d.wanted = envelope(want.points, kEnvelopeBuckets);
    return {};
}

// The plan's replicas per window: two points a window.
void drawPlan(Run &r, AutoscaleDrawing &d)
{
    if (!r.hasPlan)
        return;
    double begin = 0;
    for (const json &n : r.plan["replicas"]) {
        const double replicas = n.is_number() ? n.get<double>() : 0;
        d.plan << QPointF(begin / d.unitS, replicas) << QPointF((begin + r.planWindowS) / d.unitS, replicas);
        r.peak = std::max(r.peak, replicas);
        begin += r.planWindowS;
    }
}

// The windows' tallies, and a marker (with its tooltip) per window with
// cold-start misses.
QString drawColdMisses(Run &r, AutoscaleDrawing &d)
{
    r.windowS = number(r.doc, "window_s");
    for (const json &w : r.windows) {
        if (!w.is_object())
            return QObject::tr("run.windows holds something other than windows");
        const auto cold = std::int64_t(number(w, "cold_start_misses"));
        const auto missed = std::int64_t(number(w, "misses"));
        r.requests += std::int64_t(number(w, "requests"));
        r.misses += missed;
        r.coldMisses += cold;
        r.met += w.value("met", false) ? 1 : 0;
        if (r.windowS <= 0)
            r.windowS = number(w, "length_s");
        if (cold <= 0)
            continue;
        const double begin = number(w, "begin_s"), length = number(w, "length_s");
        const double mean = number(w, "mean_replicas");
        d.coldMisses << QPointF((begin + length / 2) / d.unitS, mean);
        d.coldMissCounts << int(cold);
        d.coldMissTips << QObject::tr("%1 – %2: %3 cold-start misses of %4 misses "
                                      "(%5 requests), %6 replicas "
                                      "billed on average")
                              .arg(clockOf(begin))
                              .arg(clockOf(begin + length))
                              .arg(cold)
                              .arg(missed)
                              .arg(std::int64_t(number(w, "requests")))
                              .arg(mean, 0, 'f', 1);
        r.peak = std::max(r.peak, mean);
    }
    return {};
}

// What it billed against the plan and a fixed fleet.
QString billing(const Run &r)
{
    QString text = QObject::tr("; <b>%1 replica-hours</b>").arg(replicaHours(number(r.run, "replica_hours")));
    if (number(r.run, "cost") > 0)
        text += QObject::tr(" (cost %1)").arg(money(r.run["cost"]));
    text += QObject::tr(", peak %1 replicas").arg(number(r.run, "peak_replicas"));
    if (r.hasPlan) {
        text +=
            QObject::tr("; the plan: %1 replica-hours").arg(replicaHours(number(r.plan, "replica_hours")));
        if (number(r.plan, "cost") > 0)
            text += QObject::tr(" (cost %1)").arg(money(r.plan["cost"]));
    }
    if (r.doc.contains("fixed") && r.doc["fixed"].is_object()) {
        const json &fixed = r.doc["fixed"];
        text += QObject::tr("; a fixed fleet of %1: %2 replica-hours")
                    .arg(number(fixed, "replicas"))
                    .arg(replicaHours(number(fixed, "replica_hours")));
        if (number(fixed, "cost") > 0)
            text += QObject::tr(" (cost %1)").arg(money(fixed["cost"]));
    }
    return text;
}

// The summary: the policy, the windows met, the billing, the cold-start misses.
QString summary(const StoredAutoscaleRun &stored, const Run &r, qsizetype coldWindows)
{
    const QString slo =
        QString::fromStdString(stored.slo.empty() ? r.doc.value("slo", std::string("?")) : stored.slo);
    const QString policy = QString::fromStdString(
        stored.policy.empty() ? r.run.value("policy", std::string("?")) : stored.policy);
    const double share =
        number(r.run, "windows_met_share", r.windows.empty() ? 1 : double(r.met) / r.windows.size());
    QString text = QObject::tr("<b>Autoscaler run %1</b>: <code>%2</code> for %3")
                       .arg(stored.id)
                       .arg(policy.toHtmlEscaped())
                       .arg(slo.toHtmlEscaped());
    if (r.doc.contains("cold_start_s"))
        text += QObject::tr(", cold start %1 s").arg(number(r.doc, "cold_start_s"));
    if (r.doc.contains("period_s"))
        text += QObject::tr(", a decision every %1 s").arg(number(r.doc, "period_s"));
    text +=
        QObject::tr(".<br><b>%1% of %2 windows met</b>").arg(100 * share, 0, 'f', 1).arg(r.windows.size());
    if (r.windowS > 0)
        text += QObject::tr(" (%1 each)").arg(windowLength(r.windowS));
    text += billing(r);
    text += QObject::tr(".<br>Cold-start misses: <b>%1 of %2 misses</b> (%3 "
                        "requests), in %4 windows "
                        "(red points)")
                .arg(r.coldMisses)
                .arg(r.misses)
                .arg(r.requests)
                .arg(coldWindows);
    text += QLatin1Char('.');
    return text;
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
        Run r(doc, run);
        r.columns = timelineColumns(run);
        r.plan = doc.value("plan", json());
        r.hasPlan = r.plan.is_object() && r.plan.contains("replicas") && r.plan["replicas"].is_array();
        r.planWindowS = r.hasPlan ? number(r.plan, "window_s", 3600) : 0;
        if (r.hasPlan && r.planWindowS <= 0)
            return refuse(QObject::tr("its plan's window_s is not positive"));
        QString why = drawSpan(r, d);
        if (why.isEmpty())
            why = drawTimeline(r, d);
        if (why.isEmpty()) {
            drawPlan(r, d);
            why = drawColdMisses(r, d);
        }
        if (!why.isEmpty())
            return refuse(why);
        d.peak = int(std::ceil(r.peak));
        d.summary = summary(stored, r, d.coldMisses.size());
    } catch (const json::exception &e) {
        return refuse(QObject::tr("a malformed document (%1)").arg(QString::fromUtf8(e.what())));
    }
    return d;
}

} // namespace bp::ui
