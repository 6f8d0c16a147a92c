#include "remote_options.h"

namespace bp::remote {

Status validate(const RemoteOptions &o)
{
    auto bad = [](const QString &what) { return Status(StatusCode::InvalidArgument, what.toStdString()); };
    if (!o.replicas.isEmpty() && o.replicas.front() != o.target)
        return bad(QStringLiteral("a fleet's first replica must be its --target"));
    for (const QUrl &url : targetUrls(o)) {
        if (!url.isValid() ||
            (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")))
            return bad(
                QStringLiteral("--target must be an http:// or https:// URL, not '%1'").arg(url.toString()));
        if (url.host().isEmpty())
            return bad(QStringLiteral("--target '%1' has no host").arg(url.toString()));
        if (url.hasQuery() || url.hasFragment())
            return bad(
                QStringLiteral("--target '%1': give the server's base URL, without ?query or #fragment")
                    .arg(url.toString()));
    }
    if (!o.replicas.isEmpty() && o.router.replicas != int(o.replicas.size()))
        return bad(QStringLiteral("the router must have one replica per --target URL"));
    if (o.model.isEmpty())
        return bad(QStringLiteral("a remote replay needs --model NAME (the model's name on the server)"));
    if (o.maxConcurrency < 1 || o.maxConcurrency > 16384)
        return bad(QStringLiteral("--max-concurrency must be in [1, 16384]"));
    if (o.maxQueued < 0 || o.maxQueued > 10'000'000)
        return bad(QStringLiteral("--max-queued must be in [0, 10000000] (0: no cap)"));
    if (o.timeout < Duration::zero() || o.scrapeInterval < Duration::zero())
        return bad(QStringLiteral("timeouts and intervals cannot be negative"));
    if (o.scrapeInterval > Duration::zero() && o.scrapeInterval < std::chrono::milliseconds(10))
        return bad(QStringLiteral("--scrape-interval must be at least 10 ms"));
    if (!o.metricsUrl.isEmpty() &&
        (!o.metricsUrl.isValid() || o.metricsUrl.host().isEmpty() ||
         (o.metricsUrl.scheme() != QLatin1String("http") && o.metricsUrl.scheme() != QLatin1String("https"))))
        return bad(QStringLiteral("--metrics-url must be an http:// or https:// URL"));
    if (o.vocabSize < 2 || o.maxInputTokens < 1 || o.maxNewTokens < 0)
        return bad(QStringLiteral("vocabulary size, input and output limits must be positive"));
    return Status::ok();
}

QList<QUrl> targetUrls(const RemoteOptions &o)
{
    return o.replicas.isEmpty() ? QList<QUrl>{o.target} : o.replicas;
}

Status setTargets(RemoteOptions &o, const QString &list, const QString &router)
{
    auto bad = [](const QString &what) { return Status(StatusCode::InvalidArgument, what.toStdString()); };
    QList<QUrl> urls;
    for (const QString &part : list.split(QLatin1Char(','))) {
        const QString text = part.trimmed();
        if (text.isEmpty())
            return bad(list.trimmed().isEmpty()
                           ? QStringLiteral("--target needs a URL (or a comma-separated list of URLs)")
                           : QStringLiteral("--target '%1' has an empty entry in its list").arg(list));
        const QUrl url(text);
        if (urls.contains(url))
            return bad(QStringLiteral("--target lists '%1' twice: give each replica once").arg(text));
        urls.append(url);
    }
    if (!router.isEmpty()) {
        const auto policy = parseRouterPolicy(router.toStdString());
        if (!policy)
            return bad(QStringLiteral("--router must be round-robin, least-outstanding, least-kv or "
                                      "prefix-affinity, not '%1'")
                           .arg(router));
        o.router.policy = *policy;
    }
    o.target = urls.front();
    o.replicas = urls.size() > 1 ? urls : QList<QUrl>{};
    o.router.replicas = urls.size() > 1 ? int(urls.size()) : 1;
    return Status::ok();
}

QString targetList(const RemoteOptions &o)
{
    QStringList urls;
    for (const QUrl &u : targetUrls(o))
        urls.append(u.toString());
    return urls.join(QLatin1Char(','));
}

nlohmann::json describeOptions(const RemoteOptions &o)
{
    nlohmann::json d = {
        {"url", targetList(o).toStdString()},
        {"protocol", protocolName(o.protocol).toStdString()},
        {"model", o.model.toStdString()},
        {"max_concurrency", o.maxConcurrency},
        {"max_queued", o.maxQueued},
        {"timeout_ms", std::chrono::duration_cast<std::chrono::milliseconds>(o.timeout).count()},
        {"scrape_interval_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(o.scrapeInterval).count()},
        {"authorization", !o.token.isEmpty()}}; // whether a token was sent, never the token
    if (!o.server.empty())
        d["server"] = o.server;
    if (!o.replicas.isEmpty()) {
        nlohmann::json urls = nlohmann::json::array();
        for (const QUrl &u : o.replicas)
            urls.push_back(u.toString().toStdString());
        d["replicas"] = urls;
        d["router"] = std::string(routerPolicyName(o.router.policy));
        d["load_bound"] = o.router.loadBound;
    }
    return d;
}

} // namespace bp::remote
