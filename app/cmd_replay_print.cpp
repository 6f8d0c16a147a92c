#include "replay_command.h"

#include "cli_text.h"
#include "cmd_store.h"

#include "engine/config/config_json.h"
#include "engine/core/length_rule.h"
#include "engine/sim/calibration/calibration_store.h"

namespace bp::app::replay_command {

namespace {

// A remote replay's lines: the target, its /metrics scrapes, each replica
// of a fleet.
void printTarget(QTextStream &out, const remote::HttpRemoteTarget &target, const ReplayOutcome &o)
{
    out << QStringLiteral("  target %1 (%2), HTTP statuses %3\n")
               .arg(q(target.url()), q(o.client.value("protocol", std::string())),
                    q(o.client.value("http_status", nlohmann::json::object()).dump()));
    if (const std::string server = o.client.value("server", std::string()); !server.empty())
        out << QStringLiteral("  scraped %1 /metrics %2 times (%3 failed)\n")
                   .arg(q(server))
                   .arg(o.client.value("scrapes", 0))
                   .arg(o.client.value("scrape_errors", 0));
    if (const auto fleet = o.client.find("fleet"); fleet != o.client.end())
        for (const nlohmann::json &r : fleet->value("replica_figures", nlohmann::json::array()))
            out << QStringLiteral("  %1 replica %2 %3: %4 routed, %5 completed, %6 failed, peak %7 "
                                  "outstanding\n")
                       .arg(q(fleet->value("router", std::string())))
                       .arg(r.value("replica", 0))
                       .arg(q(r.value("url", std::string())))
                       .arg(r.value("routed", 0))
                       .arg(r.value("completed", 0))
                       .arg(r.value("failed", 0))
                       .arg(r.value("peak_outstanding", 0));
}

} // namespace

void printJson(QTextStream &out, CommandArgs &args, const ReplayFlags &f, const Driver &d,
               const SimulatedReplay *simulated, const ReplayOutcome &o, const Summaries &s)
{
    nlohmann::json j{{"session_id", o.sessionId},
                     {"source", {{"kind", args.has("trace") ? "trace" : "session"}, {"id", f.id}}},
                     {"config", toJson(o.config)},
                     {"requests", o.total},
                     {"submitted", o.submitted},
                     {"rejected_at_submit", o.rejected},
                     {"completed", o.completed},
                     {"failed", o.failed},
                     {"clamped", o.clamped},
                     {"raised", o.raised},
                     {"cancelled", o.cancelled},
                     {"wall_s", o.wallSeconds},
                     {"max_lateness_us", toMicros(o.maxLateness)},
                     {"logging_warning", o.warning}};
    if (d.target) {
        j.erase("config");
        j["target"] = d.target->describe();
        j["client"] = o.client;
    }
    if (d.calibration)
        j["calibration"] = {{"id", d.calibration->id},
                            {"describe", d.calibration->describe()},
                            {"batch_fit_error", toJson(d.calibration->batchError)}};
    if (simulated && simulated->interval())
        j["interval"] = simulatedIntervalJson(*simulated->interval(), *d.calibration);
    if (!d.serverModel.empty())
        j["server_model"] = d.serverModel;
    j["comparison"] =
        s.baseline ? comparisonJson(*s.baseline, s.replayed) : nlohmann::json{{"b", toJson(s.replayed)}};
    out << q(j.dump(2)) << "\n";
}

void printText(QTextStream &out, CommandArgs &args, const ReplayFlags &f, const ReplayOptions &ro,
               const Driver &d, const SimulatedReplay *simulated, const ReplayOutcome &o, const Summaries &s)
{
    out << QStringLiteral("%1 session %2 (%3 of %4 %5, %6 clock): %7 requests in %8 s wall time\n")
               .arg(d.target ? "remote" : "replay")
               .arg(o.sessionId)
               .arg(o.cancelled ? "cancelled replay" : "replay")
               .arg(args.has("trace") ? "trace" : "session")
               .arg(f.id)
               .arg(q(std::string(replayClockName(ro.clock))))
               .arg(o.submitted)
               .arg(o.wallSeconds, 0, 'f', 2);
    const std::optional<Calibration> &calibration = d.calibration;
    if (calibration)
        out << QStringLiteral("  calibration %1: %2; its fit to whole batches: median error %3%, worst %4%\n")
                   .arg(calibration->id)
                   .arg(q(calibration->describe()))
                   .arg(100 * calibration->batchError.medianRel, 0, 'f', 1)
                   .arg(100 * calibration->batchError.maxRel, 0, 'f', 1);
    if (!d.serverModel.empty())
        out << "  server model: " << q(d.serverModel) << "\n";
    // The length rule's changes (engine/core/length_rule.h).
    const int maxLength = d.target      ? d.target->model().maxSequenceLength
                          : calibration ? calibration->maxSequenceLength
                          : d.backend   ? d.backend->info().maxSequenceLength
                                        : 0;
    if (const std::string lengths = LengthCounts{o.raised, o.clamped}.describe(maxLength); !lengths.empty())
        out << "  lengths: " << q(lengths) << "\n";
    if (ro.clock == ReplayClock::Real)
        out << QStringLiteral("  submissions were at most %1 ms late\n")
                   .arg(toMicros(o.maxLateness) / 1000, 0, 'f', 2);
    if (!o.warning.empty())
        out << "  warning: " << q(o.warning) << "\n";
    if (simulated && simulated->interval())
        out << "  " << q(describeSpread(*simulated->interval())) << "\n  "
            << q(narrowIntervalHint(*calibration)) << "\n";
    if (d.target)
        printTarget(out, *d.target, o);
    out << "\n" << q(s.baseline ? formatComparison(*s.baseline, s.replayed) : formatSummary(s.replayed));
}

} // namespace bp::app::replay_command
