#include "report_fleet.h"

namespace bp::report {

namespace {

QString e(const std::string &s)
{
    return QString::fromStdString(s).toHtmlEscaped();
}

QString clock(double seconds)
{
    const auto s = std::int64_t(seconds);
    const std::int64_t day = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60;
    return (day ? QStringLiteral("day %1 ").arg(day + 1) : QString()) +
           QStringLiteral("%1:%2").arg(h, 2, 10, QChar('0')).arg(m, 2, 10, QChar('0'));
}

} // namespace

nlohmann::json fleetJson(const ReportData &d)
{
    if (d.replicas.empty())
        return nullptr;
    nlohmann::json rows = nlohmann::json::array();
    for (const StoredReplica &r : d.replicas)
        rows.push_back({{"replica", r.replica},
                        {"routed", r.routed},
                        {"completed", r.completed},
                        {"failed", r.failed},
                        {"batches", r.batches},
                        {"busy_s", r.busyS},
                        {"peak_outstanding", r.peakOutstanding},
                        {"peak_kv_tokens", r.peakKvTokens},
                        {"preemptions", r.preemptions},
                        {"output_tokens", r.outputTokens}});
    return {{"fleet", d.session.replay.value("fleet", nlohmann::json::object())}, {"replicas", rows}};
}

nlohmann::json capacityPlanJson(const ReportData &d)
{
    if (d.plans.empty())
        return nullptr;
    nlohmann::json out = nlohmann::json::array();
    for (const StoredPlan &p : d.plans)
        out.push_back({{"plan_id", p.id}, {"slo", p.slo}, {"result", p.result}});
    return out;
}

QString fleetHtml(const ReportData &d, const QString &tableOpen, const QString &tableClose)
{
    QString h;
    if (!d.replicas.empty()) {
        const nlohmann::json fleet = d.session.replay.value("fleet", nlohmann::json::object());
        const double span = std::max(1e-9, d.lastCompletionS - d.firstArrivalS);
        // A remote fleet (replay --target URL1,URL2): real servers behind the
        // client-side router; its "batches" and "busy" are not seen (0).
        h += QStringLiteral("<h2>Fleet</h2>\n<p>%1 %2 behind the <code>%3</code> router%4.</p>\n")
                 .arg(d.replicas.size())
                 .arg(d.session.kind == "remote" ? QStringLiteral("remote servers")
                                                 : QStringLiteral("simulated replicas"))
                 .arg(e(fleet.value("router", std::string("?"))))
                 .arg(fleet.value("router_queued", 0) > 0
                          ? QStringLiteral("; %1 requests waited in its queue (mean %2 ms)")
                                .arg(fleet.value("router_queued", 0))
                                .arg(1e3 * fleet.value("router_wait_mean_s", 0.0), 0, 'f', 2)
                          : QString());
        h += tableOpen + QStringLiteral("<tr><th>replica</th><th>routed</th><th>completed</th><th>failed</th>"
                                        "<th>batches</th><th>busy</th><th>peak outstanding</th>"
                                        "<th>peak KV tokens</th></tr>\n");
        for (const StoredReplica &r : d.replicas)
            h += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6%</td>"
                                "<td>%7</td><td>%8</td></tr>\n")
                     .arg(r.replica)
                     .arg(r.routed)
                     .arg(r.completed)
                     .arg(r.failed)
                     .arg(r.batches)
                     .arg(100 * r.busyS / span, 0, 'f', 0)
                     .arg(r.peakOutstanding)
                     .arg(r.peakKvTokens);
        h += tableClose;
    }
    if (d.plans.empty())
        return h;
    h += QStringLiteral("<h2>Capacity plan</h2>\n");
    for (const StoredPlan &p : d.plans) {
        const nlohmann::json &r = p.result;
        h += QStringLiteral(
                 "<p>Plan %1 (<code>batchpilot plan</code>): the fewest replicas meeting %2 in each "
                 "%3 s window at %4× the rate, searched %5..%6 with routers %7; peak %8 replicas, "
                 "%9 replica-hours.%10</p>\n")
                 .arg(p.id)
                 .arg(e(p.slo))
                 .arg(r.value("window_s", 0.0))
                 .arg(r.value("rate_scale", 1.0))
                 .arg(r.value("replicas_searched", nlohmann::json::array({0, 0}))[0].get<int>())
                 .arg(r.value("replicas_searched", nlohmann::json::array({0, 0}))[1].get<int>())
                 .arg(e(r.value("routers", nlohmann::json::array()).dump()))
                 .arg(r.value("peak_replicas", 0))
                 .arg(r.value("replica_hours", 0.0), 0, 'f', 1)
                 .arg(r.contains("cost")
                          ? QStringLiteral(" Cost %1 in all, %2 per 1M output tokens.")
                                .arg(r["cost"].value("total", 0.0), 0, 'f', 2)
                                .arg(r["cost"].value("per_million_output_tokens", 0.0), 0, 'f', 4)
                          : QString());
        const auto daily = r.value("daily_schedule", std::vector<int>{});
        if (!daily.empty()) {
            h += tableOpen + QStringLiteral("<tr><th>hour of day</th><th>replicas</th></tr>\n");
            for (std::size_t i = 0; i < daily.size(); ++i)
                h += QStringLiteral("<tr><td>%1</td><td>%2</td></tr>\n")
                         .arg(clock(double(i) * 86400.0 / double(daily.size())))
                         .arg(daily[i]);
            h += tableClose;
        }
        h += tableOpen + QStringLiteral("<tr><th>window</th><th>requests</th><th>replicas</th><th>router</th>"
                                        "<th>p99 (s)</th></tr>\n");
        int shown = 0;
        for (const auto &w : r.value("windows", nlohmann::json::array())) {
            if (++shown > 200) { // a week of hours is 168
                h += QStringLiteral("<tr><td colspan=\"5\">…</td></tr>\n");
                break;
            }
            const bool done = w.value("done", false);
            h += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td></tr>\n")
                     .arg(clock(w.value("begin_s", 0.0)))
                     .arg(w.value("requests", 0))
                     .arg(!done                        ? QStringLiteral("–")
                          : w.value("replicas", 0) > 0 ? QString::number(w.value("replicas", 0))
                                                       : QStringLiteral("not met"))
                     .arg(e(w.value("router", std::string("–"))))
                     .arg(w.value("p99_s", 0.0), 0, 'f', 3);
        }
        h += tableClose;
    }
    return h;
}

} // namespace bp::report
