#include "request_gate.h"

#include "oip_codec.h"

namespace bp::rest {

namespace {
// Compares without an early exit, so response timing does not reveal how
// much of a guessed token was right.
bool constantTimeEquals(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

std::string hostRefusal(const QByteArray &host)
{
    const QByteArray shown = host.size() > 100 ? host.left(100) + "..." : host;
    return "Host '" + shown.toStdString() +
           "' does not name this server: without a token the endpoint answers only requests for "
           "localhost, 127.0.0.1 or [::1] (protection against DNS rebinding); use one of those names, "
           "or start the server with --token";
}

bool refusedWhileDraining(Route route)
{
    switch (route) {
    case Route::V1Infer:
    case Route::OipInfer:
    case Route::Completions:
    case Route::ChatCompletions:
    case Route::PutConfig: return true;
    default: return false;
    }
}
} // namespace

RequestGate::RequestGate(const RestOptions &options, const ModelInfo &model)
    : m_model(model), m_maxBodyBytes(options.maxBodyBytes),
      m_expectedAuthorization(options.token.isEmpty() ? QByteArray() : "Bearer " + options.token.toUtf8()),
      m_boundAddress(parseBindAddress(options.bind))
{
}

bool RequestGate::authorized(const QHttpServerRequest &request) const
{
    if (m_expectedAuthorization.isEmpty())
        return true;
    QByteArray given = request.value("Authorization").trimmed();
    if (given.size() > 7 && given.left(7).compare("bearer ", Qt::CaseInsensitive) == 0)
        given = "Bearer " + given.mid(7).trimmed();
    return constantTimeEquals(given, m_expectedAuthorization);
}

RequestGate::Decision RequestGate::check(const QHttpServerRequest &request, const QString &path,
                                         bool draining) const
{
    Decision d;
    auto refuse = [&d](HttpReply reply) {
        d.match.route.reset();
        d.refusal = std::move(reply);
        return d;
    };
    if (request.body().size() > m_maxBodyBytes) // the guard stops these earlier; this is the backstop
        return refuse(errorReply(HttpStatus::PayloadTooLarge, "request body is larger than the limit"));
    if (m_expectedAuthorization.isEmpty() && !isLocalHostHeader(request.value("Host"), m_boundAddress))
        return refuse(errorReply(HttpStatus::Forbidden, hostRefusal(request.value("Host"))));
    d.match = matchRoute(path, request.method());
    const RouteMatch &match = d.match;
    const bool health = match.route && isHealthRoute(*match.route);
    // Unknown routes answer 401 before 404, so they do not reveal which paths exist.
    if (!health && !authorized(request))
        return refuse(errorReply(HttpStatus::Unauthorized, "missing or wrong bearer token")
                          .withHeader("WWW-Authenticate", "Bearer"));
    if (!match.route) {
        if (match.pathKnown)
            return refuse(errorReply(HttpStatus::MethodNotAllowed,
                                     "method not allowed here; allowed: " + match.allow.toStdString())
                              .withHeader("Allow", match.allow));
        return refuse(
            errorReply(HttpStatus::NotFound, "no route " + path.toStdString() + " (see docs/rest.md)"));
    }
    if (!match.model.isEmpty()) {
        const std::string name = match.model.toStdString();
        if (!matchesModel(name, m_model))
            return refuse(errorReply(HttpStatus::NotFound, "unknown model '" + name +
                                                               "' (this server serves '" +
                                                               servedModelName(m_model) + "')")
                              .withErrorCode("model_not_found"));
        if (!match.version.isEmpty() && match.version != QLatin1String("1"))
            return refuse(errorReply(HttpStatus::NotFound,
                                     "unknown version '" + match.version.toStdString() + "' (only '1')"));
    }
    if (draining && refusedWhileDraining(*match.route))
        return refuse(errorReply(HttpStatus::ServiceUnavailable, "server is shutting down")
                          .withErrorCode("shutting_down"));
    return d;
}

} // namespace bp::rest
