#include "tune_command.h"

#include "cli_text.h"
#include "cmd_tune_text.h"
#include "tune_output.h"

#include "engine/config/config_json.h"
#include "engine/sim/tune/tuning_document.h"

#include <cmath>

namespace bp::app::tune_command {

void printJson(QTextStream &out, const TuneJob &job, const TuneRun &run, const TuneOutcome &o)
{
    const TuneResult &r = run.result;
    const PrefixShare share = run.source.prefixShare();
    nlohmann::json j = run.stored.document;
    j["reusable_prefix"] = {{"prompt_tokens", share.promptTokens},
                            {"reusable_tokens", share.reusableTokens},
                            {"share", share.share()}};
    nlohmann::json candidates = nlohmann::json::array();
    for (const TuneCandidate &c : r.candidates)
        candidates.push_back({{"label", c.label},
                              {"config", toJson(c.config)},
                              {"predicted", tuneFiguresJson(c.figures)},
                              {"pareto", c.pareto}});
    j["candidates"] = candidates;
    j["pareto"] = r.pareto;
    if (run.interval)
        j["recommended"]["interval"] = simulatedIntervalJson(*run.interval, job.calibration);
    if (o.verdict)
        j["current"] = {
            {"config", toJson(*o.current)},
            {"predicted", tuneFiguresJson(*o.currentFigures)},
            {"meets_slo", o.verdict->currentMeets},
            {"keep", o.verdict->keep},
            {"gain", std::isfinite(o.verdict->gain) ? nlohmann::json(o.verdict->gain) : nlohmann::json()},
            {"margin", o.verdict->margin},
            {"settings", job.serverModel->describe()}};
    out << q(j.dump(2)) << "\n";
}

namespace {

// The verification's lines: the pipeline's real-clock check, the replay
// into a remote target, or why there is none.
void printVerificationText(QTextStream &out, const TuneJob &job, const TuneRun &run, const TuneRequest &asked,
                           const TuneOutcome &o)
{
    const TuneCandidate &rec = run.result.candidates[*run.result.recommended];
    if (run.verification) {
        printVerification(out, *run.verification, o.tokenLevel);
    } else if (o.verified) {
        out << QStringLiteral(
                   "\nVerification: real-clock replay on the server, session %1, %2 s wall time%3\n")
                   .arg(o.verified->sessionId)
                   .arg(o.verified->wallSeconds, 0, 'f', 1)
                   .arg(o.verified->cancelled ? QStringLiteral(" (cancelled)") : QString());
        printVerification(out, rec.figures, *o.measured, o.tokenLevel);
    } else if (job.remoteTarget && !job.remoteTarget->applied && asked.verify) {
        out << QStringLiteral(
            "\nNot verified: --apply sends the pick to the server, then the same arrivals are "
            "replayed into it.\n");
    } else if (asked.verify)
        out << QStringLiteral("\nNot verified (the search was cancelled).\n");
    out << QStringLiteral("\nStored as tuning %1").arg(run.stored.tuningId);
    if (run.verification || o.verified)
        out << QStringLiteral("; its report: batchpilot report %1 -o tuned.html")
                   .arg(o.verified ? o.verified->sessionId : run.verification->replay.sessionId);
    out << "\n";
}

} // namespace

void printText(QTextStream &out, const AppOptions &options, CommandArgs &args, const Parsed &parsed,
               const TuneJob &job, const TuneRun &run, const TuneOutcome &o)
{
    const TuneRequest &asked = parsed.request;
    const TuneCandidate &rec = run.result.candidates[*run.result.recommended];
    const bool serverBase = job.serverModel && options.config.isEmpty();
    const QString baseName = serverBase            ? QStringLiteral("server's current")
                             : asked.source.config ? QStringLiteral("--config")
                             : asked.source.source.kind == ReplaySource::Kind::Session
                                 ? QStringLiteral("session's")
                                 : QStringLiteral("default");
    // How much of the prompt a prefix cache could serve (hash ids, conversations): before the search's table.
    const PrefixShare share = run.source.prefixShare();
    out << QStringLiteral("Reusable prefix: %1% of %2 prompt tokens are in blocks seen before%3\n")
               .arg(100.0 * share.share(), 0, 'f', 1)
               .arg(share.promptTokens)
               .arg(share.reusableTokens ? QString() : QStringLiteral(" (no hash ids or conversations)"));
    if (serverBase)
        out << QStringLiteral("Server model: %1's scheduler; its settings: %2\n")
                   .arg(q(job.serverModel->server), q(job.serverModel->describe()));
    printSearch(out, run, parsed.objectiveName, baseName, asked.settings.noise,
                o.verdict ? &*o.verdict : nullptr, o.currentFigures ? &*o.currentFigures : nullptr);
    if (run.interval)
        out << "  " << q(describeSpread(*run.interval)) << "\n  " << q(narrowIntervalHint(job.calibration))
            << "\n";
    if (const std::string w = run.source.extrapolationWarning(job.calibration); !w.empty())
        out << "  warning: " << q(w) << "\n";
    if (args.has("output"))
        out << QStringLiteral(
                   "  written to %1 (apply: batchpilot --headless --config %1, or PUT /v1/config)\n")
                   .arg(args.value("output"));
    if (job.remoteTarget)
        printRemotePick(out, *job.remoteTarget, o.pick, o.keep ? *o.currentFigures : rec.figures,
                        *o.currentFigures, o.tokenLevel);
    printVerificationText(out, job, run, asked, o);
}

} // namespace bp::app::tune_command
