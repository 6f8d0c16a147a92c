#include "row_writer.h"

#include "schema.h"

#include "engine/config/config_json.h"

#include <sqlite3.h>

#include <algorithm>

namespace bp::store {

namespace {
constexpr int kRequestColumns = 21;
constexpr int kRequestChunk = 32;
constexpr const char *kInsertRequestHead =
    "INSERT INTO requests (session_id, request_id, arrival_ns, queue_wait_ns, compute_ns, total_ns, ttft_ns, "
    "input_tokens, output_tokens, bucket, batch_id, status, source, tpot_ns, itl_p50_ns, itl_max_ns, "
    "replica, router_wait_ns, conversation_id, turn, cached_tokens) VALUES ";

std::string insertRequests(int rows)
{
    std::string one = "(?";
    for (int c = 1; c < kRequestColumns; ++c)
        one += ",?";
    one += ")";
    std::string sql = kInsertRequestHead;
    for (int r = 0; r < rows; ++r)
        sql += (r ? "," : "") + one;
    return sql;
}
constexpr const char *kInsertBatch =
    "INSERT INTO batches (session_id, batch_id, dispatched_ns, intended_ns, size, padded_length, "
    "real_tokens, "
    "padded_tokens, compute_ns, reason, policy, bucket, executor, config_version, status, prefill_tokens, "
    "decode_tokens, joined, running, waiting, kv_tokens, preempted, replica) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

// The median and the largest of a request's inter-token gaps (0 without
// gaps). Nearest-rank median, as the session summary's percentiles.
std::pair<std::int64_t, std::int64_t> gapSummary(const std::vector<Duration> &gaps)
{
    if (gaps.empty())
        return {0, 0};
    std::vector<std::int64_t> ns;
    ns.reserve(gaps.size());
    for (Duration g : gaps)
        ns.push_back(g.count());
    const std::int64_t largest = *std::max_element(ns.begin(), ns.end());
    const auto mid = ns.begin() + std::ptrdiff_t((ns.size() + 1) / 2 - 1);
    std::nth_element(ns.begin(), mid, ns.end());
    return {*mid, largest};
}
constexpr const char *kInsertConfig =
    "INSERT OR REPLACE INTO config_changes (session_id, version, at_ns, origin, summary, config) "
    "VALUES (?,?,?,?,?,?)";
constexpr const char *kInsertSample =
    "INSERT INTO metric_samples (session_id, at_ns, requests_per_s, input_tokens_per_s, output_tokens_per_s, "
    "total_p50_us, total_p90_us, total_p99_us, queue_wait_p99_us, queue_depth, in_flight, mean_batch_size, "
    "padding_efficiency, busy_fraction, submitted, completed, failed, config_version, dropped_rows) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
constexpr const char *kInsertTargetSample =
    "INSERT INTO target_samples (session_id, at_ns, server, batch_size, queue, running, waiting, kv_usage, "
    "tokens_per_step, prefix_cache_hit_rate, error) VALUES (?,?,?,?,?,?,?,?,?,?,?)";
} // namespace

Result<RowWriter> RowWriter::open(const std::string &dbPath, std::int64_t sessionId, TimePoint epoch,
                                  std::string requestSource, std::int64_t maxDatabaseBytes)
{
    RowWriter w;
    auto db = sqlite::Connection::open(dbPath, sqlite::Connection::Mode::ReadWrite);
    if (!db)
        return db.status();
    w.m_db = std::move(db.value());
    auto id = identify(w.m_db);
    if (!id)
        return id.status();
    if (id->applicationId != kApplicationId || id->userVersion != kSchemaVersion)
        return Status(StatusCode::InvalidArgument, "'" + dbPath +
                                                       "' is not a BatchPilot trace database of schema " +
                                                       std::to_string(kSchemaVersion));
    if (Status s = configureConnection(w.m_db); !s)
        return s;
    if (maxDatabaseBytes > 0) {
        auto pageSize = w.m_db.queryInt("PRAGMA page_size", 4096);
        if (!pageSize)
            return pageSize.status();
        const std::int64_t pages = std::max<std::int64_t>(1, maxDatabaseBytes / *pageSize);
        if (auto set = w.m_db.queryInt("PRAGMA max_page_count = " + std::to_string(pages)); !set)
            return set.status();
    }
    const std::string one = insertRequests(1), chunk = insertRequests(kRequestChunk);
    for (auto [stmt, sql] :
         {std::pair{&w.m_request, one.c_str()}, std::pair{&w.m_requestChunk, chunk.c_str()},
          std::pair{&w.m_batch, kInsertBatch}, std::pair{&w.m_config, kInsertConfig},
          std::pair{&w.m_sample, kInsertSample}, std::pair{&w.m_targetSample, kInsertTargetSample}}) {
        auto prepared = w.m_db.prepare(sql);
        if (!prepared)
            return prepared.status();
        *stmt = std::move(prepared.value());
    }
    w.m_session = sessionId;
    w.m_epoch = epoch;
    w.m_source = std::move(requestSource);
    for (auto *stmt : {&w.m_batch, &w.m_config, &w.m_sample, &w.m_targetSample})
        stmt->bind(1, sessionId);
    return w;
}

Status RowWriter::write(const PendingRows &rows)
{
    if (rows.rows() == 0)
        return Status::ok();
    sqlite::Transaction tx(m_db);
    if (Status s = tx.begin(); !s)
        return s;
    auto run = [&](sqlite::Statement &st, const char *what) {
        const int rc = st.step();
        st.reset();
        return rc == SQLITE_DONE ? Status::ok() : m_db.error(rc, what);
    };
    for (const ConfigChange &c : rows.configs) {
        m_config.bind(2, std::int64_t(c.version));
        m_config.bind(3, offset(c.at));
        m_config.bind(4, c.origin);
        m_config.bind(5, c.summary);
        m_config.bind(6, toJson(c.config).dump());
        if (Status s = run(m_config, "write a config change"); !s)
            return s;
    }
    for (const BatchRecord &b : rows.batches) {
        m_batch.bind(2, std::int64_t(b.id));
        m_batch.bind(3, offset(b.dispatchedAt));
        m_batch.bind(4, offset(b.intendedAt));
        m_batch.bind(5, std::int64_t(b.size));
        m_batch.bind(6, std::int64_t(b.paddedLength));
        m_batch.bind(7, std::int64_t(b.realTokens));
        m_batch.bind(8, std::int64_t(b.paddedTokens));
        m_batch.bind(9, std::int64_t(b.compute.count()));
        m_batch.bindStatic(10, dispatchReasonName(b.reason));
        m_batch.bindStatic(11, policyName(b.policy));
        m_batch.bind(12, std::int64_t(b.bucket));
        m_batch.bind(13, std::int64_t(b.executor));
        m_batch.bind(14, std::int64_t(b.configVersion));
        m_batch.bindStatic(15, statusCodeName(b.status));
        m_batch.bind(16, std::int64_t(b.prefillTokens));
        m_batch.bind(17, std::int64_t(b.decodeTokens));
        m_batch.bind(18, std::int64_t(b.joined));
        m_batch.bind(19, std::int64_t(b.running));
        m_batch.bind(20, std::int64_t(b.waiting));
        m_batch.bind(21, b.kvTokens);
        m_batch.bind(22, std::int64_t(b.preempted));
        m_batch.bind(23, std::int64_t(b.replica));
        if (Status s = run(m_batch, "write a batch"); !s)
            return s;
    }
    const std::size_t n = rows.requests.size();
    std::size_t i = 0;
    for (; i + kRequestChunk <= n; i += kRequestChunk) {
        for (int k = 0; k < kRequestChunk; ++k)
            bindRequest(m_requestChunk, k * kRequestColumns, rows.requests[i + std::size_t(k)]);
        if (Status s = run(m_requestChunk, "write requests"); !s)
            return s;
    }
    for (; i < n; ++i) {
        bindRequest(m_request, 0, rows.requests[i]);
        if (Status s = run(m_request, "write a request"); !s)
            return s;
    }
    for (const MetricSample &m : rows.samples) {
        m_sample.bind(2, std::int64_t(m.at.count()));
        m_sample.bind(3, m.requestsPerS);
        m_sample.bind(4, m.inputTokensPerS);
        m_sample.bind(5, m.outputTokensPerS);
        m_sample.bind(6, m.totalP50Us);
        m_sample.bind(7, m.totalP90Us);
        m_sample.bind(8, m.totalP99Us);
        m_sample.bind(9, m.queueWaitP99Us);
        m_sample.bind(10, std::int64_t(m.queueDepth));
        m_sample.bind(11, std::int64_t(m.inFlight));
        m_sample.bind(12, m.meanBatchSize);
        m_sample.bind(13, m.paddingEfficiency);
        m_sample.bind(14, m.busyFraction);
        m_sample.bind(15, std::int64_t(m.submitted));
        m_sample.bind(16, std::int64_t(m.completed));
        m_sample.bind(17, std::int64_t(m.failed));
        m_sample.bind(18, std::int64_t(m.configVersion));
        m_sample.bind(19, std::int64_t(m.droppedRows));
        if (Status s = run(m_sample, "write a metric sample"); !s)
            return s;
    }
    for (const TargetSample &t : rows.targetSamples) {
        m_targetSample.bind(2, std::int64_t(t.at.count()));
        m_targetSample.bind(3, t.server);
        int column = 4;
        for (const std::optional<double> &v :
             {t.batchSize, t.queue, t.running, t.waiting, t.kvUsage, t.tokensPerStep, t.prefixCacheHitRate})
            v ? m_targetSample.bind(column++, *v) : m_targetSample.bindNull(column++);
        m_targetSample.bind(11, t.error);
        if (Status s = run(m_targetSample, "write a target sample"); !s)
            return s;
    }
    return tx.commit();
}

void RowWriter::bindRequest(sqlite::Statement &st, int base, const RequestRecord &r)
{
    st.bind(base + 1, m_session);
    st.bind(base + 2, std::int64_t(r.id));
    st.bind(base + 3, offset(r.arrival));
    st.bind(base + 4, std::int64_t(r.queueWait.count()));
    st.bind(base + 5, std::int64_t(r.compute.count()));
    st.bind(base + 6, std::int64_t(r.total.count()));
    st.bind(base + 7, std::int64_t(r.timeToFirstToken.count()));
    st.bind(base + 8, std::int64_t(r.inputTokens));
    st.bind(base + 9, std::int64_t(r.outputTokens));
    st.bind(base + 10, std::int64_t(r.bucket));
    st.bind(base + 11, std::int64_t(r.batchId));
    st.bindStatic(base + 12, statusCodeName(r.status));
    st.bindStatic(base + 13, m_source); // bound per write: m_source's buffer moves with the writer
    st.bind(base + 14, std::int64_t(r.timePerOutputToken.count()));
    const auto [itlP50, itlMax] = gapSummary(r.interTokenLatencies);
    st.bind(base + 15, itlP50);
    st.bind(base + 16, itlMax);
    st.bind(base + 17, std::int64_t(r.replica));
    st.bind(base + 18, std::int64_t(r.routerWait.count()));
    st.bind(base + 19, r.conversation);
    st.bind(base + 20, std::int64_t(r.turn));
    st.bind(base + 21, std::int64_t(r.cachedTokens));
}

} // namespace bp::store
