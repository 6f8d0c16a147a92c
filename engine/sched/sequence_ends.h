// What an iteration-level sequence leaves when it ends: its response (the
// one definition of its timing), or its pending request handed back.
// Shared by ContinuousScheduler and the server models' StepBooks, whose
// sequences keep the same fields.
#pragma once

#include "engine/core/request.h"
#include "engine/sched/work_unit.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace bp {

// `s` has pending.request, generated, joined, firstJoin, firstToken,
// lastToken and gaps; its generated tokens and gaps are moved out.
template <class Sequence> Response sequenceResponse(Sequence &s, Status status, TimePoint now)
{
    const Request &req = s.pending.request;
    Response r;
    r.requestId = req.id;
    r.status = std::move(status);
    if (r.status.isOk())
        r.tokens = std::move(s.generated);
    r.timing.total = now - req.arrival;
    r.timing.queueWait = s.joined ? s.firstJoin - req.arrival : r.timing.total;
    r.timing.compute = s.joined ? now - s.firstJoin : Duration::zero();
    const std::size_t n = r.status.isOk() ? r.tokens.size() : s.generated.size();
    if (n > 0)
        r.timing.timeToFirstToken = s.firstToken - req.arrival;
    if (n > 1) {
        r.timing.timePerOutputToken =
            timePerOutputToken(s.firstToken - req.arrival, s.lastToken - req.arrival, n);
        r.timing.interTokenLatencies = std::move(s.gaps);
    }
    r.batch.reason = DispatchReason::Single;
    return r;
}

// The sequences' pending requests in submission order (takeAll()).
template <class SequencePtr> std::vector<Pending> pendingInOrder(std::vector<SequencePtr> all)
{
    std::sort(all.begin(), all.end(),
              [](const SequencePtr &a, const SequencePtr &b) { return a->pending.seq < b->pending.seq; });
    std::vector<Pending> out;
    out.reserve(all.size());
    for (SequencePtr &s : all)
        out.push_back(std::move(s->pending));
    return out;
}

} // namespace bp
