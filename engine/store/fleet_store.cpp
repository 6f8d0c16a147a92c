#include "fleet_store.h"

#include "schema.h"
#include "sqlite_db.h"
#include "store_types.h"
#include "trace_store.h"

#include <sqlite3.h>

namespace bp {

Status saveReplicaFigures(const TraceStore &store, std::int64_t sessionId,
                          const std::vector<StoredReplica> &rows)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    sqlite::Transaction tx(*db);
    if (Status s = tx.begin(); !s)
        return s;
    auto del = db->prepare("DELETE FROM replica_figures WHERE session_id = ?");
    if (!del)
        return del.status();
    del->bind(1, sessionId);
    if (const int rc = del->step(); rc != SQLITE_DONE)
        return db->error(rc, "replace a session's replica figures");
    auto st =
        db->prepare("INSERT INTO replica_figures (session_id, replica, routed, completed, failed, batches, "
                    "busy_s, peak_outstanding, peak_kv_tokens, preemptions, output_tokens) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?)");
    if (!st)
        return st.status();
    for (const StoredReplica &r : rows) {
        st->bind(1, sessionId);
        st->bind(2, std::int64_t(r.replica));
        st->bind(3, r.routed);
        st->bind(4, r.completed);
        st->bind(5, r.failed);
        st->bind(6, r.batches);
        st->bind(7, r.busyS);
        st->bind(8, r.peakOutstanding);
        st->bind(9, r.peakKvTokens);
        st->bind(10, r.preemptions);
        st->bind(11, r.outputTokens);
        const int rc = st->step();
        st->reset();
        if (rc != SQLITE_DONE)
            return db->error(rc, "store a replica's figures");
    }
    return tx.commit();
}

Result<std::vector<StoredReplica>> replicaFigures(const TraceStore &store, std::int64_t sessionId)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st = db->prepare("SELECT replica, routed, completed, failed, batches, busy_s, peak_outstanding, "
                          "peak_kv_tokens, preemptions, output_tokens FROM replica_figures "
                          "WHERE session_id = ? ORDER BY replica");
    if (!st)
        return st.status();
    st->bind(1, sessionId);
    std::vector<StoredReplica> out;
    for (;;) {
        const int rc = st->step();
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW)
            return db->error(rc, "read replica figures");
        StoredReplica r;
        r.replica = int(st->int64At(0));
        r.routed = st->int64At(1);
        r.completed = st->int64At(2);
        r.failed = st->int64At(3);
        r.batches = st->int64At(4);
        r.busyS = st->doubleAt(5);
        r.peakOutstanding = st->int64At(6);
        r.peakKvTokens = st->int64At(7);
        r.preemptions = st->int64At(8);
        r.outputTokens = st->int64At(9);
        out.push_back(r);
    }
    return out;
}

Result<double> sessionSpanS(const TraceStore &store, std::int64_t sessionId)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st =
        db->prepare("SELECT min(arrival_ns), max(arrival_ns + total_ns) FROM requests WHERE session_id = ?");
    if (!st)
        return st.status();
    st->bind(1, sessionId);
    if (const int rc = st->step(); rc != SQLITE_ROW)
        return db->error(rc, "read a session's span");
    if (st->isNullAt(0))
        return 0.0;
    return double(st->int64At(1) - st->int64At(0)) / 1e9;
}

Result<std::int64_t> saveCapacityPlan(const TraceStore &store, const StoredPlan &p)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st = db->prepare("INSERT INTO capacity_plans (created_at_us, source_session_id, source_trace_id, "
                          "calibration_id, slo, result) VALUES (?, ?, ?, ?, ?, ?)");
    if (!st)
        return st.status();
    st->bind(1, p.createdAtUs ? p.createdAtUs : wallClockMicros());
    for (auto [index, value] : {std::pair{2, p.sourceSessionId}, std::pair{3, p.sourceTraceId}})
        if (value)
            st->bind(index, *value);
        else
            st->bindNull(index);
    st->bind(4, p.calibrationId);
    st->bind(5, p.slo);
    st->bind(6, p.result.dump());
    if (const int rc = st->step(); rc != SQLITE_DONE)
        return db->error(rc, "store a capacity plan");
    return db->lastInsertId();
}

Result<std::vector<StoredPlan>> capacityPlansFor(const TraceStore &store,
                                                 std::optional<std::int64_t> sessionId,
                                                 std::optional<std::int64_t> traceId)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st =
        db->prepare("SELECT id, created_at_us, source_session_id, source_trace_id, calibration_id, slo, "
                    "result FROM capacity_plans WHERE source_session_id = ? OR source_trace_id = ? "
                    "ORDER BY id DESC");
    if (!st)
        return st.status();
    st->bind(1, sessionId.value_or(-1));
    st->bind(2, traceId.value_or(-1));
    std::vector<StoredPlan> out;
    for (;;) {
        const int rc = st->step();
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW)
            return db->error(rc, "read capacity plans");
        StoredPlan p;
        p.id = st->int64At(0);
        p.createdAtUs = st->int64At(1);
        if (!st->isNullAt(2))
            p.sourceSessionId = st->int64At(2);
        if (!st->isNullAt(3))
            p.sourceTraceId = st->int64At(3);
        p.calibrationId = st->int64At(4);
        p.slo = st->textAt(5);
        p.result = nlohmann::json::parse(st->textAt(6), nullptr, false);
        if (p.result.is_discarded())
            return Status(StatusCode::Internal,
                          "capacity plan " + std::to_string(p.id) + " is not valid JSON");
        out.push_back(std::move(p));
    }
    return out;
}

namespace {
// `columns` then the plan's result; a row of capacity_plans as a StoredPlan.
StoredPlan planAt(const sqlite::Statement &st)
{
    StoredPlan p;
    p.id = st.int64At(0);
    p.createdAtUs = st.int64At(1);
    if (!st.isNullAt(2))
        p.sourceSessionId = st.int64At(2);
    if (!st.isNullAt(3))
        p.sourceTraceId = st.int64At(3);
    p.calibrationId = st.int64At(4);
    p.slo = st.textAt(5);
    return p;
}
} // namespace

Result<std::vector<PlanHeadline>> capacityPlanHeadlines(const TraceStore &store,
                                                        std::optional<std::int64_t> sessionId,
                                                        std::optional<std::int64_t> traceId)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st = db->prepare(
        "SELECT id, created_at_us, slo, json_extract(result, '$.window_s'), json_extract(result, "
        "'$.rate_scale'), json_array_length(result, '$.windows'), json_extract(result, '$.peak_replicas') "
        "FROM capacity_plans WHERE source_session_id = ? OR source_trace_id = ? ORDER BY id DESC");
    if (!st)
        return st.status();
    st->bind(1, sessionId.value_or(-1));
    st->bind(2, traceId.value_or(-1));
    std::vector<PlanHeadline> out;
    for (;;) {
        const int rc = st->step();
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW)
            return db->error(rc, "list capacity plans");
        PlanHeadline h;
        h.id = st->int64At(0);
        h.createdAtUs = st->int64At(1);
        h.slo = st->textAt(2);
        h.windowS = st->doubleAt(3);
        h.rateScale = st->isNullAt(4) ? 1.0 : st->doubleAt(4);
        h.windows = int(st->int64At(5));
        h.peakReplicas = int(st->int64At(6));
        out.push_back(std::move(h));
    }
    return out;
}

Result<StoredPlan> capacityPlan(const TraceStore &store, std::int64_t id)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st =
        db->prepare("SELECT id, created_at_us, source_session_id, source_trace_id, calibration_id, slo, "
                    "result FROM capacity_plans WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, id);
    const int rc = st->step();
    if (rc == SQLITE_DONE)
        return Status(StatusCode::NotFound, "no capacity plan " + std::to_string(id));
    if (rc != SQLITE_ROW)
        return db->error(rc, "read a capacity plan");
    StoredPlan p = planAt(*st);
    p.result = nlohmann::json::parse(st->textAt(6), nullptr, false);
    if (p.result.is_discarded())
        return Status(StatusCode::Internal, "capacity plan " + std::to_string(id) + " is not valid JSON");
    return p;
}

Result<std::int64_t> saveAutoscaleRun(const TraceStore &store, const StoredAutoscaleRun &r)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st = db->prepare("INSERT INTO autoscale_runs (created_at_us, source_trace_id, calibration_id, slo, "
                          "policy, result) VALUES (?, ?, ?, ?, ?, ?)");
    if (!st)
        return st.status();
    st->bind(1, r.createdAtUs ? r.createdAtUs : wallClockMicros());
    if (r.sourceTraceId)
        st->bind(2, *r.sourceTraceId);
    else
        st->bindNull(2);
    st->bind(3, r.calibrationId);
    st->bind(4, r.slo);
    st->bind(5, r.policy);
    st->bind(6, r.result.dump());
    if (const int rc = st->step(); rc != SQLITE_DONE)
        return db->error(rc, "store an autoscale run");
    return db->lastInsertId();
}

Result<std::vector<AutoscaleHeadline>> autoscaleRunHeadlines(const TraceStore &store, std::int64_t traceId)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st =
        db->prepare("SELECT id, created_at_us, slo, policy, json_extract(result, '$.run.windows_met_share'), "
                    "json_extract(result, '$.run.replica_hours'), json_extract(result, "
                    "'$.run.peak_replicas') FROM autoscale_runs WHERE source_trace_id = ? ORDER BY id DESC");
    if (!st)
        return st.status();
    st->bind(1, traceId);
    std::vector<AutoscaleHeadline> out;
    for (;;) {
        const int rc = st->step();
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW)
            return db->error(rc, "list autoscale runs");
        AutoscaleHeadline h;
        h.id = st->int64At(0);
        h.createdAtUs = st->int64At(1);
        h.slo = st->textAt(2);
        h.policy = st->textAt(3);
        h.windowsMetShare = st->isNullAt(4) ? 0.0 : st->doubleAt(4);
        h.replicaHours = st->isNullAt(5) ? 0.0 : st->doubleAt(5);
        h.peakReplicas = st->isNullAt(6) ? 0 : int(st->int64At(6));
        out.push_back(std::move(h));
    }
    return out;
}

Result<StoredAutoscaleRun> autoscaleRun(const TraceStore &store, std::int64_t id)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st =
        db->prepare("SELECT id, created_at_us, source_trace_id, calibration_id, slo, policy, result FROM "
                    "autoscale_runs WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, id);
    const int rc = st->step();
    if (rc == SQLITE_DONE)
        return Status(StatusCode::NotFound, "no autoscale run " + std::to_string(id));
    if (rc != SQLITE_ROW)
        return db->error(rc, "read an autoscale run");
    StoredAutoscaleRun r;
    r.id = st->int64At(0);
    r.createdAtUs = st->int64At(1);
    if (!st->isNullAt(2))
        r.sourceTraceId = st->int64At(2);
    r.calibrationId = st->int64At(3);
    r.slo = st->textAt(4);
    r.policy = st->textAt(5);
    r.result = nlohmann::json::parse(st->textAt(6), nullptr, false);
    if (r.result.is_discarded())
        return Status(StatusCode::Internal, "autoscale run " + std::to_string(id) + " is not valid JSON");
    return r;
}

} // namespace bp
