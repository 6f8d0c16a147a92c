// calibrate --target URL's re-pricings of a stored calibration
// (docs/remote.md): --session ID refits the newest calibration of the
// target with a recorded remote session's rows beside its own; --refresh
// ID measures the server's single-stream pace again and scales every cost
// to it.
#include "calibrate_remote_common.h"
#include "cli_text.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/calibration/remote_calibrate.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/store/trace_store.h"

#include <cmath>
#include <cstdio>

namespace bp::app::calibrate_target {

int refine(TraceStore &db, const remote::RemoteOptions &ro, const std::string &server, std::int64_t session,
           bool json)
{
    auto base = latestRemoteCalibration(db, ro.target.toString().toStdString(), ro.model.toStdString(),
                                        server == "auto" ? "" : server);
    if (!base)
        return fail(q(base.status().message()));
    auto s = db.session(session);
    if (!s)
        return fail(q(s.status().message()));
    if (s->kind != "remote")
        return fail(
            QStringLiteral("session %1 is not a remote session (kind %2)").arg(session).arg(q(s->kind)));
    auto requests = db.requests(session);
    if (!requests)
        return fail(q(requests.status().message()));
    RemoteCalibration r = *base->remote;
    int kvPad = 0;
    if (simulatesServerModel(r) && r.paddedKvView) // the probe's rows' way (chooseKvView)
        if (auto m = remoteServerModel(r, nullptr))
            kvPad = serverKvPad(m->config);
    const auto rows = sessionObservations(*requests, r.prefillChunk, kvPad);
    if (rows.empty())
        return fail(
            QStringLiteral("session %1 has no streamed request with two or more tokens to fit").arg(session));
    r.observations.insert(r.observations.end(), rows.begin(), rows.end());
    QTextStream(stderr) << QStringLiteral("calibrate: calibration %1 + %2 rows of session %3\n")
                               .arg(base->id)
                               .arg(rows.size())
                               .arg(session);
    return store(db,
                 remoteCalibration(base->model, base->vocabSize, base->positions, std::move(r),
                                   base->source + " + session " + std::to_string(session)),
                 json);
}

int refresh(TraceStore &db, const RemoteFlags &f, std::int64_t id, bool json, QTextStream &err)
{
    auto base = loadCalibration(db, id);
    if (!base)
        return fail(q(base.status().message()));
    if (!base->remote)
        return fail(QStringLiteral("calibration %1 is of the embedded engine, not of a remote server: "
                                   "--refresh re-prices a calibrate --target")
                        .arg(id),
                    2);
    RemoteCalibration r = *base->remote;
    const QString target = f.ro.target.toString();
    if (q(r.url) != target || q(base->model) != f.ro.model)
        return fail(QStringLiteral("calibration %1 is of %2 at %3, not of %4 at %5")
                        .arg(id)
                        .arg(q(base->model), q(r.url), f.ro.model, target),
                    2);
    if (r.protocol != f.protocol.toStdString())
        err << QStringLiteral("calibrate: calibration %1 probed with %2; the refresh with %3\n")
                   .arg(id)
                   .arg(q(r.protocol), f.protocol);
    if (!r.pace || !remote::isStreaming(f.ro.protocol))
        return fail(QStringLiteral("calibration %1 holds no single-stream pace to compare with (probed "
                                   "without token events, or before calibrations kept one), or --protocol "
                                   "%2 streams no tokens: calibrate it again")
                        .arg(id)
                        .arg(f.protocol),
                    2);
    const remote::ProbeRun run =
        runPlan(f, r.server, r.settings, bounded(ProbePlan::refresh(*r.pace), f), err);
    reportShortfall(run, err);
    const auto pace = paceAgainst(r, run.requests);
    if (!pace)
        return fail(QStringLiteral("the refresh measured no single-stream decode (%1 of %2 requests "
                                   "answered): calibration %3 is unchanged")
                        .arg(run.requests.size() - run.failed())
                        .arg(run.requests.size())
                        .arg(id));
    const std::string line = describe(*pace, id);
    err << "calibrate: " << q(line) << "\n";
    if (std::abs(pace->ratio - 1) > kPaceWarning)
        err << QStringLiteral("calibrate: the server runs %1 % %2 than when calibration %3 was measured; the "
                              "new calibration prices it as it runs now\n")
                   .arg(std::abs(100 * (pace->ratio - 1)), 0, 'f', 0)
                   .arg(pace->ratio > 1 ? "slower" : "faster")
                   .arg(id);
    err.flush();
    scalePace(r, pace->ratio);
    r.probe.plan += line + "\n";
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "x%.3f", pace->ratio);
    return store(db,
                 remoteCalibration(base->model, base->vocabSize, base->positions, std::move(r),
                                   base->source + ", refreshed (pace " + ratio + ", " +
                                       std::to_string(run.requests.size()) + " requests)"),
                 json);
}

} // namespace bp::app::calibrate_target
