// The JSON of a remote calibration: what `calibrate --target` stores and
// `replay --simulate`, `tune --target` and the reports read back
// (remote_calibration.h).
#include "engine/sim/calibration/remote_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace bp {

namespace {

nlohmann::json number(double v)
{
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::optional<double> optional(const nlohmann::json &j, const char *key)
{
    if (!j.contains(key) || !j[key].is_number())
        return std::nullopt;
    return j[key].get<double>();
}

nlohmann::json toJson(const ObservedLimits &l)
{
    nlohmann::json j = {{"running_is_cap", l.runningIsCap},
                        {"kv_samples", l.kvSamples},
                        {"scrapes", l.scrapes},
                        {"scrape_errors", l.scrapeErrors}};
    if (l.maxRunning)
        j["max_running"] = *l.maxRunning;
    if (l.maxTokensPerStep)
        j["max_tokens_per_step"] = *l.maxTokensPerStep;
    if (l.tokensPerStepBound)
        j["tokens_per_step_bound"] = *l.tokensPerStepBound;
    if (l.kvCapacityTokens)
        j["kv_capacity_tokens"] = *l.kvCapacityTokens;
    if (l.longestPrompt)
        j["longest_prompt"] = *l.longestPrompt;
    return j;
}

} // namespace

nlohmann::json toJson(const RemoteCalibration &r)
{
    nlohmann::json terms = nlohmann::json::array();
    for (const TermFit &t : r.terms)
        terms.push_back({{"name", t.name},
                         {"meaning", t.meaning},
                         {"value_s", t.value},
                         {"std_error_s", number(t.stdError)},
                         {"at_bound", t.atBound}});
    nlohmann::json phases = nlohmann::json::object();
    for (const auto &[phase, e] : r.phases)
        phases[phase] = toJson(e);
    nlohmann::json rows = nlohmann::json::array();
    for (const ProbeObservation &o : r.observations) {
        nlohmann::json row = {o.phase};
        for (double t : o.terms)
            row.push_back(t);
        row.push_back(o.seconds);
        if (!o.steps.empty())
            row.push_back(o.steps);
        rows.push_back(std::move(row));
    }
    nlohmann::json out = {
        {"url", r.url},
        {"server", r.server},
        {"protocol", r.protocol},
        {"settings", toJson(r.settings)},
        {"limits", toJson(r.limits)},
        {"probe",
         {{"requests", r.probe.requests},
          {"failed", r.probe.failed},
          {"seconds", r.probe.seconds},
          {"interrupted", r.probe.interrupted},
          {"plan", r.probe.plan}}},
        {"prefill_chunk", r.prefillChunk},
        {"kv_view_padded", r.paddedKvView},
        {"request_overhead_s", r.requestOverheadS},
        {"terms", terms},
        {"phase_fit_error", phases},
        {"observations_form",
         "[phase, requests, steps, sequences, tokens, attention, decode_context, saved_cells, seconds"
         "(, [a decode block's step seconds])]"},
        {"observations", rows}};
    if (r.pace)
        out["pace_reference"] = {{"prompt_tokens", r.pace->promptTokens},
                                 {"max_tokens", r.pace->maxTokens},
                                 {"step_s", r.pace->stepS},
                                 {"requests", r.pace->requests},
                                 {"spread", r.pace->spread}};
    return out;
}

Result<RemoteCalibration> remoteCalibrationFromJson(const nlohmann::json &j)
{
    try {
        RemoteCalibration r;
        r.url = j.at("url").get<std::string>();
        r.server = j.value("server", std::string());
        r.protocol = j.value("protocol", std::string());
        if (j.contains("settings")) {
            auto s = serverSettingsFromJson(j["settings"]);
            if (!s)
                return s.status();
            r.settings = *s;
        }
        const nlohmann::json l = j.value("limits", nlohmann::json::object());
        r.limits.maxRunning = optional(l, "max_running");
        r.limits.runningIsCap = l.value("running_is_cap", false);
        r.limits.maxTokensPerStep = optional(l, "max_tokens_per_step");
        r.limits.tokensPerStepBound = optional(l, "tokens_per_step_bound");
        r.limits.kvCapacityTokens = optional(l, "kv_capacity_tokens");
        r.limits.longestPrompt = optional(l, "longest_prompt");
        r.limits.kvSamples = l.value("kv_samples", std::size_t(0));
        r.limits.scrapes = l.value("scrapes", std::size_t(0));
        r.limits.scrapeErrors = l.value("scrape_errors", std::size_t(0));
        const nlohmann::json p = j.value("probe", nlohmann::json::object());
        r.probe.requests = p.value("requests", std::size_t(0));
        r.probe.failed = p.value("failed", std::size_t(0));
        r.probe.seconds = p.value("seconds", 0.0);
        r.probe.interrupted = p.value("interrupted", false);
        r.probe.plan = p.value("plan", std::string());
        r.prefillChunk = j.value("prefill_chunk", 0);
        r.paddedKvView = j.value("kv_view_padded", true); // absent before it was chosen
        r.requestOverheadS = j.value("request_overhead_s", 0.0);
        if (j.contains("pace_reference")) {
            const nlohmann::json &pr = j["pace_reference"];
            r.pace = PaceReference{pr.at("prompt_tokens").get<int>(), pr.at("max_tokens").get<int>(),
                                   pr.at("step_s").get<double>(), pr.value("requests", 1),
                                   pr.value("spread", 0.0)};
        }
        for (const auto &t : j.value("terms", nlohmann::json::array()))
            r.terms.push_back({t.at("name").get<std::string>(), t.value("meaning", std::string()),
                               t.at("value_s").get<double>(),
                               t["std_error_s"].is_number() ? t["std_error_s"].get<double>()
                                                            : std::numeric_limits<double>::quiet_NaN(),
                               t.value("at_bound", false)});
        const nlohmann::json phases = j.value("phase_fit_error", nlohmann::json::object());
        for (const auto &[phase, e] : phases.items())
            r.phases[phase] = fitErrorFromJson(e);
        for (const auto &row : j.value("observations", nlohmann::json::array())) {
            // 7 values before the decodes' context was a term of its own,
            // 8 before the saved cells; a decode block's steps last, if any
            ProbeObservation o;
            const bool steps = row.is_array() && !row.empty() && row.back().is_array();
            if (steps)
                o.steps = row.back().get<std::vector<double>>();
            const std::size_t values = row.is_array() ? row.size() - (steps ? 1 : 0) : 0;
            if (values > std::size_t(ProbeObservation::kTerms + 2) ||
                values < std::size_t(ProbeObservation::kTerms))
                return Status(StatusCode::InvalidArgument,
                              "remote calibration: an observation needs 9 (or 8, 7) values");
            o.phase = row[0].get<std::string>();
            const std::size_t terms = values - 2;
            for (std::size_t i = 0; i < terms; ++i)
                o.terms[i] = row[i + 1].get<double>();
            o.seconds = row[terms + 1].get<double>();
            if (std::any_of(o.steps.begin(), o.steps.end(),
                            [](double g) { return !(g >= 0) || !std::isfinite(g); }))
                return Status(StatusCode::InvalidArgument,
                              "remote calibration: a decode block's steps must be finite seconds >= 0");
            r.observations.push_back(std::move(o));
        }
        return r;
    } catch (const nlohmann::json::exception &e) {
        return Status(StatusCode::InvalidArgument, std::string("not a remote calibration: ") + e.what());
    }
}

} // namespace bp
