#include "cli_text.h"
#include "cmd_autoscale.h"

#include <QTextStream>

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <string>

namespace bp::app {

// --decide: the policy for a controller of one's own (tools/autoscale_verify.py
// drives two or more servers with it). One observation per stdin line, a
// JSON object: at_s (required, seconds), ready (required), starting,
// waiting, running, kv_usage (0..1), arrival_rate (req/s); absent numbers
// are 0. One decision per line on stdout: {"at_s", "replicas", "why"}, or
// {"error"} for a line that is not an observation (the next line is read as
// usual). Output is flushed per line, so a controller can wait on each.
int runAutoscaleDecide(AutoscalePolicy &policy)
{
    QTextStream in(stdin), out(stdout);
    const auto number = [](const nlohmann::json &j, const char *key,
                           double fallback) -> std::optional<double> {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null())
            return fallback;
        if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
            return std::nullopt;
        return it->get<double>();
    };
    QString line;
    std::size_t lineNo = 0, refused = 0;
    while (in.readLineInto(&line)) {
        ++lineNo;
        if (line.trimmed().isEmpty())
            continue;
        nlohmann::json reply;
        const nlohmann::json j = nlohmann::json::parse(line.toStdString(), nullptr, false);
        FleetObservation o;
        std::string problem;
        if (!j.is_object()) {
            problem = "not a JSON object";
        } else if (!j.contains("at_s") || !j.contains("ready")) {
            problem = "an observation needs at_s and ready";
        } else {
            const auto at = number(j, "at_s", 0), ready = number(j, "ready", 0),
                       starting = number(j, "starting", 0), waiting = number(j, "waiting", 0),
                       running = number(j, "running", 0), kv = number(j, "kv_usage", 0),
                       rate = number(j, "arrival_rate", 0);
            if (!at || !ready || !starting || !waiting || !running || !kv || !rate || *kv > 1 ||
                *ready > 1e6 || *starting > 1e6)
                problem =
                    "at_s, ready, starting, waiting, running, arrival_rate are numbers >= 0 and kv_usage "
                    "one from 0 to 1";
            else
                o = FleetObservation{*at, int(*ready), int(*starting), *waiting, *running, *kv, *rate};
        }
        if (!problem.empty()) {
            ++refused;
            reply = {{"error", "line " + std::to_string(lineNo) + ": " + problem}};
        } else {
            const ScaleDecision d = policy.decide(o);
            reply = {{"at_s", o.atS}, {"replicas", d.replicas}, {"why", d.why}};
        }
        out << q(reply.dump()) << "\n";
        out.flush();
    }
    return refused ? 1 : 0;
}

} // namespace bp::app
