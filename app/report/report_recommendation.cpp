#include "report_recommendation.h"

#include <cmath>

namespace bp::report {

namespace {

QString e(const std::string &s)
{
    return QString::fromStdString(s).toHtmlEscaped();
}

// A figure of the stored `predicted` / `measured` objects; null = infinite.
QString figure(const nlohmann::json &figures, const char *key, int decimals)
{
    if (!figures.is_object() || !figures.contains(key))
        return QStringLiteral("–");
    const nlohmann::json &v = figures[key];
    if (v.is_boolean())
        return v.get<bool>() ? QStringLiteral("yes") : QStringLiteral("no");
    if (!v.is_number())
        return QStringLiteral("∞");
    return QString::number(v.get<double>(), 'f', decimals);
}

QString change(const nlohmann::json &predicted, const nlohmann::json &measured, const char *key)
{
    if (!predicted.is_object() || !measured.is_object())
        return {};
    const nlohmann::json &p = predicted.value(key, nlohmann::json()),
                         &m = measured.value(key, nlohmann::json());
    if (!p.is_number() || !m.is_number() || m.get<double>() == 0 || p.is_boolean())
        return {};
    const double percent = std::round(100 * (p.get<double>() / m.get<double>() - 1));
    return QStringLiteral("%1%2%").arg(percent >= 0 ? "+" : "").arg(percent == 0 ? 0.0 : percent, 0, 'f', 0);
}

} // namespace

nlohmann::json recommendationJson(const ReportData &d)
{
    if (d.tunings.empty())
        return nullptr;
    nlohmann::json out = nlohmann::json::array();
    for (const StoredTuning &t : d.tunings)
        out.push_back(
            {{"tuning_id", t.id},
             {"role", t.verifySessionId == d.session.id ? "verification" : "source"},
             {"slo", t.slo},
             {"objective", t.objective},
             {"verify_session_id", t.verifySessionId ? nlohmann::json(*t.verifySessionId) : nullptr},
             {"result", t.result}});
    return out;
}

QString recommendationHtml(const ReportData &d, const QString &tableOpen, const QString &tableClose)
{
    if (d.tunings.empty())
        return {};
    QString h = QStringLiteral("<h2>Recommendation</h2>\n");
    for (const StoredTuning &t : d.tunings) {
        const nlohmann::json &r = t.result;
        const nlohmann::json rec = r.value("recommended", nlohmann::json::object());
        const nlohmann::json verification = r.value("verification", nlohmann::json());
        const nlohmann::json measured =
            verification.is_object() ? verification.value("measured", nlohmann::json()) : nlohmann::json();
        // Verified over a window (or partially): compared with the prediction of the same arrivals.
        const nlohmann::json predicted = verification.is_object() && verification.contains("predicted")
                                             ? verification["predicted"]
                                             : rec.value("predicted", nlohmann::json::object());
        const bool verifies = t.verifySessionId == d.session.id;
        QString role =
            verifies ? QStringLiteral("This session is the real-clock replay that verified it.")
            : t.verifySessionId
                ? QStringLiteral("Verified by the real-clock replay in session %1.").arg(*t.verifySessionId)
                : QStringLiteral("Not verified by a real replay.");
        h += QStringLiteral(
                 "<p>%10 (tuning %1) searched %2 configs in simulation for the SLO "
                 "%3, objective %4, with calibration %5, and recommends <code>%6</code>; it predicts that "
                 "config meets the SLO up to %7× the tuned load (%8 req/s). %9</p>\n")
                 .arg(t.id)
                 .arg(r.value("evaluated", 0))
                 .arg(e(t.slo), e(t.objective))
                 .arg(e(r.value("calibration", nlohmann::json::object()).value("describe", std::string("?"))))
                 .arg(e(rec.value("label", std::string("?"))))
                 .arg(QString::number(rec.value("capacity_speed", 0.0), 'f', 2))
                 .arg(QString::number(rec.value("capacity_rps", 0.0), 'f', 1))
                 .arg(role)
                 .arg(r.value("origin", std::string()) == "console advisor"
                          ? QStringLiteral("The console's Advisor")
                          : QStringLiteral("<code>batchpilot tune</code>"));
        if (verification.is_object() && verification.contains("window"))
            h += QStringLiteral(
                     "<p>The real-clock check replayed %1 of the %2 requests (window <code>%3</code>)%4; "
                     "both columns are over those requests.</p>\n")
                     .arg(verification.value("compared", 0))
                     .arg(r.value("requests", 0))
                     .arg(e(verification["window"].value("spec", std::string())))
                     .arg(verification.value("partial", false)
                              ? QStringLiteral(", cut short by a cancel (partial)")
                              : QString());
        h += tableOpen +
             QStringLiteral("<tr><th></th><th>predicted</th>%1</tr>\n")
                 .arg(measured.is_object() ? QStringLiteral("<th>measured</th><th>error</th>") : QString());
        const struct {
            const char *label, *key;
            int decimals;
        } rows[] = {{"throughput (req/s)", "throughput_rps", 1},
                    {"goodput (req/s)", "goodput_rps", 1},
                    {"latency p50 (ms)", "p50_ms", 2},
                    {"latency p99 (ms)", "p99_ms", 2},
                    {"TTFT p50 (ms)", "ttft_p50_ms", 2},
                    {"TTFT p99 (ms)", "ttft_p99_ms", 2},
                    {"TPOT p50 (ms)", "tpot_p50_ms", 2},
                    {"TPOT p99 (ms)", "tpot_p99_ms", 2},
                    {"mean batch", "mean_batch", 1},
                    {"SLO met", "slo_met", 0}};
        for (const auto &row : rows) {
            if (predicted.value(row.key, nlohmann::json()).is_number() &&
                predicted[row.key].get<double>() == 0 &&
                (std::string(row.key).rfind("ttft_", 0) == 0 || std::string(row.key).rfind("tpot_", 0) == 0))
                continue; // nothing generated
            h += QStringLiteral("<tr><td class=\"label\">%1</td><td class=\"num\">%2</td>")
                     .arg(QString::fromUtf8(row.label), figure(predicted, row.key, row.decimals));
            if (measured.is_object())
                h += QStringLiteral("<td class=\"num\">%1</td><td class=\"num\">%2</td>")
                         .arg(figure(measured, row.key, row.decimals), change(predicted, measured, row.key));
            h += QStringLiteral("</tr>\n");
        }
        h += tableClose;
    }
    return h;
}

} // namespace bp::report
