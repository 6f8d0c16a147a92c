// TraceStore::summary: a session's figures from its stored records.
#include "engine/telemetry/server_settings.h"
#include "session_summary.h"
#include "trace_store.h"

#include "sqlite_db.h"

#include "engine/config/config_json.h"

#include <sqlite3.h>

#include <algorithm>

namespace bp {

namespace {

// The session's description: its kind and model, the config in force at
// the end and how often it changed; a remote session's server settings and
// the client's sheds. Returns the goodput SLO the session is judged by (the
// last config's: one yardstick for the whole session).
GoodputConfig describeSession(SessionSummary &s, const SessionInfo &info,
                              const std::vector<StoredConfigChange> &history)
{
    s.kind = info.kind;
    s.model = info.model;
    s.device = info.device;
    s.sourceSessionId = info.sourceSessionId.value_or(0);
    s.sourceTraceId = info.sourceTraceId.value_or(0);
    s.droppedRows = info.droppedRows;
    GoodputConfig slo;
    if (!history.empty()) {
        s.config = describeConfig(history.back().config);
        s.configChanges = history.size() - 1;
        slo = history.back().config.goodput;
    }
    if (info.kind == "remote") {
        // The server's own settings: what its /metrics published, else not
        // known; the client's figures are in replay.client.
        const nlohmann::json replay = info.replay.is_object() ? info.replay : nlohmann::json::object();
        const nlohmann::json client = replay.value("client", nlohmann::json());
        auto text = [&](const char *key) {
            return client.is_object() && client.contains(key) && client[key].is_string()
                       ? client[key].get<std::string>()
                       : std::string();
        };
        if (history.empty()) {
            s.config = remoteConfigText(text("server_settings"), text("server"));
            slo = goodputSloFromJson(replay.value("goodput_slo", nlohmann::json()));
        }
        if (client.is_object() && client.contains("client_shed") &&
            client["client_shed"].is_number_unsigned())
            s.clientShed = client["client_shed"].get<std::uint64_t>();
    }
    const auto ms = [](Duration d) { return double(d.count()) / 1e6; };
    s.sloTtftMs = ms(slo.ttft);
    s.sloTpotMs = ms(slo.tpot);
    s.sloE2eMs = ms(slo.e2e);
    return slo;
}

// Final statuses: never ran (batch 0) vs ran. A remote request has no batch
// we can see; its status says which (remoteRequestRejected).
Status summarizeStatuses(const sqlite::Connection &db, std::int64_t sessionId, SessionSummary &s)
{
    auto statuses = db.prepare("SELECT status, batch_id = 0, source = 'remote', count(*) FROM requests "
                               "WHERE session_id = ? GROUP BY 1, 2, 3");
    if (!statuses)
        return statuses.status();
    statuses->bind(1, sessionId);
    int rc;
    while ((rc = statuses->step()) == SQLITE_ROW) {
        const std::string status = statuses->textAt(0);
        const auto n = std::uint64_t(statuses->int64At(3));
        s.byStatus[status] += n;
        if (status == "ok")
            s.completed += n;
        else if (statuses->int64At(2) ? remoteRequestRejected(status) : statuses->int64At(1) != 0)
            s.rejected += n;
        else
            s.failed += n;
    }
    if (rc != SQLITE_DONE)
        return db.error(rc, "summarize statuses");
    return Status::ok();
}

// Exact percentiles of completed requests, the goodput and the prefix
// cache's hit rate; the rates over the session's span (`outputTokens`: the
// completed requests' generated tokens).
Status summarizeLatencies(const sqlite::Connection &db, std::int64_t sessionId, const GoodputConfig &slo,
                          std::int64_t outputTokens, SessionSummary &s)
{
    auto latencies =
        db.prepare("SELECT total_ns, queue_wait_ns, ttft_ns, tpot_ns, output_tokens, "
                   "batch_id = 0 AND source <> 'remote', input_tokens, cached_tokens FROM requests "
                   "WHERE session_id = ? AND status = 'ok'");
    if (!latencies)
        return latencies.status();
    latencies->bind(1, sessionId);
    std::vector<std::int64_t> total, wait, ttft, tpot;
    total.reserve(s.completed);
    wait.reserve(s.completed);
    double sum = 0;
    std::int64_t promptTokens = 0, cachedTokens = 0;
    int rc;
    while ((rc = latencies->step()) == SQLITE_ROW) {
        promptTokens += latencies->int64At(6);
        cachedTokens += latencies->int64At(7);
        total.push_back(latencies->int64At(0));
        wait.push_back(latencies->int64At(1));
        sum += double(total.back());
        const std::int64_t firstToken = latencies->int64At(2), perToken = latencies->int64At(3);
        const std::int64_t outputs = latencies->int64At(4);
        if (outputs > 0 && firstToken > 0)
            ttft.push_back(firstToken);
        if (outputs > 1 && perToken > 0)
            tpot.push_back(perToken);
        // A cache hit (batch 0) stores no TTFT: its whole answer, first
        // token included, came at its end-to-end time (as the engine judges
        // it). A remote request has batch 0 too but is no cache hit: its
        // TTFT is the first token's (streamed) or the answer's first byte.
        const bool cacheHit = latencies->int64At(5) != 0;
        const std::int64_t judgedTtft = outputs > 0 ? (cacheHit ? total.back() : firstToken) : 0;
        if (slo.met(Duration(judgedTtft), Duration(perToken), Duration(total.back())))
            ++s.goodCompleted;
    }
    if (rc != SQLITE_DONE)
        return db.error(rc, "read latencies");
    for (auto *v : {&total, &wait, &ttft, &tpot})
        std::sort(v->begin(), v->end());
    constexpr double kMs = 1e6;
    s.latencyMeanMs = total.empty() ? 0 : sum / double(total.size()) / kMs;
    s.latencyP50Ms = nearestRank(total, 0.50) / kMs;
    s.latencyP90Ms = nearestRank(total, 0.90) / kMs;
    s.latencyP99Ms = nearestRank(total, 0.99) / kMs;
    s.queueWaitP50Ms = nearestRank(wait, 0.50) / kMs;
    s.queueWaitP99Ms = nearestRank(wait, 0.99) / kMs;
    s.ttftP50Ms = nearestRank(ttft, 0.50) / kMs;
    s.ttftP90Ms = nearestRank(ttft, 0.90) / kMs;
    s.ttftP99Ms = nearestRank(ttft, 0.99) / kMs;
    s.tpotP50Ms = nearestRank(tpot, 0.50) / kMs;
    s.tpotP90Ms = nearestRank(tpot, 0.90) / kMs;
    s.tpotP99Ms = nearestRank(tpot, 0.99) / kMs;
    s.prefixCacheHitRate = promptTokens > 0 ? double(cachedTokens) / double(promptTokens) : 0.0;
    if (s.durationS > 0) {
        s.throughputRps = double(s.completed) / s.durationS;
        s.goodputRps = double(s.goodCompleted) / s.durationS;
        s.outputTokensPerS = double(outputTokens) / s.durationS;
    }
    return Status::ok();
}

} // namespace

Result<SessionSummary> TraceStore::summary(std::int64_t sessionId) const
{
    auto info = session(sessionId);
    if (!info)
        return info.status();
    auto history = configHistory(sessionId);
    if (!history)
        return history.status();

    SessionSummary s;
    s.sessionId = sessionId;
    const GoodputConfig slo = describeSession(s, *info, *history);

    std::lock_guard lock(m_mutex);
    const sqlite::Connection &db = *m_db;
    auto fail = [&](int rc, const char *what) { return db.error(rc, what); };

    // Totals and the time span.
    auto totals = db.prepare("SELECT count(*), min(arrival_ns), max(arrival_ns + total_ns), "
                             "sum(CASE WHEN status = 'ok' THEN output_tokens ELSE 0 END) "
                             "FROM requests WHERE session_id = ?");
    if (!totals)
        return totals.status();
    totals->bind(1, sessionId);
    if (int rc = totals->step(); rc != SQLITE_ROW)
        return fail(rc, "summarize requests");
    s.requests = std::uint64_t(totals->int64At(0));
    const std::int64_t first = totals->int64At(1), last = totals->int64At(2);
    const std::int64_t outputTokens = totals->int64At(3);
    s.durationS = s.requests ? double(last - first) / 1e9 : 0.0;

    if (Status st = summarizeStatuses(db, sessionId, s); !st)
        return st;
    if (Status st = summarizeLatencies(db, sessionId, slo, outputTokens, s); !st)
        return st;

    // Batches.
    auto batches = db.prepare("SELECT count(*), coalesce(sum(size), 0), coalesce(sum(real_tokens), 0), "
                              "coalesce(sum(padded_tokens), 0) FROM batches WHERE session_id = ?");
    if (!batches)
        return batches.status();
    batches->bind(1, sessionId);
    if (int rc = batches->step(); rc != SQLITE_ROW)
        return fail(rc, "summarize batches");
    s.batches = std::uint64_t(batches->int64At(0));
    const std::int64_t members = batches->int64At(1), real = batches->int64At(2),
                       padded = batches->int64At(3);
    s.meanBatchSize = s.batches ? double(members) / double(s.batches) : 0.0;
    s.paddingEfficiency = padded > 0 ? double(real) / double(padded) : 1.0;
    return s;
}

} // namespace bp
