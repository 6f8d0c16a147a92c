#include "tune_output.h"
#include "cli_text.h"

#include <cmath>

namespace bp::app {

namespace {

} // namespace

QString row(const QString &label, const TuneFigures &f, bool tokenLevel, int width)
{
    QString s = QStringLiteral("  %1 %2 %3 %4 %5")
                    .arg(label, -width)
                    .arg(QString::number(f.throughputPerS, 'f', 1), 9)
                    .arg(QString::number(f.goodputPerS, 'f', 1), 9)
                    .arg(msText(f.p50S), 9)
                    .arg(msText(f.p99S), 9);
    if (tokenLevel)
        s += QStringLiteral(" %1 %2").arg(msText(f.ttftP99S), 9).arg(msText(f.tpotP99S), 9);
    s += QStringLiteral(" %1 %2 %3")
             .arg(std::isinf(f.sloRatio) ? QStringLiteral("inf") : QString::number(f.sloRatio, 'f', 2), 6)
             .arg(QString::number(f.meanBatch, 'f', 1), 6)
             .arg(f.sloMet ? QStringLiteral("yes") : QStringLiteral("no"), 4);
    return s + "\n";
}

QString header(bool tokenLevel, int width)
{
    QString s = QStringLiteral("  %1 %2 %3 %4 %5")
                    .arg(QStringLiteral("config"), -width)
                    .arg(QStringLiteral("thr/s"), 9)
                    .arg(QStringLiteral("goodput/s"), 9)
                    .arg(QStringLiteral("p50 ms"), 9)
                    .arg(QStringLiteral("p99 ms"), 9);
    if (tokenLevel)
        s += QStringLiteral(" %1 %2").arg(QStringLiteral("ttft p99"), 9).arg(QStringLiteral("tpot p99"), 9);
    return s + QStringLiteral(" %1 %2 %3\n")
                   .arg(QStringLiteral("ratio"), 6)
                   .arg(QStringLiteral("batch"), 6)
                   .arg(QStringLiteral("SLO"), 4);
}

QString msText(double seconds)
{
    if (std::isinf(seconds))
        return QStringLiteral("inf");
    return QString::number(seconds * 1e3, 'f', seconds < 0.01 ? 2 : 1);
}

QString errorText(double predicted, double measured)
{
    if (!std::isfinite(predicted) || !std::isfinite(measured) || measured == 0)
        return QStringLiteral("-");
    const double percent = std::round(100 * (predicted / measured - 1));
    return QStringLiteral("%1%2%").arg(percent >= 0 ? "+" : "").arg(percent == 0 ? 0.0 : percent, 0, 'f', 0);
}

QString durationText(double seconds)
{
    if (seconds < 60)
        return QStringLiteral("about %1 s").arg(std::max(1.0, std::ceil(seconds)), 0, 'f', 0);
    const long s = std::lround(std::ceil(seconds));
    if (s < 3600)
        return QStringLiteral("about %1 min %2 s").arg(s / 60).arg(s % 60);
    return QStringLiteral("about %1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

namespace {

// What was searched: the source, the calibration, how many simulations.
void printSearchHeader(QTextStream &out, const TuneRun &run, const QString &objectiveName, CostNoise noise)
{
    const TuneResult &r = run.result;
    const TuneSource &source = run.source;
    const Calibration &cal = run.calibration;
    out << QStringLiteral("tune %1: %2 requests, %3 req/s offered (speed %4), SLO %5, objective %6\n")
               .arg(q(source.name))
               .arg(source.plan.requests.size())
               .arg(source.offeredPerS, 0, 'f', 1)
               .arg(source.replay.speed)
               .arg(q(describe(run.settings.slo)), objectiveName);
    if (const std::string lengths = source.plan.lengths.describe(cal.maxSequenceLength); !lengths.empty())
        out << "  lengths: " << q(lengths) << "\n";
    out << QStringLiteral("  calibration %1: %2; its fit to whole batches: median error %3%, worst %4%; "
                          "cost noise %5\n")
               .arg(cal.id)
               .arg(q(cal.describe()))
               .arg(100 * cal.batchError.medianRel, 0, 'f', 1)
               .arg(100 * cal.batchError.maxRel, 0, 'f', 1)
               .arg(q(std::string(costNoiseName(noise))));
    out << QStringLiteral(
               "  simulated %1 configs (%2 on the grid, %3 refined) and %4 capacity probes in %5 s, %6 "
               "at a time%7\n")
               .arg(r.candidates.size())
               .arg(r.coarse)
               .arg(r.candidates.size() - r.coarse)
               .arg(r.probes)
               .arg(r.wallSeconds, 0, 'f', 1)
               .arg(run.settings.threads)
               .arg(r.cancelled ? QStringLiteral(" (cancelled)") : QString());
}

void printPredicted(QTextStream &out, const TuneFigures &f, bool tokenLevel)
{
    out << QStringLiteral(
               "  predicted: %1 req/s, goodput %2 req/s (%3 of %4 within the SLO), p50 %5 ms, p99 %6 ms")
               .arg(f.throughputPerS, 0, 'f', 1)
               .arg(f.goodputPerS, 0, 'f', 1)
               .arg(f.good)
               .arg(f.requests)
               .arg(msText(f.p50S), msText(f.p99S));
    if (tokenLevel)
        out << QStringLiteral(", TTFT p99 %1 ms, TPOT p99 %2 ms").arg(msText(f.ttftP99S), msText(f.tpotP99S));
    out << QStringLiteral(", mean batch %1\n").arg(f.meanBatch, 0, 'f', 1);
    if (!f.failures.empty()) {
        QString why;
        for (const auto &[status, n] : f.failures)
            why += QStringLiteral("%1%2 %3").arg(why.isEmpty() ? "" : ", ").arg(n).arg(q(status));
        out << QStringLiteral("  did not complete: %1 (each counts as infinitely late in the p99s)\n")
                   .arg(why);
    }
}

QString gainText(double gain)
{
    return std::isfinite(gain) ? QStringLiteral("%1%2%").arg(gain >= 0 ? "+" : "").arg(100 * gain, 0, 'f', 1)
                               : QStringLiteral("+inf");
}

// The recommendation: the current config kept, or the pick and its change.
void printRecommendation(QTextStream &out, const TuneRun &run, const QString &baseName,
                         const CurrentVerdict *verdict, const TuneFigures *current, bool tokenLevel)
{
    const TuneResult &r = run.result;
    const TuneCandidate &rec = r.candidates[*r.recommended];
    if (verdict && verdict->keep) {
        out << QStringLiteral("\nRecommended: keep the %1 config: the best found, %2, predicts goodput %3 "
                              "req/s against %4 (%5), %6 the fit's spread of %7%\n")
                   .arg(baseName, q(rec.label))
                   .arg(rec.figures.goodputPerS, 0, 'f', 1)
                   .arg(current->goodputPerS, 0, 'f', 1)
                   .arg(gainText(verdict->gain))
                   .arg(rec.figures.sloMet || !verdict->currentMeets
                            ? QStringLiteral("not above")
                            : QStringLiteral("and misses the SLO; within"))
                   .arg(100 * verdict->margin, 0, 'f', 1);
        out << QStringLiteral("  changes from the %1 config: none\n").arg(baseName);
        printPredicted(out, *current, tokenLevel);
        return;
    }
    out << QStringLiteral("\nRecommended: %1%2\n")
               .arg(q(rec.label))
               .arg(r.anyMet ? QString()
                             : QStringLiteral("  (NO config meets the SLO at this load: the nearest)"));
    if (verdict)
        out << QStringLiteral("  goodput %1 over the %2 config's, beyond the fit's spread of %3%\n")
                   .arg(gainText(verdict->gain), baseName)
                   .arg(100 * verdict->margin, 0, 'f', 1);
    const std::string change = describeChange(run.source.plan.config, rec.config);
    out << QStringLiteral("  changes from the %1 config: %2\n")
               .arg(baseName, change.empty() ? QStringLiteral("none") : q(change));
    printPredicted(out, rec.figures, tokenLevel);
}

} // namespace

void printSearch(QTextStream &out, const TuneRun &run, const QString &objectiveName, const QString &baseName,
                 CostNoise noise, const CurrentVerdict *verdict, const TuneFigures *current)
{
    const TuneResult &r = run.result;
    const bool tokenLevel = run.settings.slo.tokenLevel() || run.calibration.generative;
    printSearchHeader(out, run, objectiveName, noise);
    int width = 6;
    for (const TuneCandidate &c : r.candidates)
        width = std::max(width, int(c.label.size()));
    out << QStringLiteral(
        "\nPareto front (throughput vs SLO ratio = the worst p99 / its bound; <= 1 meets it):\n");
    out << header(tokenLevel, width);
    for (std::size_t i : r.pareto)
        out << row(q(r.candidates[i].label), r.candidates[i].figures, tokenLevel, width);
    if (current)
        out << QStringLiteral("\nThe %1 config %2 the SLO (ratio %3)\n")
                   .arg(baseName, current->sloMet ? QStringLiteral("meets") : QStringLiteral("misses"))
                   .arg(current->sloRatio, 0, 'f', 2);
    printRecommendation(out, run, baseName, verdict, current, tokenLevel);
    const TuneCandidate &rec = r.candidates[*r.recommended];
    if (rec.figures.unservable)
        out << QStringLiteral(
                   "  %1 requests are beyond the model's positions under any config (out_of_range); the "
                   "figures leave them out\n")
                   .arg(rec.figures.unservable);
    if (verdict && verdict->keep) {
        // the capacity search ran on the best found, not on the config kept
    } else if (r.capacity > 0) {
        out << QStringLiteral("  capacity: meets the SLO up to %1x this load (%2 req/s; speed %3)%4\n")
                   .arg(r.capacity, 0, 'f', 2)
                   .arg(r.capacity * run.source.offeredPerS, 0, 'f', 1)
                   .arg(r.capacity * run.source.replay.speed, 0, 'g', 4)
                   .arg(r.capacity >= 4096 ? QStringLiteral(" or more") : QString());
    } else if (!r.cancelled) {
        out << QStringLiteral("  capacity: misses the SLO even at 1/64 of this load\n");
    }
}

void printVerification(QTextStream &out, const TuneFigures &p, const TuneFigures &m, bool tokenLevel)
{
    out << QStringLiteral("  %1 %2 %3 %4\n")
               .arg(QStringLiteral("figure"), -16)
               .arg(QStringLiteral("predicted"), 10)
               .arg(QStringLiteral("measured"), 10)
               .arg(QStringLiteral("error"), 7);
    auto line = [&](const QString &name, double a, double b, int decimals, double scale) {
        auto number = [&](double x) {
            return std::isfinite(x) ? QString::number(x * scale, 'f', decimals) : QStringLiteral("inf");
        };
        out << QStringLiteral("  %1 %2 %3 %4\n")
                   .arg(name, -16)
                   .arg(number(a), 10)
                   .arg(number(b), 10)
                   .arg(errorText(a, b), 7);
    };
    line(QStringLiteral("throughput/s"), p.throughputPerS, m.throughputPerS, 1, 1);
    line(QStringLiteral("goodput/s"), p.goodputPerS, m.goodputPerS, 1, 1);
    line(QStringLiteral("p50 ms"), p.p50S, m.p50S, 2, 1e3);
    line(QStringLiteral("p99 ms"), p.p99S, m.p99S, 2, 1e3);
    if (tokenLevel) {
        line(QStringLiteral("TTFT p99 ms"), p.ttftP99S, m.ttftP99S, 2, 1e3);
        line(QStringLiteral("TPOT p99 ms"), p.tpotP99S, m.tpotP99S, 2, 1e3);
    }
    line(QStringLiteral("mean batch"), p.meanBatch, m.meanBatch, 1, 1);
    out << QStringLiteral("  %1 %2 %3\n")
               .arg(QStringLiteral("SLO met"), -16)
               .arg(p.sloMet ? QStringLiteral("yes") : QStringLiteral("no"), 10)
               .arg(m.sloMet ? QStringLiteral("yes") : QStringLiteral("no"), 10);
}

void printVerification(QTextStream &out, const Verification &v, bool tokenLevel)
{
    out << QStringLiteral("\nVerification: real-clock replay of %1 (requests %2-%3 of the source, %4 s of "
                          "arrivals), session %5, %6 s wall time\n")
               .arg(q(describe(v.plan.spec)))
               .arg(v.plan.window.begin + 1)
               .arg(v.plan.window.end)
               .arg(toSeconds(v.plan.window.span()), 0, 'f', 1)
               .arg(v.replay.sessionId)
               .arg(v.replay.wallSeconds, 0, 'f', 1);
    if (v.partial)
        out << QStringLiteral(
                   "  PARTIAL: cancelled after %1 of %2 requests; both columns cover the %3 that were "
                   "sent and not cut short by the cancel\n")
                   .arg(v.replay.submitted)
                   .arg(v.plan.window.size())
                   .arg(v.compared);
    printVerification(out, v.predicted, v.measured, tokenLevel);
    out << QStringLiteral("  submissions were at most %1 ms late\n")
               .arg(toMicros(v.replay.maxLateness) / 1000, 0, 'f', 2);
}

} // namespace bp::app
