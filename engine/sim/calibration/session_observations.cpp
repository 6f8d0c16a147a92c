#include "engine/sim/calibration/calibration.h"

#include "engine/sim/calibration/statistics.h"

#include "engine/store/trace_store.h"

#include <algorithm>
#include <map>
#include <optional>

namespace bp {

namespace {

// Members of a batch row: their output tokens (the decoder's wants) and the
// hand-off (total − queue wait − compute: dispatch to start).
struct Members {
    std::vector<int> wants;
    Duration handoff{};
};

// Each batch row's members. Batch ids are unique in a session now; sessions
// recorded by older versions repeat them after a switch of policy kind. A
// request is joined to the request-level row of its id that was dispatched
// when it left the queue (arrival + queue wait = dispatch, exactly), and by
// id alone only where the id names one row. A step's members are not used.
std::vector<Members> membersOf(const std::vector<StoredBatch> &batches,
                               const std::vector<StoredRequest> &requests)
{
    std::vector<Members> members(batches.size());
    std::map<std::uint64_t, std::vector<std::size_t>> rowsById;
    for (std::size_t i = 0; i < batches.size(); ++i)
        rowsById[batches[i].batchId].push_back(i);
    for (const StoredRequest &r : requests) {
        const auto rows = rowsById.find(r.batchId);
        if (r.batchId == 0 || rows == rowsById.end())
            continue;
        std::optional<std::size_t> row;
        for (std::size_t i : rows->second)
            if (batches[i].policy != PolicyKind::Continuous &&
                batches[i].dispatched == r.arrival + r.queueWait)
                row = i;
        if (!row && rows->second.size() == 1)
            row = rows->second.front();
        if (!row)
            continue;
        Members &m = members[*row];
        m.wants.push_back(r.outputTokens);
        m.handoff = r.total - r.queueWait - r.compute;
    }
    return members;
}

// Step rows (policy continuous) record their items and the tokens fed
// (prompt chunks and decodes apart, schema 6), not the context each attends
// to: the decodes are charged the session's mean decode context (over the
// completed requests' generated tokens), and the prompt chunks of a step are
// taken as equal and attending only to themselves. A row without the split
// (older sessions) is taken as one prompt chunk (its tokens beyond the
// decodes) beside n − 1 decodes when it fed more than one token to an item.
//
// Prefix caching: a request's cached prompt tokens skipped prefill (the step
// rows count only the tokens fed), but its first prompt chunk attends to
// them. That chunk ran in the step dispatched when it first joined (arrival
// + queue wait, exactly): its row's chunks attend to their mean share of the
// cached tokens of the requests that joined then.
class StepShapes {
public:
    explicit StepShapes(const std::vector<StoredRequest> &requests)
    {
        double contextSum = 0, decodeTokens = 0;
        for (const StoredRequest &r : requests)
            if (r.status == StatusCode::Ok && r.outputTokens > 0) {
                contextSum += r.outputTokens * (r.inputTokens + (r.outputTokens + 1) / 2.0);
                decodeTokens += r.outputTokens;
            }
        m_meanContext = decodeTokens > 0 ? contextSum / decodeTokens : 0;
        for (const StoredRequest &r : requests)
            if (r.cachedTokens > 0)
                m_cachedAtJoin[r.arrival + r.queueWait] += r.cachedTokens;
    }

    // A step row's shape; each dispatch time's cached tokens go to the first step asked for at it.
    StepShape of(const StoredBatch &b)
    {
        StepShape shape;
        if (b.decodeTokens + b.prefillTokens > 0) {
            shape.decodes = b.decodeTokens;
            shape.prefills = std::max(0, b.size - b.decodeTokens);
            shape.prefillTokens = b.prefillTokens;
            if (shape.prefills > 0) {
                shape.prefillAttention = shape.prefillTokens * shape.prefillTokens / shape.prefills;
                if (const auto c = m_cachedAtJoin.find(b.dispatched); c != m_cachedAtJoin.end()) {
                    shape.prefillAttention += shape.prefillTokens * c->second / shape.prefills;
                    m_cachedAtJoin.erase(c); // one step per dispatch time
                }
            }
        } else {
            shape.decodes = b.paddedLength > 1 ? b.size - 1 : b.size;
            if (b.paddedLength > 1) {
                shape.prefills = 1;
                shape.prefillTokens = std::max<std::int64_t>(1, b.realTokens - shape.decodes);
                shape.prefillAttention = shape.prefillTokens * shape.prefillTokens;
            }
        }
        shape.decodeContext = std::int64_t(std::llround(shape.decodes * m_meanContext));
        return shape;
    }

private:
    double m_meanContext = 0;
    std::map<Duration, std::int64_t> m_cachedAtJoin;
};

// Which batches overlapped another one (several executors): sorted by
// start, a batch overlaps when an earlier one ends after its start or the
// next one starts before its end.
std::vector<bool> overlappedBatches(const std::vector<StoredBatch> &batches,
                                    const std::vector<Members> &members)
{
    std::vector<std::pair<Duration, Duration>> spans; // start, end
    std::vector<std::size_t> order;
    for (std::size_t index = 0; index < batches.size(); ++index) {
        const StoredBatch &b = batches[index];
        const Duration start = b.dispatched + members[index].handoff;
        spans.push_back({start, start + b.compute});
        order.push_back(order.size());
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return spans[a] < spans[b]; });
    std::vector<bool> overlapped(spans.size(), false);
    Duration reach = Duration::min();
    for (std::size_t k = 0; k < order.size(); ++k) {
        const auto &[start, end] = spans[order[k]];
        if (reach > start || (k + 1 < order.size() && spans[order[k + 1]].first < end))
            overlapped[order[k]] = true;
        reach = std::max(reach, end);
    }
    return overlapped;
}

} // namespace

Result<SessionObservations> sessionObservations(const TraceStore &store, std::int64_t sessionId,
                                                bool generative)
{
    auto batches = store.batches(sessionId);
    if (!batches)
        return batches.status();
    auto requests = store.requests(sessionId);
    if (!requests)
        return requests.status();
    const std::vector<Members> members = membersOf(*batches, *requests);
    StepShapes shapes(*requests);
    const std::vector<bool> overlapped = overlappedBatches(*batches, members);

    SessionObservations out;
    std::vector<double> handoffs, gaps, stepGaps;
    std::map<int, std::size_t> lastOnExecutor; // executor -> its last batch row
    for (std::size_t index = 0; index < batches->size(); ++index) {
        const StoredBatch &b = (*batches)[index];
        if (b.status != StatusCode::Ok || b.compute <= Duration::zero())
            continue;
        const Members &m = members[index];
        const bool step = b.policy == PolicyKind::Continuous;
        if (overlapped[index])
            ++out.overlapped;
        else if (step)
            out.batches.push_back({CostObservation::Kind::Iteration, CostModel::iterationTerms(shapes.of(b)),
                                   toSeconds(b.compute)});
        else
            out.batches.push_back({CostObservation::Kind::Batch,
                                   CostModel::batchTerms(generative, b.size, b.paddedLength, m.wants),
                                   toSeconds(b.compute)});
        if (!step)
            handoffs.push_back(toSeconds(m.handoff));
        const auto it = lastOnExecutor.find(b.executor);
        // Lateness: a batch due while its executor was idle (nothing ran on
        // it, or its previous batch had ended) waited only for a wake-up.
        if (!step && b.dispatched >= b.intended &&
            (it == lastOnExecutor.end() || (*batches)[it->second].dispatched + members[it->second].handoff +
                                                   (*batches)[it->second].compute <
                                               b.intended))
            out.lateness.push_back(toSeconds(b.dispatched - b.intended));
        if (it != lastOnExecutor.end()) {
            const StoredBatch &prev = (*batches)[it->second];
            const Duration prevEnd = prev.dispatched + members[it->second].handoff + prev.compute;
            if (step && prev.policy == PolicyKind::Continuous) {
                // A step with decodes follows one whose sequences were still
                // running when it ended: the gap is the serving path's.
                if (b.decodeTokens > 0 && b.dispatched >= prevEnd)
                    stepGaps.push_back(toSeconds(b.dispatched - prevEnd));
            } else if (!step && b.intended <= prevEnd && b.dispatched >= prevEnd) {
                // A batch that was ready before its executor's previous
                // batch ended waited only for the executor: the gap between
                // that end and its dispatch is the serving path's per-batch
                // cost.
                gaps.push_back(toSeconds(b.dispatched - prevEnd));
            }
        }
        lastOnExecutor[b.executor] = index;
    }
    if (!handoffs.empty()) {
        out.overheadS = std::max(0.0, median(handoffs)) + median(gaps);
        out.overheadSamples = handoffs.size();
    }
    out.stepOverheadS = median(stepGaps);
    out.stepOverheadSamples = stepGaps.size();
    return out;
}

} // namespace bp
