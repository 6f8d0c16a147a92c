// The text of `batchpilot tune`: the table rows of candidates, the
// measured figures of a verification session and the predicted-vs-measured
// table (cmd_tune_text.h).
#include "cmd_tune_text.h"

#include "engine/sim/tune_verify.h"

#include <cmath>

namespace bp::app {

// The measured figures of a recorded session (the verification replay).
Result<TuneFigures> measuredFigures(const TraceStore &store, std::int64_t sessionId, std::size_t requests,
                                    const TuneSlo &slo)
{
    auto rows = store.requests(sessionId);
    if (!rows)
        return rows.status();
    std::vector<TuneSample> samples;
    samples.reserve(rows->size());
    for (const StoredRequest &r : *rows)
        samples.push_back(tuneSampleOf(r));
    TuneFigures f = figuresOf(samples, requests, slo);
    auto batches = store.batches(sessionId);
    if (!batches)
        return batches.status();
    std::size_t members = 0;
    for (const StoredBatch &b : *batches)
        members += std::size_t(b.size);
    f.meanBatch = batches->empty() ? 0 : double(members) / double(batches->size());
    return f;
}

void printVerification(QTextStream &out, const TuneFigures &p, const TuneFigures &m, bool tokenLevel)
{
    out << QStringLiteral("  %1 %2 %3 %4\n")
               .arg(QStringLiteral("figure"), -16)
               .arg(QStringLiteral("predicted"), 10)
               .arg(QStringLiteral("measured"), 10)
               .arg(QStringLiteral("error"), 7);
    auto line = [&](const QString &name, double a, double b, int decimals, double scale) {
        out << QStringLiteral("  %1 %2 %3 %4\n")
                   .arg(name, -16)
                   .arg(std::isfinite(a) ? QString::number(a * scale, 'f', decimals) : QStringLiteral("inf"),
                        10)
                   .arg(std::isfinite(b) ? QString::number(b * scale, 'f', decimals) : QStringLiteral("inf"),
                        10)
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

} // namespace bp::app
