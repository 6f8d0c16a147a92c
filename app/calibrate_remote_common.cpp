// The probe and storage `calibrate --target` and its re-pricings share
// (calibrate_remote_common.h).
#include "calibrate_remote_common.h"
#include "cli_text.h"
#include "remote_fit_print.h"
#include "sigint_flag.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/calibration/remote_server_model.h"

#include <chrono>

namespace bp::app::calibrate_target {

namespace {

// A llama-server's slots as read (ProbeRunOptions::pinSlots); 0 for another
// kind, or settings not read.
int pinnedSlots(const std::string &server, const ServerSettings &settings)
{
    const auto c = llamaCppModel(server, settings);
    return c ? c->server.llamacpp.nParallel : 0;
}

} // namespace

int fail(const QString &message, int code)
{
    return failCommand(QStringLiteral("calibrate"), message, code);
}

int store(TraceStore &db, Result<Calibration> fitted, bool json)
{
    if (!fitted)
        return fail(q(fitted.status().message()));
    auto id = saveCalibration(db, *fitted);
    if (!id)
        return fail(q(id.status().message()));
    fitted->id = *id;
    QTextStream out(stdout);
    if (json) {
        out << q(toJson(*fitted).dump(2)) << "\n";
        return 0;
    }
    printRemoteFit(out, *fitted);
    return 0;
}

std::optional<BatchingConfig> llamaCppModel(const std::string &server, const ServerSettings &settings)
{
    if (server != "llamacpp" || settings.empty())
        return std::nullopt;
    RemoteCalibration r;
    r.server = server;
    r.settings = settings;
    const auto m = remoteServerModel(r, nullptr);
    if (!m || m->config.server.kind != ServerKind::LlamaCpp)
        return std::nullopt;
    return m->config;
}

remote::ProbeRun runPlan(const RemoteFlags &f, const std::string &server, const ServerSettings &settings,
                         const ProbePlan &plan, QTextStream &err)
{
    const remote::RemoteOptions &ro = f.ro;
    const bool streaming = remote::isStreaming(ro.protocol);
    err << QStringLiteral(
               "calibrate: probing %1 (%2, %3): %4 requests, at most %5 s (Ctrl+C stops and fits what "
               "was measured)\n")
               .arg(ro.target.toString(), ro.model, f.protocol)
               .arg(plan.requests())
               .arg(std::chrono::duration_cast<std::chrono::seconds>(plan.bound()).count())
        << q(plan.describe());
    err.flush();
    remote::ProbeRunOptions po;
    po.remote = ro;
    po.plan = plan;
    po.dialect = remote::dialectFor(server);
    po.pinSlots = pinnedSlots(server, settings);
    if (const std::string d = remote::describe(po.dialect, ro.protocol); !d.empty())
        err << QStringLiteral("calibrate: requests to a %1 server: %2\n").arg(q(server), q(d));
    if (po.pinSlots > 0 && streaming)
        err << QStringLiteral("calibrate: a round's streams take slots 0, 1, ... of its %1 (id_slot): their "
                              "decodes share one forward pass a turn\n")
                   .arg(po.pinSlots);
    po.scrapeInterval = std::chrono::milliseconds(qint64(f.scrape));
    po.progress = [&err](const std::string &line) {
        err << "  " << q(line) << "\n";
        err.flush();
    };
    SigintFlag sigint;
    po.interrupt = sigint.flag();
    return remote::runProbe(po);
}

ProbePlan bounded(ProbePlan plan, const RemoteFlags &f)
{
    plan.timeout = f.ro.timeout;
    plan.maxDuration = std::chrono::seconds(qint64(f.maxDuration));
    return plan;
}

void reportShortfall(const remote::ProbeRun &run, QTextStream &err)
{
    if (!run.interrupted && run.requests.size() != run.planned)
        err << QStringLiteral("calibrate: %1 of the %2 planned requests were sent\n")
                   .arg(run.requests.size())
                   .arg(run.planned);
    for (const ProbeRequest &p : run.requests)
        if (!p.ok) {
            err << QStringLiteral("calibrate: %1 of %2 requests failed; the first: %3\n")
                       .arg(run.failed())
                       .arg(run.requests.size())
                       .arg(q(p.error));
            break;
        }
    err.flush();
}

} // namespace bp::app::calibrate_target
