#include "engine/sim/tune/tuning_document.h"

#include "engine/config/config_json.h"

#include <cmath>

namespace bp {

nlohmann::json tuneFiguresJson(const TuneFigures &f)
{
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    return {{"requests", f.requests},
            {"completed", f.completed},
            {"good", f.good},
            {"unservable", f.unservable},
            {"failures", f.failures},
            {"throughput_rps", num(f.throughputPerS)},
            {"goodput_rps", num(f.goodputPerS)},
            {"p50_ms", num(f.p50S * 1e3)},
            {"p99_ms", num(f.p99S * 1e3)},
            {"ttft_p50_ms", num(f.ttftP50S * 1e3)},
            {"ttft_p99_ms", num(f.ttftP99S * 1e3)},
            {"tpot_p50_ms", num(f.tpotP50S * 1e3)},
            {"tpot_p99_ms", num(f.tpotP99S * 1e3)},
            {"mean_batch", f.meanBatch},
            {"slo_ratio", num(f.sloRatio)},
            {"slo_met", f.sloMet}};
}

nlohmann::json tuningDocument(const TuneResult &r, const TuningContext &c, const Calibration &cal)
{
    const TuneCandidate &rec = r.candidates.at(*r.recommended);
    nlohmann::json front = nlohmann::json::array();
    for (std::size_t i : r.pareto)
        front.push_back(
            {{"label", r.candidates[i].label}, {"predicted", tuneFiguresJson(r.candidates[i].figures)}});
    nlohmann::json j{
        {"source",
         {{"kind", c.source.kind == ReplaySource::Kind::Trace ? "trace" : "session"}, {"id", c.source.id}}},
        {"requests", c.requests},
        {"offered_rps", c.offeredPerS},
        {"speed", c.speed},
        {"length_scale", c.lengthScale},
        {"limit", c.limit},
        {"slo", describe(c.slo)},
        {"objective", std::string(tuneObjectiveName(c.objective))},
        {"calibration",
         {{"id", cal.id}, {"describe", cal.describe()}, {"batch_fit_error", toJson(cal.batchError)}}},
        {"evaluated", r.candidates.size()},
        {"grid", r.coarse},
        {"capacity_probes", r.probes},
        {"wall_s", r.wallSeconds},
        {"jobs", c.jobs},
        {"cancelled", r.cancelled},
        {"any_met", r.anyMet},
        {"pareto_front", front},
        {"recommended",
         {{"index", *r.recommended},
          {"label", rec.label},
          {"config", toJson(rec.config)},
          {"predicted", tuneFiguresJson(rec.figures)},
          {"capacity_speed", r.capacity},
          {"capacity_rps", r.capacity * c.offeredPerS}}}};
    if (!c.origin.empty())
        j["origin"] = c.origin;
    return j;
}

StoredTuning storedTuning(const nlohmann::json &document, const TuningContext &c, const Calibration &cal)
{
    StoredTuning t;
    (c.source.kind == ReplaySource::Kind::Trace ? t.sourceTraceId : t.sourceSessionId) = c.source.id;
    t.calibrationId = cal.id;
    t.slo = describe(c.slo);
    t.objective = std::string(tuneObjectiveName(c.objective));
    t.result = document;
    return t;
}

} // namespace bp
