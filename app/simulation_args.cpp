#include "simulation_args.h"

#include "engine_host.h"

#include <algorithm>
#include <thread>

namespace bp::app {

Result<TuneSlo> parseSourceAndSlo(CommandArgs &args, const char *usage, const QString &sloRequired)
{
    auto fail = [usage](const QString &why) {
        return Status(StatusCode::InvalidArgument, (why + "\n" + usage).toStdString());
    };
    if (!args.error().isEmpty())
        return fail(args.error());
    if (!args.positional().isEmpty())
        return fail(QStringLiteral("unexpected '%1'").arg(args.positional().front()));
    if (args.has("trace") == args.has("session"))
        return fail(QStringLiteral("give one of --trace ID or --session ID"));
    if (!args.has("slo"))
        return fail(sloRequired);
    return parseTuneSlo(args.value("slo").toStdString());
}

std::optional<ReplaySource> replaySourceFor(CommandArgs &args)
{
    const bool trace = args.has("trace");
    const auto id = args.number(trace ? "trace" : "session", 0, 1, 9e18);
    if (!id)
        return std::nullopt;
    return ReplaySource{trace ? ReplaySource::Kind::Trace : ReplaySource::Kind::Session, std::int64_t(*id)};
}

std::optional<int> jobsFor(CommandArgs &args)
{
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const auto jobs = args.number("jobs", std::min(cores, 16), 1, 16);
    if (!jobs)
        return std::nullopt;
    return int(*jobs);
}

Result<std::optional<BatchingConfig>> givenConfig(const AppOptions &options)
{
    if (options.config.isEmpty())
        return std::optional<BatchingConfig>();
    auto config = batchingConfigFor(options);
    if (!config)
        return config.status();
    return std::optional<BatchingConfig>(std::move(*config));
}

} // namespace bp::app
