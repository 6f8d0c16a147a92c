#include "replay_plan.h"

#include "engine/config/config_json.h"

#include <cmath>
#include <unordered_map>

namespace bp {

namespace {

Status checkOptions(const ReplayOptions &o)
{
    if (!(o.speed > 0) || !std::isfinite(o.speed) || o.speed > 1e6)
        return {StatusCode::InvalidArgument, "replay speed must be in (0, 1e6]"};
    if (!(o.lengthScale > 0) || !std::isfinite(o.lengthScale) || o.lengthScale > 1e3)
        return {StatusCode::InvalidArgument, "replay length scale must be in (0, 1000]"};
    if (o.source.id <= 0)
        return {StatusCode::InvalidArgument, "replay needs a source id"};
    return Status::ok();
}

} // namespace

LengthLimits replayLengthLimits(const ReplayOptions &options, const ModelInfo &model)
{
    return {.maxLength = options.clampToModel ? model.maxSequenceLength : 0,
            .maxNewTokens = model.generative ? model.maxNewTokensLimit : 0,
            .generative = model.generative};
}

Result<ReplayPlan> planReplay(const TraceStore &store, const ReplayOptions &options, const ModelInfo &model)
{
    if (Status s = checkOptions(options); !s)
        return s;
    ReplayPlan plan;
    plan.fromSession = options.source.kind == ReplaySource::Kind::Session;
    const bool fromSession = plan.fromSession;

    // The source's arrivals and, for a session, its last config.
    auto rows = fromSession ? store.sessionArrivals(options.source.id) : store.traceRows(options.source.id);
    if (!rows)
        return rows.status();
    BatchingConfig &config = plan.config;
    if (options.config) {
        config = *options.config;
    } else if (fromSession) {
        auto history = store.configHistory(options.source.id);
        if (!history)
            return history.status();
        if (!history->empty())
            config = history->back().config;
    }
    if (Status s = validate(config); !s)
        return s;
    const std::size_t skip = std::min(options.skip, rows->size());
    std::size_t count = rows->size() - skip;
    if (options.limit > 0)
        count = std::min(count, options.limit);
    if (count == 0)
        return Status(StatusCode::InvalidArgument,
                      std::string(fromSession ? "session " : "trace ") + std::to_string(options.source.id) +
                          " has no requests to replay" +
                          (skip > 0 ? " after the first " + std::to_string(skip) : ""));

    std::vector<PrefixBlocks> hashIds;
    if (!fromSession) {
        auto info = store.trace(options.source.id);
        if (!info)
            return info.status();
        auto ids = store.traceHashIds(options.source.id);
        if (!ids)
            return ids.status();
        if (!ids->empty() && ids->size() == rows->size()) {
            hashIds = std::move(ids.value());
            plan.blockTokens = std::max(1, int(std::lround(info->blockTokens * options.lengthScale)));
        }
    }
    const LengthLimits limits = replayLengthLimits(options, model);
    std::unordered_map<std::int64_t, std::size_t> lastTurn; // conversation -> plan index
    const double originS = skip > 0 ? (*rows)[skip].arrivalS : 0;
    plan.requests.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
        const TraceRow &row = (*rows)[skip + i];
        PlannedArrival &p = plan.requests[i];
        p.sourceS = row.arrivalS;
        p.offset = fromSeconds((row.arrivalS - originS) / options.speed);
        const ScaledLengths len =
            scaleLengths(row.inputTokens, row.outputTokens, options.lengthScale, limits);
        p.inputTokens = len.input;
        p.maxNewTokens = len.output;
        plan.lengths.add(len);
        if (!hashIds.empty()) {
            p.blocks = std::move(hashIds[skip + i]);
            p.blockTokens = plan.blockTokens;
        }
        p.conversation = row.conversation;
        p.turn = row.turn;
        p.think = fromSeconds(row.thinkS / options.speed);
        if (row.conversation != 0) {
            auto [it, first] = lastTurn.try_emplace(row.conversation, i);
            if (!first) {
                p.previous = std::ptrdiff_t(it->second);
                plan.requests[it->second].next = std::ptrdiff_t(i);
                it->second = i;
            }
        }
    }
    return plan;
}

SessionStart replaySessionStart(const ReplayOptions &options, const ReplayPlan &plan)
{
    SessionStart start;
    start.kind = "replay";
    start.notes = options.notes;
    (plan.fromSession ? start.sourceSessionId : start.sourceTraceId) = options.source.id;
    start.replay = {{"source", {{"kind", plan.fromSession ? "session" : "trace"}, {"id", options.source.id}}},
                    {"speed", options.speed},
                    {"length_scale", options.lengthScale},
                    {"limit", options.limit},
                    {"skip", options.skip},
                    {"clock", replayClockName(options.clock)},
                    {"clamp_to_model", options.clampToModel},
                    {"requests", plan.requests.size()},
                    {"block_tokens", plan.blockTokens},
                    {"config", toJson(plan.config)}};
    return start;
}

} // namespace bp
