#include "autoscale_trace.h"

#include "cli_text.h"

#include "engine/sim/tune/tune_pipeline.h"

namespace bp::app::autoscale_trace {

QString megabytes(double bytes)
{
    return bytes >= 1e9 ? QStringLiteral("%1 GB").arg(bytes / 1e9, 0, 'f', 2)
                        : QStringLiteral("%1 MB").arg(bytes / 1e6, 0, 'f', 1);
}

nlohmann::json planJson(const PlanLine &p)
{
    return {{"id", p.id ? nlohmann::json(*p.id) : nlohmann::json()},
            {"window_s", p.windowS},
            {"replicas", p.replicas},
            {"replica_hours", p.replicaHours},
            {"cost", p.cost},
            {"peak_replicas", p.peak}};
}

QString percent(double share)
{
    return QStringLiteral("%1%").arg(100 * share, 0, 'f', share > 0.999 && share < 1 ? 2 : 1);
}

QString clock(double seconds)
{
    const auto s = std::int64_t(seconds);
    return QStringLiteral("%1:%2:%3")
        .arg(s / 3600, 2, 10, QChar('0'))
        .arg(s % 3600 / 60, 2, 10, QChar('0'))
        .arg(s % 60, 2, 10, QChar('0'));
}

void printRun(QTextStream &out, const AutoscaleRun &run, const Setup &s, const std::optional<PlanLine> &plan)
{
    out << QStringLiteral("autoscale: %1 over trace %2 at %3x, %4 (calibration %5: %6)\n")
               .arg(q(run.policy))
               .arg(s.traceId)
               .arg(s.rateScale)
               .arg(q(describe(s.slo)))
               .arg(s.calibration.id)
               .arg(q(s.calibration.describe()));
    out << QStringLiteral("  each replica: %1; router %2; a decision every %3 s; cold start %4 s (%5)\n")
               .arg(q(candidateLabel(s.request.config)))
               .arg(q(std::string(routerPolicyName(s.request.router))))
               .arg(s.request.periodS)
               .arg(s.cold.seconds, 0, 'f', 1)
               .arg(q(s.cold.from));
    out << QStringLiteral("  %1 requests over %2 of serving time, simulated in %3 s (%4 steps, %5% of them "
                          "in decode runs)\n")
               .arg(run.requests)
               .arg(clock(run.spanS))
               .arg(run.wallSeconds, 0, 'f', 1)
               .arg(run.steps)
               .arg(run.steps ? 100.0 * double(run.coalescedSteps) / double(run.steps) : 0.0, 0, 'f', 1);
    // The windows that missed, and a replica line every hour of serving time,
    // with the p99 the SLO bounds first (TTFT, else TPOT, else end to end).
    struct Judged {
        std::string name;
        double AutoscaleWindow::*field;
        double of(const AutoscaleWindow &w) const { return w.*field; }
    };
    const Judged judged = s.slo.ttftP99 > Duration::zero() ? Judged{"ttft p99 s", &AutoscaleWindow::ttftP99S}
                          : s.slo.tpotP99 > Duration::zero()
                              ? Judged{"tpot p99 s", &AutoscaleWindow::tpotP99S}
                              : Judged{"p99 s", &AutoscaleWindow::p99S};
    out << QStringLiteral("%1 %2 %3 %4 %5 %6 %7\n")
               .arg(QStringLiteral("window"), -9)
               .arg(QStringLiteral("requests"), 9)
               .arg(QStringLiteral("replicas"), 9)
               .arg(q(judged.name), 12)
               .arg(QStringLiteral("attained"), 9)
               .arg(QStringLiteral("misses"), 7)
               .arg(QStringLiteral("cold"), 6);
    std::size_t shown = 0;
    const std::size_t perHour = std::max<std::size_t>(1, std::size_t(std::lround(3600 / s.request.windowS)));
    for (std::size_t i = 0; i < run.windows.size(); ++i) {
        const AutoscaleWindow &w = run.windows[i];
        if (w.met && i % perHour != 0)
            continue;
        if (!w.met && ++shown > 40) {
            if (shown == 41)
                out << "  ... (more windows missed: --json lists them all)\n";
            continue;
        }
        out << QStringLiteral("%1 %2 %3 %4 %5 %6 %7%8\n")
                   .arg(clock(w.beginS), -9)
                   .arg(w.requests, 9)
                   .arg(w.meanReplicas, 9, 'f', 2)
                   .arg(std::isfinite(judged.of(w)) ? QString::number(judged.of(w), 'f', 3)
                                                    : QStringLiteral("failed"),
                        12)
                   .arg(percent(w.attainment()), 9)
                   .arg(w.misses, 7)
                   .arg(w.coldMisses, 6)
                   .arg(w.met ? QString() : QStringLiteral("  missed the SLO"));
    }
    out << QStringLiteral(
               "SLO met in %1 of %2 windows (%3); %4 of %5 requests missed a bound, %6 of them during "
               "a cold start\n")
               .arg(run.windowsMet)
               .arg(run.windows.size())
               .arg(percent(run.windowsMetShare()))
               .arg(run.misses)
               .arg(run.requests)
               .arg(run.coldMisses);
    out << QStringLiteral("replicas: peak %1; %2 asked for, %3 drained or cancelled; %4 replica-hours")
               .arg(run.peakReplicas)
               .arg(run.scaleUps)
               .arg(run.scaleDowns)
               .arg(run.replicaHours, 0, 'f', 2);
    if (s.request.replicaCostPerHour > 0)
        out << QStringLiteral(", cost %1").arg(run.cost, 0, 'f', 2);
    out << "\n";
    if (plan) {
        const double fixedHours = plan->peak * run.spanS / 3600;
        out << QStringLiteral(
                   "against the static plan%1 (%2 s windows, set by hand ahead): %3 replica-hours, "
                   "peak %4; a fixed fleet of %4 (the plan's peak): %5 replica-hours\n")
                   .arg(plan->id ? QStringLiteral(" %1").arg(*plan->id) : QString())
                   .arg(plan->windowS, 0, 'g', 4)
                   .arg(plan->replicaHours, 0, 'f', 2)
                   .arg(plan->peak)
                   .arg(fixedHours, 0, 'f', 2);
        if (plan->replicaHours > 0 && fixedHours > 0)
            out << QStringLiteral("  this policy costs %1 of the plan's and %2 of the fixed fleet's\n")
                       .arg(percent(run.replicaHours / plan->replicaHours))
                       .arg(percent(run.replicaHours / fixedHours));
    }
    if (run.cancelled)
        out << "cancelled before the end of the trace: no window was judged\n";
}

} // namespace bp::app::autoscale_trace
