#include "remote_options.h"

namespace bp::remote {

Status validate(const RemoteOptions &o)
{
    auto bad = [](const QString &what) { return Status(StatusCode::InvalidArgument, what.toStdString()); };
    if (!o.target.isValid() ||
        (o.target.scheme() != QLatin1String("http") && o.target.scheme() != QLatin1String("https")))
        return bad(
            QStringLiteral("--target must be an http:// or https:// URL, not '%1'").arg(o.target.toString()));
    if (o.target.host().isEmpty())
        return bad(QStringLiteral("--target '%1' has no host").arg(o.target.toString()));
    if (o.target.hasQuery() || o.target.hasFragment())
        return bad(QStringLiteral("--target '%1': give the server's base URL, without ?query or #fragment")
                       .arg(o.target.toString()));
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

} // namespace bp::remote
