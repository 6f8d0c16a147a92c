#include "routes.h"

#include <QStringList>

namespace bp::rest {

namespace {
using Method = QHttpServerRequest::Method;

RouteMatch byMethod(Method method, std::initializer_list<std::pair<Method, Route>> allowed)
{
    RouteMatch m;
    m.pathKnown = true;
    for (const auto &[verb, route] : allowed) {
        if (verb == method) {
            m.route = route;
            return m;
        }
        if (!m.allow.isEmpty())
            m.allow += ", ";
        m.allow += verb == Method::Get ? "GET" : verb == Method::Put ? "PUT" : "POST";
    }
    return m;
}
} // namespace

RouteMatch matchRoute(const QString &rawPath, Method method)
{
    QString path = rawPath;
    while (path.size() > 1 && path.endsWith('/'))
        path.chop(1); // "/v2/" is "/v2"
    if (path == QLatin1String("/v2/health/live"))
        return byMethod(method, {{Method::Get, Route::HealthLive}});
    if (path == QLatin1String("/v2/health/ready"))
        return byMethod(method, {{Method::Get, Route::HealthReady}});
    if (path == QLatin1String("/v2"))
        return byMethod(method, {{Method::Get, Route::ServerMetadata}});
    if (path == QLatin1String("/v1/infer"))
        return byMethod(method, {{Method::Post, Route::V1Infer}});
    if (path == QLatin1String("/v1/completions"))
        return byMethod(method, {{Method::Post, Route::Completions}});
    if (path == QLatin1String("/v1/chat/completions"))
        return byMethod(method, {{Method::Post, Route::ChatCompletions}});
    if (path == QLatin1String("/v1/models"))
        return byMethod(method, {{Method::Get, Route::ListModels}});
    if (path.startsWith(QLatin1String("/v1/models/"))) {
        // OpenAI model ids may hold slashes ("meta-llama/Llama-3.1-8B").
        RouteMatch m = byMethod(method, {{Method::Get, Route::GetModel}});
        m.model = path.mid(int(sizeof("/v1/models/") - 1));
        return m;
    }
    if (path == QLatin1String("/v1/config"))
        return byMethod(method, {{Method::Get, Route::GetConfig}, {Method::Put, Route::PutConfig}});
    if (path == QLatin1String("/v1/stats"))
        return byMethod(method, {{Method::Get, Route::Stats}});
    if (path == QLatin1String("/metrics"))
        return byMethod(method, {{Method::Get, Route::Metrics}});

    // /v1/sessions/{id}/report
    if (path.startsWith(QLatin1String("/v1/sessions/")) && path.endsWith(QLatin1String("/report"))) {
        const QString id = path.mid(int(sizeof("/v1/sessions/") - 1)).chopped(int(sizeof("/report") - 1));
        if (id.isEmpty() || id.contains('/'))
            return {};
        RouteMatch m = byMethod(method, {{Method::Get, Route::SessionReport}});
        m.session = id;
        return m;
    }

    // /v2/models/{name}[/versions/{v}][/ready|/infer]
    if (!path.startsWith(QLatin1String("/v2/models/")))
        return {};
    QStringList parts = path.mid(int(sizeof("/v2/models/") - 1)).split('/');
    if (parts.isEmpty() || parts.front().isEmpty())
        return {};
    QString model = parts.takeFirst();
    QString version;
    if (parts.size() >= 2 && parts.front() == QLatin1String("versions")) {
        parts.removeFirst();
        version = parts.takeFirst();
        if (version.isEmpty())
            return {};
    }
    RouteMatch m;
    if (parts.isEmpty())
        m = byMethod(method, {{Method::Get, Route::ModelMetadata}});
    else if (parts.size() == 1 && parts.front() == QLatin1String("ready"))
        m = byMethod(method, {{Method::Get, Route::ModelReady}});
    else if (parts.size() == 1 && parts.front() == QLatin1String("infer"))
        m = byMethod(method, {{Method::Post, Route::OipInfer}});
    else
        return {};
    m.model = std::move(model);
    m.version = std::move(version);
    return m;
}

bool isHealthRoute(Route route)
{
    return route == Route::HealthLive || route == Route::HealthReady;
}

Api apiOf(Route route)
{
    switch (route) {
    case Route::HealthLive:
    case Route::HealthReady:
    case Route::ServerMetadata:
    case Route::ModelMetadata:
    case Route::ModelReady:
    case Route::OipInfer: return Api::Oip;
    case Route::Completions:
    case Route::ChatCompletions:
    case Route::ListModels:
    case Route::GetModel: return Api::OpenAi;
    case Route::V1Infer:
    case Route::GetConfig:
    case Route::PutConfig:
    case Route::Stats:
    case Route::Metrics:
    case Route::SessionReport: return Api::V1;
    }
    return Api::V1;
}

bool isOpenAiPath(const QString &rawPath)
{
    QString path = rawPath;
    while (path.size() > 1 && path.endsWith('/'))
        path.chop(1);
    return path == QLatin1String("/v1/completions") || path == QLatin1String("/v1/chat/completions") ||
           path == QLatin1String("/v1/models") || path.startsWith(QLatin1String("/v1/models/"));
}

} // namespace bp::rest
