// TraceStore: reading a session's records back.
#include "trace_store.h"

#include <tuple>
#include <unordered_map>

#include "sqlite_db.h"

#include "engine/config/config_json.h"

#include <sqlite3.h>

namespace bp {

namespace {

Duration ns(std::int64_t v)
{
    return Duration(v);
}

// Runs `sql` with the session id bound to ?1 and calls `row` per result row.
template <typename Row>
Status forEachRow(const sqlite::Connection &db, const char *sql, std::int64_t sessionId, const char *what,
                  Row row)
{
    auto st = db.prepare(sql);
    if (!st)
        return st.status();
    st->bind(1, sessionId);
    int rc;
    while ((rc = st->step()) == SQLITE_ROW)
        row(*st);
    return rc == SQLITE_DONE ? Status::ok() : db.error(rc, what);
}

Status sessionExists(const sqlite::Connection &db, std::int64_t id, const std::string &path)
{
    auto st = db.prepare("SELECT 1 FROM sessions WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, id);
    const int rc = st->step();
    if (rc == SQLITE_ROW)
        return Status::ok();
    if (rc == SQLITE_DONE)
        return {StatusCode::NotFound, "no session " + std::to_string(id) + " in '" + path + "'"};
    return db.error(rc, "look up session " + std::to_string(id));
}

} // namespace

Result<std::vector<StoredRequest>> TraceStore::requests(std::int64_t sessionId) const
{
    std::lock_guard lock(m_mutex);
    std::vector<StoredRequest> out;
    Status s = forEachRow(
        *m_db,
        "SELECT request_id, arrival_ns, queue_wait_ns, compute_ns, total_ns, ttft_ns, input_tokens, "
        "output_tokens, bucket, batch_id, status, source, tpot_ns, itl_p50_ns, itl_max_ns, conversation_id, "
        "turn, cached_tokens "
        "FROM requests WHERE session_id = ? "
        "ORDER BY arrival_ns, request_id",
        sessionId, "read requests", [&](const sqlite::Statement &st) {
            StoredRequest r;
            r.requestId = std::uint64_t(st.int64At(0));
            r.arrival = ns(st.int64At(1));
            r.queueWait = ns(st.int64At(2));
            r.compute = ns(st.int64At(3));
            r.total = ns(st.int64At(4));
            r.timeToFirstToken = ns(st.int64At(5));
            r.inputTokens = int(st.int64At(6));
            r.outputTokens = int(st.int64At(7));
            r.bucket = int(st.int64At(8));
            r.batchId = std::uint64_t(st.int64At(9));
            r.status = parseStatusCode(st.textAt(10)).value_or(StatusCode::Internal);
            r.source = st.textAt(11);
            r.timePerOutputToken = ns(st.int64At(12));
            r.interTokenP50 = ns(st.int64At(13));
            r.interTokenMax = ns(st.int64At(14));
            r.conversation = st.int64At(15);
            r.turn = int(st.int64At(16));
            r.cachedTokens = int(st.int64At(17));
            out.push_back(std::move(r));
        });
    if (!s)
        return s;
    return out;
}

Result<std::vector<StoredBatch>> TraceStore::batches(std::int64_t sessionId) const
{
    std::lock_guard lock(m_mutex);
    std::vector<StoredBatch> out;
    Status s =
        forEachRow(*m_db,
                   "SELECT batch_id, dispatched_ns, intended_ns, size, padded_length, real_tokens, "
                   "padded_tokens, compute_ns, reason, policy, bucket, executor, config_version, status, "
                   "prefill_tokens, decode_tokens, joined, running, waiting, kv_tokens, preempted "
                   "FROM batches WHERE session_id = ? ORDER BY batch_id",
                   sessionId, "read batches", [&](const sqlite::Statement &st) {
                       StoredBatch b;
                       b.batchId = std::uint64_t(st.int64At(0));
                       b.dispatched = ns(st.int64At(1));
                       b.intended = ns(st.int64At(2));
                       b.size = int(st.int64At(3));
                       b.paddedLength = int(st.int64At(4));
                       b.realTokens = st.int64At(5);
                       b.paddedTokens = st.int64At(6);
                       b.compute = ns(st.int64At(7));
                       b.reason = parseDispatchReason(st.textAt(8)).value_or(DispatchReason::Single);
                       b.policy = parsePolicy(st.textAt(9)).value_or(PolicyKind::None);
                       b.bucket = int(st.int64At(10));
                       b.executor = int(st.int64At(11));
                       b.configVersion = std::uint64_t(st.int64At(12));
                       b.status = parseStatusCode(st.textAt(13)).value_or(StatusCode::Internal);
                       b.prefillTokens = int(st.int64At(14));
                       b.decodeTokens = int(st.int64At(15));
                       b.joined = int(st.int64At(16));
                       b.running = int(st.int64At(17));
                       b.waiting = int(st.int64At(18));
                       b.kvTokens = st.int64At(19);
                       b.preempted = int(st.int64At(20));
                       out.push_back(b);
                   });
    if (!s)
        return s;
    return out;
}

Result<std::vector<StoredConfigChange>> TraceStore::configHistory(std::int64_t sessionId) const
{
    std::lock_guard lock(m_mutex);
    std::vector<StoredConfigChange> out;
    Status bad;
    Status s =
        forEachRow(*m_db,
                   "SELECT version, at_ns, origin, summary, config FROM config_changes WHERE session_id = ? "
                   "ORDER BY version",
                   sessionId, "read the config history", [&](const sqlite::Statement &st) {
                       StoredConfigChange c;
                       c.version = std::uint64_t(st.int64At(0));
                       c.at = ns(st.int64At(1));
                       c.origin = st.textAt(2);
                       c.summary = st.textAt(3);
                       auto j = nlohmann::json::parse(st.textAt(4), nullptr, false);
                       auto config = configFromJson(j);
                       if (!config && bad.isOk())
                           bad = Status(StatusCode::InvalidArgument,
                                        "session " + std::to_string(sessionId) + " config version " +
                                            std::to_string(c.version) + ": " + config.status().message());
                       if (config)
                           c.config = *config;
                       out.push_back(std::move(c));
                   });
    if (!s)
        return s;
    if (!bad)
        return bad;
    return out;
}

Result<std::vector<TargetSample>> TraceStore::targetSamples(std::int64_t sessionId) const
{
    std::lock_guard lock(m_mutex);
    std::vector<TargetSample> out;
    auto opt = [](const sqlite::Statement &st, int c) {
        return st.isNullAt(c) ? std::optional<double>() : std::optional<double>(st.doubleAt(c));
    };
    Status s = forEachRow(
        *m_db,
        "SELECT at_ns, server, batch_size, queue, running, waiting, kv_usage, tokens_per_step, "
        "error, prefix_cache_hit_rate FROM target_samples WHERE session_id = ? ORDER BY at_ns, rowid",
        sessionId, "read target samples", [&](const sqlite::Statement &st) {
            TargetSample t;
            t.at = ns(st.int64At(0));
            t.server = st.textAt(1);
            t.batchSize = opt(st, 2);
            t.queue = opt(st, 3);
            t.running = opt(st, 4);
            t.waiting = opt(st, 5);
            t.kvUsage = opt(st, 6);
            t.tokensPerStep = opt(st, 7);
            t.error = st.textAt(8);
            t.prefixCacheHitRate = opt(st, 9);
            out.push_back(std::move(t));
        });
    if (!s)
        return s;
    if (out.empty())
        if (Status e = sessionExists(*m_db, sessionId, m_path); !e)
            return e;
    return out;
}

Result<std::vector<MetricSample>> TraceStore::metricSamples(std::int64_t sessionId) const
{
    std::lock_guard lock(m_mutex);
    std::vector<MetricSample> out;
    Status s =
        forEachRow(*m_db,
                   "SELECT at_ns, requests_per_s, input_tokens_per_s, output_tokens_per_s, total_p50_us, "
                   "total_p90_us, total_p99_us, queue_wait_p99_us, queue_depth, in_flight, mean_batch_size, "
                   "padding_efficiency, busy_fraction, submitted, completed, failed, config_version, "
                   "dropped_rows FROM metric_samples WHERE session_id = ? ORDER BY at_ns, rowid",
                   sessionId, "read metric samples", [&](const sqlite::Statement &st) {
                       MetricSample m;
                       m.at = ns(st.int64At(0));
                       m.requestsPerS = st.doubleAt(1);
                       m.inputTokensPerS = st.doubleAt(2);
                       m.outputTokensPerS = st.doubleAt(3);
                       m.totalP50Us = st.doubleAt(4);
                       m.totalP90Us = st.doubleAt(5);
                       m.totalP99Us = st.doubleAt(6);
                       m.queueWaitP99Us = st.doubleAt(7);
                       m.queueDepth = std::uint64_t(st.int64At(8));
                       m.inFlight = int(st.int64At(9));
                       m.meanBatchSize = st.doubleAt(10);
                       m.paddingEfficiency = st.doubleAt(11);
                       m.busyFraction = st.doubleAt(12);
                       m.submitted = std::uint64_t(st.int64At(13));
                       m.completed = std::uint64_t(st.int64At(14));
                       m.failed = std::uint64_t(st.int64At(15));
                       m.configVersion = std::uint64_t(st.int64At(16));
                       m.droppedRows = std::uint64_t(st.int64At(17));
                       out.push_back(m);
                   });
    if (!s)
        return s;
    return out;
}

Result<std::vector<TraceRow>> TraceStore::sessionArrivals(std::int64_t sessionId) const
{
    std::lock_guard lock(m_mutex);
    if (Status s = sessionExists(*m_db, sessionId, m_path); !s)
        return s;
    std::vector<TraceRow> out;
    std::int64_t first = 0;
    // per conversation: the previous turn's end (ns), prompt and answer lengths
    std::unordered_map<std::int64_t, std::tuple<std::int64_t, int, int>> last;
    Status s = forEachRow(
        *m_db,
        "SELECT arrival_ns, input_tokens, output_tokens, conversation_id, turn, total_ns "
        "FROM requests WHERE session_id = ? ORDER BY arrival_ns, request_id",
        sessionId, "read arrivals", [&](const sqlite::Statement &st) {
            if (out.empty())
                first = st.int64At(0);
            TraceRow r;
            r.arrivalS = toSeconds(ns(st.int64At(0) - first));
            r.inputTokens = int(st.int64At(1));
            r.outputTokens = int(st.int64At(2));
            r.conversation = st.int64At(3);
            r.turn = int(st.int64At(4));
            // A follow-up turn: its think time is the gap after the
            // previous turn's completion; its input the new text.
            if (r.conversation != 0) {
                auto prev = last.find(r.conversation);
                if (prev != last.end()) {
                    const auto &[endNs, prompt, answer] = prev->second;
                    r.thinkS = std::max(0.0, toSeconds(ns(st.int64At(0) - endNs)));
                    r.inputTokens = std::max(1, r.inputTokens - prompt - answer);
                }
                last[r.conversation] = {st.int64At(0) + st.int64At(5), int(st.int64At(1)), r.outputTokens};
            }
            out.push_back(r);
        });
    if (!s)
        return s;
    return out;
}

} // namespace bp
