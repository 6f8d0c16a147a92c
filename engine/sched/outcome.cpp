#include "outcome.h"

#include <algorithm>

namespace bp {

std::vector<Duration> interTokenGaps(const Timing &timing, std::size_t tokens)
{
    if (tokens < 2)
        return {};
    if (timing.interTokenLatencies.size() == tokens - 1)
        return timing.interTokenLatencies;
    // Only the first and last token times are known: every gap is the mean.
    if (timing.timePerOutputToken <= Duration::zero())
        return {};
    return std::vector<Duration>(tokens - 1, timing.timePerOutputToken);
}

RequestRecord requestRecordOf(const Request &r)
{
    RequestRecord rec;
    rec.id = r.id;
    rec.arrival = r.arrival;
    rec.inputTokens = int(r.tokens.size());
    rec.priority = r.priority;
    rec.conversation = r.conversation;
    rec.turn = r.turn;
    return rec;
}

BatchRecord batchRecordOf(const Batch &batch, const UnitRun &run)
{
    const std::size_t n = batch.items.size();
    std::int64_t realTokens = 0;
    for (const Pending &p : batch.items)
        realTokens += std::int64_t(p.request.tokens.size());
    BatchRecord br;
    br.id = batch.id;
    br.dispatchedAt = batch.dispatchedAt;
    br.intendedAt = batch.intendedAt;
    br.startedAt = run.start;
    br.size = int(n);
    br.paddedLength = batch.paddedLength;
    br.realTokens = realTokens;
    br.paddedTokens = std::int64_t(n) * batch.paddedLength;
    br.compute = run.end - run.start;
    br.reason = batch.reason;
    br.policy = batch.policy;
    br.bucket = batch.bucket;
    br.executor = run.executor;
    br.configVersion = batch.configVersion;
    br.status = run.guard.status.code();
    br.oomSplits = run.guard.splits;
    return br;
}

void batchResponses(const Batch &batch, UnitRun &run, std::vector<Response> &responses)
{
    const std::size_t n = batch.items.size();
    const Duration compute = run.end - run.start;
    const Status &batchStatus = run.guard.status;
    run.results.resize(n);
    responses.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const Request &req = batch.items[i].request;
        SequenceResult &res = run.results[i];
        Response &r = responses[i];
        r.requestId = req.id;
        r.status = batchStatus.isOk() ? res.status : batchStatus;
        r.values = std::move(res.values);
        r.tokens = std::move(res.tokens);
        r.timing.queueWait = batch.dispatchedAt - req.arrival;
        r.timing.compute = compute;
        r.timing.total = run.end - req.arrival;
        r.timing.intendedWait = std::max(Duration::zero(), batch.intendedAt - req.arrival);
        if (!r.tokens.empty() && res.firstTokenAfter > Duration::zero())
            r.timing.timeToFirstToken = (run.start - req.arrival) + res.firstTokenAfter;
        r.timing.timePerOutputToken =
            timePerOutputToken(res.firstTokenAfter, res.lastTokenAfter, r.tokens.size());
        r.batch = {batch.id, int(n), batch.paddedLength, batch.bucket, batch.reason};
    }
}

void batchDone(Batch &batch, UnitRun &run, UnitDone &done)
{
    done.record = batchRecordOf(batch, run);
    batchResponses(batch, run, done.responses);
    done.done = std::move(batch.items);
    batch.items.clear();
}

Response failedResponse(const Request &request, const Status &status, TimePoint now)
{
    Response r;
    r.requestId = request.id;
    r.status = status;
    r.timing.total = now - request.arrival;
    r.timing.queueWait = r.timing.total;
    return r;
}

RequestRecord failedRecord(const Request &request, StatusCode code, TimePoint now, int bucket)
{
    RequestRecord rec = requestRecordOf(request);
    rec.status = code;
    rec.total = rec.queueWait = now - request.arrival;
    rec.bucket = bucket;
    return rec;
}

void answeredOutcome(const Request &request, TimePoint now, Response &r, RequestRecord &rec)
{
    r.requestId = request.id;
    r.cacheHit = true;
    r.timing.total = now - request.arrival;
    r.batch.reason = DispatchReason::CacheHit;
    rec = requestRecordOf(request);
    rec.total = r.timing.total;
    rec.outputTokens = int(r.tokens.size());
    rec.cacheHit = true;
}

BatchRecord stepRecordOf(const StepWork &step, const UnitRun &run)
{
    BatchRecord br;
    br.id = step.id;
    br.dispatchedAt = step.dispatchedAt;
    br.intendedAt = step.dispatchedAt;
    br.startedAt = run.start;
    br.size = int(step.items.size());
    for (const StepItem &item : step.items)
        br.paddedLength = std::max(br.paddedLength, int(item.tokens.size()));
    br.realTokens = br.paddedTokens = std::int64_t(step.prefillTokens) + step.decodeTokens;
    br.compute = run.end - run.start;
    br.reason = DispatchReason::Single;
    br.policy = PolicyKind::Continuous;
    br.executor = run.executor;
    br.configVersion = step.configVersion;
    br.status = run.guard.status.code();
    br.prefillTokens = step.prefillTokens;
    br.decodeTokens = step.decodeTokens;
    br.joined = step.joined;
    br.running = step.runningAfter;
    br.waiting = step.waitingAfter;
    br.kvTokens = step.kvTokensAfter;
    br.preempted = step.preempted;
    br.prefixQueryTokens = step.prefixQueryTokens;
    br.prefixHitTokens = step.prefixHitTokens;
    return br;
}

RequestRecord completedRecord(const Request &request, const Response &r, std::uint64_t batchId)
{
    RequestRecord rec = requestRecordOf(request);
    rec.queueWait = r.timing.queueWait;
    rec.compute = r.timing.compute;
    rec.total = r.timing.total;
    rec.timeToFirstToken = r.timing.timeToFirstToken;
    rec.timePerOutputToken = r.timing.timePerOutputToken;
    rec.interTokenLatencies = interTokenGaps(r.timing, r.tokens.size());
    rec.outputTokens = int(r.tokens.size());
    rec.bucket = r.batch.bucket;
    rec.batchId = batchId;
    rec.status = r.status.code();
    rec.cachedTokens = r.cachedTokens;
    return rec;
}

} // namespace bp
