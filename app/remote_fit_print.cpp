#include "remote_fit_print.h"
#include "cli_text.h"

#include "engine/sim/calibration/remote_server_model.h"

#include <QStringList>

#include <cmath>

namespace bp::app {

namespace {

QString us(double seconds)
{
    return QString::number(seconds * 1e6, 'g', 4);
}

QString percent(double rel)
{
    return std::isfinite(rel) ? QString::number(100 * rel, 'f', 1) + QLatin1Char('%') : QStringLiteral("n/a");
}

} // namespace

void printRemoteFit(QTextStream &out, const Calibration &c)
{
    const RemoteCalibration &r = *c.remote;
    out << QStringLiteral("calibration %1: %2, from %3\n").arg(c.id).arg(q(c.describe()), q(c.source));
    if (!r.settings.empty())
        out << QStringLiteral("  server settings (%1): %2\n")
                   .arg(q(r.settings.source), q(r.settings.summary()));
    if (simulatesServerModel(r))
        if (auto m = remoteServerModel(r, nullptr))
            out << QStringLiteral("  simulated as %1's scheduler: %2\n").arg(q(m->server), q(m->describe()));
    out << QStringLiteral("  cost model: iteration(n, T, A, D, C) = s0 + s1*n + s2*T + s3*A + s7*D + s8*C "
                          "(D: the decodes' "
                          "context, C: KV cells saved as a request starts), plus o per request (prompt chunk "
                          "per step: %1)\n")
               .arg(r.prefillChunk > 0 ? QString::number(r.prefillChunk) : QStringLiteral("whole prompt"));
    for (const TermFit &t : r.terms)
        out << QStringLiteral("  %1 %2 us  +- %3 us (%4)%5  %6\n")
                   .arg(q(t.name), -14)
                   .arg(us(t.value), 10)
                   .arg(std::isfinite(t.stdError) ? us(t.stdError) : QStringLiteral("n/a"), 8)
                   .arg(percent(t.relError()))
                   .arg(t.atBound ? QStringLiteral(" at 0") : QString())
                   .arg(q(t.meaning));
    out << QStringLiteral("  fit error over %1 rows: median %2, rms %3, worst %4\n")
               .arg(c.error.observations)
               .arg(percent(c.error.medianRel), percent(c.error.rmsRel), percent(c.error.maxRel));
    for (const auto &[phase, e] : r.phases)
        out << QStringLiteral("    %1 (%2 rows): median %3, worst %4\n")
                   .arg(q(phase))
                   .arg(e.observations)
                   .arg(percent(e.medianRel), percent(e.maxRel));
    const ObservedLimits &l = r.limits;
    QStringList limits;
    if (l.maxRunning)
        limits << QStringLiteral("running %1%2")
                      .arg(*l.maxRunning)
                      .arg(l.runningIsCap ? " (a cap: requests waited)" : "");
    if (l.tokensPerStepBound)
        limits << QStringLiteral("no step over %1 tokens").arg(*l.tokensPerStepBound);
    else if (l.maxTokensPerStep)
        limits << QStringLiteral("tokens per step up to %1").arg(*l.maxTokensPerStep, 0, 'f', 1);
    if (l.kvCapacityTokens)
        limits << QStringLiteral("KV capacity ~%1 tokens (%2 samples)")
                      .arg(*l.kvCapacityTokens, 0, 'f', 0)
                      .arg(l.kvSamples);
    out << QStringLiteral("  limits seen in /metrics (%1 scrapes, %2 failed): %3\n")
               .arg(l.scrapes)
               .arg(l.scrapeErrors)
               .arg(limits.isEmpty() ? QStringLiteral("none") : limits.join(", "));
    out << QStringLiteral("  probe: %1 requests (%2 failed) in %3 s%4\n")
               .arg(r.probe.requests)
               .arg(r.probe.failed)
               .arg(r.probe.seconds, 0, 'f', 1)
               .arg(r.probe.interrupted ? QStringLiteral(", stopped early: fitted to what was measured")
                                        : QString());
}

} // namespace bp::app
