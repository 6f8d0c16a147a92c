// A remote server's settings over HTTP (settings_fetch.h).
#include "settings_fetch.h"

#include "http1_connection.h"
#include "remote_codec.h"

#include "engine/sim/calibration/llamacpp_settings.h"
#include "engine/telemetry/target_metrics.h"

#include <QEventLoop>

namespace bp::remote {

QUrl routeUrl(const QUrl &target, const QString &route)
{
    QUrl u = target;
    QString path = u.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    u.setPath(path + route);
    u.setQuery(QString());
    return u;
}

namespace {

Result<nlohmann::json> getJson(const QUrl &url, const QString &token)
{
    const HttpGet r = httpGet(url, token);
    const std::string what = "GET " + url.toString().toStdString();
    if (!r.error.isEmpty())
        return Status(StatusCode::Unavailable, what + ": " + r.error.toStdString());
    if (r.status != 200)
        return Status(r.status == 404 ? StatusCode::NotFound : StatusCode::Unavailable,
                      what + ": HTTP " + std::to_string(r.status) + " " + errorText(r.body).toStdString());
    auto j = nlohmann::json::parse(r.body.constData(), r.body.constData() + r.body.size(), nullptr, false);
    if (j.is_discarded())
        return Status(StatusCode::InvalidArgument, what + ": the answer is not JSON");
    return j;
}

} // namespace

HttpGet httpGet(const QUrl &url, const QString &token, Duration timeout)
{
    return httpSend(url, "GET", {}, token, timeout);
}

HttpGet httpSend(const QUrl &url, const QByteArray &method, const QByteArray &body, const QString &token,
                 Duration timeout)
{
    Http1Connection connection(endpointOf(url));
    HttpExchange ex;
    ex.path = requestPathOf(url);
    if (!token.isEmpty())
        ex.headers.append({"Authorization", "Bearer " + token.toUtf8()});
    ex.timeout = timeout;
    ex.method = method;
    ex.body = body;
    if (!body.isEmpty())
        ex.headers.append({QByteArray("Content-Type"), QByteArray("application/json")});
    HttpGet out;
    QEventLoop loop;
    bool done = false;
    connection.start(std::move(ex), [&](HttpResult &&r) {
        out.status = r.status;
        out.body = std::move(r.body);
        out.error = r.error;
        done = true;
        loop.quit();
    });
    if (!done)
        loop.exec();
    return out;
}

Result<prom::Exposition> getExposition(const QUrl &url, const QString &token, Duration timeout)
{
    const HttpGet r = httpGet(url, token, timeout);
    if (!r.error.isEmpty())
        return Status(StatusCode::Unavailable, r.error.toStdString());
    if (r.status != 200)
        return Status(StatusCode::Unavailable, "HTTP " + std::to_string(r.status));
    return prom::parse(std::string_view(r.body.constData(), std::size_t(r.body.size())));
}

Result<prom::Exposition> scrapeOnce(const RemoteOptions &options)
{
    const QUrl url = options.metricsUrl.isValid() && !options.metricsUrl.isEmpty()
                         ? options.metricsUrl
                         : routeUrl(options.target.adjusted(QUrl::RemovePath), QStringLiteral("/metrics"));
    auto e = getExposition(url, options.token);
    if (!e)
        return Status(e.status().code(), "GET " + url.toString().toStdString() + ": " + e.status().message());
    return e;
}

Result<ServerSettings> fetchServerSettings(const RemoteOptions &options, const std::string &server,
                                           const prom::Exposition *metrics)
{
    const QUrl &t = options.target;
    if (server == "vllm") {
        auto models = getJson(routeUrl(t, QStringLiteral("/v1/models")), options.token);
        if (!metrics && !models)
            return models.status();
        const prom::Exposition none;
        return vllmSettings(metrics ? *metrics : none, models ? &*models : nullptr,
                            options.model.toStdString());
    }
    if (server == "tgi") {
        auto info = getJson(routeUrl(t, QStringLiteral("/info")), options.token);
        if (!info)
            return info.status();
        return tgiSettings(*info, metrics);
    }
    if (server == "sglang") {
        // /get_server_info, else /server_info (either name, by release).
        QString route = QStringLiteral("/get_server_info");
        auto info = getJson(routeUrl(t, route), options.token);
        if (!info && info.status().code() == StatusCode::NotFound) {
            route = QStringLiteral("/server_info");
            info = getJson(routeUrl(t, route), options.token);
        }
        if (!info)
            return info.status();
        auto models = getJson(routeUrl(t, QStringLiteral("/v1/models")), options.token);
        return sglangSettings(*info, models ? &*models : nullptr, options.model.toStdString(),
                              route.toStdString());
    }
    if (server == "triton") {
        auto config = getJson(routeUrl(t, QStringLiteral("/v2/models/") +
                                              QString::fromUtf8(QUrl::toPercentEncoding(options.model)) +
                                              QStringLiteral("/config")),
                              options.token);
        if (!config)
            return config.status();
        return tritonSettings(*config);
    }
    if (server == "llamacpp") {
        auto props = getJson(routeUrl(t, QStringLiteral("/props")), options.token);
        if (!props)
            return props.status();
        auto slotList = getJson(routeUrl(t, QStringLiteral("/slots")), options.token);
        return llamacppSettings(*props, slotList ? &*slotList : nullptr);
    }
    if (server == "batchpilot") {
        auto config = getJson(routeUrl(t, QStringLiteral("/v1/config")), options.token);
        if (!config)
            return config.status();
        auto models = getJson(routeUrl(t, QStringLiteral("/v1/models")), options.token);
        return batchpilotSettings(*config, models ? &*models : nullptr);
    }
    return Status(StatusCode::NotFound, (server.empty() ? std::string("an unrecognised server") : server) +
                                            " publishes no batching settings; give --server-config FILE");
}

std::string detectFromRoutes(const RemoteOptions &options)
{
    auto props = getJson(routeUrl(options.target, QStringLiteral("/props")), options.token);
    if (props && isLlamaCppProps(*props))
        return "llamacpp";
    return {};
}

std::string detectKind(const RemoteOptions &options, std::string &from)
{
    if (auto metrics = scrapeOnce(options))
        if (std::string kind = detectServer(*metrics); !kind.empty()) {
            from = "/metrics";
            return kind;
        }
    std::string kind = detectFromRoutes(options);
    from = kind.empty() ? "" : "GET /props";
    return kind;
}

} // namespace bp::remote
