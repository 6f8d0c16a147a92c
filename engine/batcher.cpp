#include "batcher.h"

#include <algorithm>

namespace bp {

Batcher::Batcher(BatchingConfig config, ModelLimits limits)
    : m_config(std::move(config)), m_limits(limits), m_queues(std::size_t(m_config.queueCount()))
{
}

Status Batcher::check(const Request &r, TimePoint now) const
{
    if (r.tokens.empty())
        return {StatusCode::InvalidArgument, "input is empty: at least one token is required"};
    const int len = int(r.tokens.size());
    if (len > m_limits.maxSequenceLength)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; the model accepts at most " +
                                            std::to_string(m_limits.maxSequenceLength)};
    if (m_config.policy == PolicyKind::Static && len > m_config.staticPaddedLength)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; the static policy pads to " +
                                            std::to_string(m_config.staticPaddedLength)};
    for (std::size_t i = 0; i < r.tokens.size(); ++i) {
        const TokenId t = r.tokens[i];
        if (t < 0 || t >= m_limits.vocabSize)
            return {StatusCode::OutOfRange, "token id " + std::to_string(t) + " at position " +
                                                std::to_string(i) + " is outside the vocabulary [0, " +
                                                std::to_string(m_limits.vocabSize) + ")"};
    }
    if (r.maxNewTokens < 0)
        return {StatusCode::InvalidArgument, "max_new_tokens must not be negative"};
    if (r.deadline && *r.deadline <= now)
        return {StatusCode::DeadlineExceeded, "deadline already passed at submission"};
    return Status::ok();
}

Status Batcher::admit(Pending &pending, TimePoint now)
{
    m_lastAdmitNeedsWake = false;
    if (Status s = check(pending.request, now); !s)
        return s;
    if (m_size >= std::size_t(m_config.queueCapacity))
        return {StatusCode::QueueFull, "admission queue is full (" +
                                           std::to_string(m_config.queueCapacity) + " requests)"};
    const int q = m_config.bucketFor(int(pending.request.tokens.size()));
    auto &queue = m_queues[std::size_t(q)];
    const auto &deadline = pending.request.deadline;
    if (deadline) {
        ++m_withDeadline;
        if (!m_earliestDeadline || *deadline < *m_earliestDeadline) {
            m_earliestDeadline = *deadline;
            m_lastAdmitNeedsWake = true;
        }
    }
    queue.push_back(std::move(pending));
    ++m_size;
    const std::size_t fill = m_config.policy == PolicyKind::Static ? std::size_t(m_config.staticBatchSize)
                                                                   : std::size_t(m_config.maxBatchSize);
    if (queue.size() == 1 || queue.size() == fill || m_config.policy == PolicyKind::None)
        m_lastAdmitNeedsWake = true;
    return Status::ok();
}

void Batcher::expire(TimePoint now, std::vector<Pending> &out)
{
    if (m_withDeadline == 0 || !m_earliestDeadline || now < *m_earliestDeadline)
        return;
    m_earliestDeadline.reset();
    for (auto &queue : m_queues) {
        for (auto it = queue.begin(); it != queue.end();) {
            const auto &d = it->request.deadline;
            if (d && *d <= now) {
                out.push_back(std::move(*it));
                it = queue.erase(it);
                --m_size;
                --m_withDeadline;
                continue;
            }
            if (d && (!m_earliestDeadline || *d < *m_earliestDeadline))
                m_earliestDeadline = *d;
            ++it;
        }
    }
}

Batcher::Poll Batcher::poll(TimePoint now, bool draining, bool mayDispatch)
{
    Poll result;
    expire(now, result.expired);
    if (!mayDispatch) {
        result.wakeAt = m_earliestDeadline;
        return result;
    }

    std::vector<QueueView> views(m_queues.size());
    for (std::size_t i = 0; i < m_queues.size(); ++i) {
        views[i].size = m_queues[i].size();
        if (!m_queues[i].empty())
            views[i].oldestArrival = m_queues[i].front().request.arrival;
    }
    Decision d = decide(views, m_config, now, draining);
    if (!d.dispatch) {
        result.wakeAt = d.wakeAt;
        if (m_earliestDeadline && (!result.wakeAt || *m_earliestDeadline < *result.wakeAt))
            result.wakeAt = m_earliestDeadline;
        return result;
    }

    auto &queue = m_queues[std::size_t(d.dispatch->queue)];
    const auto count = std::min<std::size_t>(std::size_t(d.dispatch->count), queue.size());
    Batch batch;
    batch.id = m_nextBatchId++;
    batch.bucket = d.dispatch->queue;
    batch.reason = d.dispatch->reason;
    batch.policy = m_config.policy;
    batch.dispatchedAt = now;
    batch.configVersion = m_configVersion;
    batch.items.reserve(count);
    TimePoint lastArrival{};
    int longest = 0;
    for (std::size_t i = 0; i < count; ++i) {
        Pending &p = queue.front();
        lastArrival = std::max(lastArrival, p.request.arrival);
        longest = std::max(longest, int(p.request.tokens.size()));
        if (p.request.deadline)
            --m_withDeadline;
        batch.items.push_back(std::move(p));
        queue.pop_front();
    }
    m_size -= count;
    batch.intendedAt = d.dispatch->intendedAt.value_or(lastArrival);
    if (batch.reason == DispatchReason::Drain)
        batch.intendedAt = now;
    batch.paddedLength = m_config.policy == PolicyKind::Static
                             ? std::max(m_config.staticPaddedLength, longest)
                             : longest;
    result.batch = std::move(batch);
    return result;
}

void Batcher::reconfigure(const BatchingConfig &config, std::uint64_t version)
{
    const BatchingConfig old = m_config;
    m_config = config;
    m_configVersion = version;
    if (old.queueCount() == config.queueCount() && old.bucketEdges == config.bucketEdges &&
        old.policy == config.policy)
        return;
    // Re-bucket: merge all queues back into arrival order, then redistribute.
    std::vector<Pending> all = takeAll();
    std::stable_sort(all.begin(), all.end(), [](const Pending &a, const Pending &b) {
        return a.request.arrival < b.request.arrival;
    });
    m_queues.clear();
    m_queues.resize(std::size_t(m_config.queueCount()));
    for (Pending &p : all) {
        m_queues[std::size_t(m_config.bucketFor(int(p.request.tokens.size())))].push_back(std::move(p));
        ++m_size;
    }
    for (const auto &q : m_queues)
        for (const Pending &p : q)
            if (p.request.deadline) {
                ++m_withDeadline;
                if (!m_earliestDeadline || *p.request.deadline < *m_earliestDeadline)
                    m_earliestDeadline = p.request.deadline;
            }
}

std::vector<Pending> Batcher::takeAll()
{
    std::vector<Pending> out;
    out.reserve(m_size);
    for (auto &queue : m_queues) {
        for (Pending &p : queue)
            out.push_back(std::move(p));
        queue.clear();
    }
    m_size = 0;
    m_withDeadline = 0;
    m_earliestDeadline.reset();
    return out;
}

std::vector<std::size_t> Batcher::depths() const
{
    std::vector<std::size_t> d;
    d.reserve(m_queues.size());
    for (const auto &q : m_queues)
        d.push_back(q.size());
    return d;
}

} // namespace bp
