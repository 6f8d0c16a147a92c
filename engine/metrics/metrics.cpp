#include "metrics.h"

#include <algorithm>

namespace bp {

LatencySummary summarize(const LatencyHistogram &h)
{
    LatencySummary s;
    s.count = h.count();
    s.meanUs = h.mean() / 1e3;
    s.p50Us = double(h.quantile(0.50)) / 1e3;
    s.p90Us = double(h.quantile(0.90)) / 1e3;
    s.p99Us = double(h.quantile(0.99)) / 1e3;
    s.p999Us = double(h.quantile(0.999)) / 1e3;
    s.maxUs = double(h.max()) / 1e3;
    return s;
}

MetricsRecorder::MetricsRecorder(TimePoint start)
    : m_start(start), m_slots(std::make_unique<std::array<Slot, kSlots>>()), m_batchSizes(1025, 0)
{
    m_recent.reserve(kRecentBatches);
}

MetricsRecorder::Slot &MetricsRecorder::slotFor(TimePoint t)
{
    const std::int64_t epoch = std::max<std::int64_t>(0, epochOf(t));
    Slot &slot = (*m_slots)[std::size_t(epoch % kSlots)];
    if (slot.epoch != epoch)
        slot.reset(epoch);
    return slot;
}

void MetricsRecorder::Slot::reset(std::int64_t e)
{
    static_cast<SlotCounts &>(*this) = SlotCounts{};
    epoch = e;
    for (LatencyHistogram *h : {&total, &queueWait, &compute, &ttft, &tpot, &itl})
        h->clear();
}

void MetricsRecorder::setGoodputSlo(const GoodputConfig &slo)
{
    MutexLock lock(m_mutex);
    m_goodputSlo = slo;
}

void MetricsRecorder::recordGeneration(const RequestRecord &r, Slot &slot)
{
    if (r.outputTokens > 0 && r.timeToFirstToken > Duration::zero()) {
        m_ttft.record(r.timeToFirstToken.count());
        slot.ttft.record(r.timeToFirstToken.count());
    }
    if (r.outputTokens > 1 && r.timePerOutputToken > Duration::zero()) {
        m_tpot.record(r.timePerOutputToken.count());
        slot.tpot.record(r.timePerOutputToken.count());
    }
    // Request-level records repeat one value n - 1 times: count them at once.
    for (std::size_t i = 0; i < r.interTokenLatencies.size();) {
        std::size_t j = i + 1;
        while (j < r.interTokenLatencies.size() && r.interTokenLatencies[j] == r.interTokenLatencies[i])
            ++j;
        m_itl.record(r.interTokenLatencies[i].count(), j - i);
        slot.itl.record(r.interTokenLatencies[i].count(), j - i);
        i = j;
    }
    if (m_goodputSlo.met(r.timeToFirstToken, r.timePerOutputToken, r.total)) {
        ++m_good;
        ++slot.good;
    }
}

void MetricsRecorder::recordAccepted()
{
    MutexLock lock(m_mutex);
    ++m_submitted;
}

void MetricsRecorder::recordFailure(StatusCode code)
{
    MutexLock lock(m_mutex);
    ++m_byStatus[std::size_t(code)];
}

void MetricsRecorder::resetQueues()
{
    MutexLock lock(m_mutex);
    m_queues.clear();
}

void MetricsRecorder::recordCacheHit(const RequestRecord &r, TimePoint now)
{
    MutexLock lock(m_mutex);
    Slot &slot = slotFor(now);
    ++m_byStatus[std::size_t(StatusCode::Ok)];
    ++m_cacheHits;
    m_total.record(r.total.count());
    slot.total.record(r.total.count());
    // The whole answer arrives at once: a cache hit's first token comes at
    // its end-to-end time (for goodput; it adds nothing to TTFT figures).
    const Duration firstToken = r.outputTokens > 0 ? r.total : Duration::zero();
    if (m_goodputSlo.met(firstToken, Duration::zero(), r.total)) {
        ++m_good;
        ++slot.good;
    }
    ++slot.requests;
    slot.inputTokens += std::uint64_t(r.inputTokens);
    slot.outputTokens += std::uint64_t(r.outputTokens);
    m_inputTokens += std::uint64_t(r.inputTokens);
    m_outputTokens += std::uint64_t(r.outputTokens);
}

void MetricsRecorder::fillQueues(Snapshot &out, const BatchingConfig &config) const
{
    MutexLock lock(m_mutex);
    out.queues.clear();
    for (std::size_t i = 0; i < out.queueDepths.size(); ++i) {
        QueueSummary q;
        q.name = config.queueName(int(i));
        q.depth = out.queueDepths[i];
        if (i < m_queues.size()) {
            const QueueStats &s = m_queues[i];
            q.requests = s.requests;
            q.batches = s.batches;
            q.meanBatchSize = s.batches ? double(s.members) / double(s.batches) : 0.0;
            q.paddingEfficiency = s.paddedTokens ? double(s.realTokens) / double(s.paddedTokens) : 1.0;
            q.p50Us = double(s.total.quantile(0.5)) / 1e3;
            q.p99Us = double(s.total.quantile(0.99)) / 1e3;
        }
        out.queues.push_back(std::move(q));
    }
}

void MetricsRecorder::recordBatch(const BatchRecord &batch, std::span<const RequestRecord> requests,
                                  TimePoint now)
{
    MutexLock lock(m_mutex);
    Slot &slot = slotFor(now);
    if (batch.bucket >= 0 && batch.bucket < 64) {
        if (m_queues.size() <= std::size_t(batch.bucket))
            m_queues.resize(std::size_t(batch.bucket) + 1);
        QueueStats &q = m_queues[std::size_t(batch.bucket)];
        ++q.batches;
        q.members += std::uint64_t(batch.size);
        q.realTokens += batch.realTokens;
        q.paddedTokens += batch.paddedTokens;
        for (const RequestRecord &r : requests)
            if (r.status == StatusCode::Ok) {
                ++q.requests;
                q.total.record(r.total.count());
            }
    }
    for (const RequestRecord &r : requests) {
        ++m_byStatus[std::size_t(r.status)];
        if (r.status != StatusCode::Ok)
            continue;
        m_total.record(r.total.count());
        m_queueWait.record(r.queueWait.count());
        m_compute.record(r.compute.count());
        slot.total.record(r.total.count());
        slot.queueWait.record(r.queueWait.count());
        slot.compute.record(r.compute.count());
        recordGeneration(r, slot);
        ++slot.requests;
        slot.inputTokens += std::uint64_t(r.inputTokens);
        slot.outputTokens += std::uint64_t(r.outputTokens);
        m_inputTokens += std::uint64_t(r.inputTokens);
        m_outputTokens += std::uint64_t(r.outputTokens);
    }
    if (batch.policy == PolicyKind::Continuous) { // a generation step
        const auto tokens = std::uint64_t(std::max(0, batch.prefillTokens + batch.decodeTokens));
        ++m_steps;
        ++slot.steps;
        m_stepTokens += tokens;
        slot.stepTokens += tokens;
        m_preemptions += std::uint64_t(std::max(0, batch.preempted));
        const auto queries = std::uint64_t(std::max<std::int64_t>(0, batch.prefixQueryTokens));
        const auto hits = std::uint64_t(std::max<std::int64_t>(0, batch.prefixHitTokens));
        m_prefixQueries += queries;
        m_prefixHits += hits;
        slot.prefixQueries += queries;
        slot.prefixHits += hits;
    }
    ++m_batches;
    m_batchMembers += std::uint64_t(batch.size);
    ++slot.batches;
    slot.batchMembers += std::uint64_t(batch.size);
    m_realTokens += batch.realTokens;
    m_paddedTokens += batch.paddedTokens;
    slot.realTokens += batch.realTokens;
    slot.paddedTokens += batch.paddedTokens;
    m_batchSizes[std::size_t(std::clamp(batch.size, 0, 1024))]++;
    if (batch.executor >= 0 && batch.executor < kMaxExecutors) {
        slot.busyNs[std::size_t(batch.executor)] += batch.compute.count();
        m_instancesSeen = std::max(m_instancesSeen, batch.executor + 1);
    }
    if (m_recent.size() < kRecentBatches) {
        m_recent.push_back(batch);
    } else {
        m_recent[m_recentNext] = batch;
        m_recentNext = (m_recentNext + 1) % kRecentBatches;
    }
}

void MetricsRecorder::fill(Snapshot &out, TimePoint now) const
{
    MutexLock lock(m_mutex);
    out.uptimeS = toSeconds(now - m_start);
    out.submitted = m_submitted;
    out.byStatus = m_byStatus;
    out.completed = m_byStatus[std::size_t(StatusCode::Ok)];
    out.cacheHits = m_cacheHits;
    out.batches = m_batches;
    out.inputTokens = m_inputTokens;
    out.outputTokens = m_outputTokens;

    // window: every slot whose epoch lies in (current - kSlots, current]
    const std::int64_t current = epochOf(now);
    LatencyHistogram total, queueWait, compute, ttft, tpot, itl;
    std::uint64_t requests = 0, inTok = 0, outTok = 0, batches = 0, members = 0;
    std::uint64_t good = 0, steps = 0, stepTokens = 0, prefixQueries = 0, prefixHits = 0;
    std::int64_t real = 0, padded = 0;
    std::array<std::int64_t, kMaxExecutors> busy{};
    for (const Slot &s : *m_slots) {
        if (s.epoch < 0 || s.epoch > current || s.epoch <= current - kSlots)
            continue;
        total.merge(s.total);
        queueWait.merge(s.queueWait);
        compute.merge(s.compute);
        ttft.merge(s.ttft);
        tpot.merge(s.tpot);
        itl.merge(s.itl);
        good += s.good;
        steps += s.steps;
        stepTokens += s.stepTokens;
        prefixQueries += s.prefixQueries;
        prefixHits += s.prefixHits;
        requests += s.requests;
        inTok += s.inputTokens;
        outTok += s.outputTokens;
        batches += s.batches;
        members += s.batchMembers;
        real += s.realTokens;
        padded += s.paddedTokens;
        for (int i = 0; i < kMaxExecutors; ++i)
            busy[std::size_t(i)] += s.busyNs[std::size_t(i)];
    }
    // The window spans the full slots before the current one plus the elapsed
    // part of the current one, and never more than the uptime.
    const Duration sinceSlotStart = (now - m_start) - kSlot * std::max<std::int64_t>(0, current);
    Duration span = std::min<Duration>(kSlot * (kSlots - 1) + sinceSlotStart, now - m_start);
    const double spanS = std::max(1e-3, toSeconds(span));
    out.windowS = spanS;
    out.requestsPerS = double(requests) / spanS;
    out.inputTokensPerS = double(inTok) / spanS;
    out.outputTokensPerS = double(outTok) / spanS;
    out.total = summarize(total);
    out.queueWait = summarize(queueWait);
    out.compute = summarize(compute);
    out.timeToFirstToken = summarize(ttft);
    out.timePerOutputToken = summarize(tpot);
    out.interTokenLatency = summarize(itl);
    out.goodputPerS = double(good) / spanS;
    out.tokensPerStep = steps ? double(stepTokens) / double(steps) : 0.0;
    out.prefixCacheHitRate = prefixQueries ? double(prefixHits) / double(prefixQueries) : 0.0;
    out.meanBatchSize = batches ? double(members) / double(batches) : 0.0;
    out.paddingEfficiency = padded ? double(real) / double(padded) : 1.0;
    const int instances = std::max(1, m_instancesSeen);
    out.instanceBusy.assign(std::size_t(instances), 0.0);
    double busySum = 0;
    for (int i = 0; i < instances; ++i) {
        const double f =
            std::min(1.0, double(busy[std::size_t(i)]) / double(span.count() ? span.count() : 1));
        out.instanceBusy[std::size_t(i)] = f;
        busySum += f;
    }
    out.busyFraction = busySum / instances;

    out.totalAll = summarize(m_total);
    out.queueWaitAll = summarize(m_queueWait);
    out.computeAll = summarize(m_compute);
    out.timeToFirstTokenAll = summarize(m_ttft);
    out.timePerOutputTokenAll = summarize(m_tpot);
    out.interTokenLatencyAll = summarize(m_itl);
    out.ttftHist = m_ttft;
    out.tpotHist = m_tpot;
    out.itlHist = m_itl;
    out.goodCompleted = m_good;
    out.steps = m_steps;
    out.stepTokens = m_stepTokens;
    out.preemptions = m_preemptions;
    out.prefixCacheQueriesTokens = m_prefixQueries;
    out.prefixCacheHitsTokens = m_prefixHits;
    out.prefixCacheHitRateAll = m_prefixQueries ? double(m_prefixHits) / double(m_prefixQueries) : 0.0;
    out.totalHist = m_total;
    out.queueWaitHist = m_queueWait;
    out.computeHist = m_compute;
    out.paddingEfficiencyAll = m_paddedTokens ? double(m_realTokens) / double(m_paddedTokens) : 1.0;
    out.meanBatchSizeAll = m_batches ? double(m_batchMembers) / double(m_batches) : 0.0;
    out.batchSizeCounts = m_batchSizes;

    out.recentBatches.clear();
    out.recentBatches.reserve(m_recent.size());
    for (std::size_t i = 0; i < m_recent.size(); ++i)
        out.recentBatches.push_back(m_recent[(m_recentNext + i) % m_recent.size()]);
}

} // namespace bp
