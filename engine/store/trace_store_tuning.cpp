#include "tuning_store.h"

#include "schema.h"
#include "sqlite_db.h"
#include "store_types.h"
#include "trace_store.h"

#include <sqlite3.h>

#include <optional>

namespace bp {

namespace {

void bindOptional(sqlite::Statement &st, int index, const std::optional<std::int64_t> &value)
{
    if (value)
        st.bind(index, *value);
    else
        st.bindNull(index);
}

std::optional<std::int64_t> optionalAt(const sqlite::Statement &st, int column)
{
    return st.isNullAt(column) ? std::nullopt : std::optional(st.int64At(column));
}

} // namespace

Result<std::int64_t> saveTuning(const TraceStore &store, const StoredTuning &t)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st = db->prepare(
        "INSERT INTO tunings (created_at_us, source_session_id, source_trace_id, "
        "verify_session_id, calibration_id, slo, objective, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return st.status();
    st->bind(1, t.createdAtUs ? t.createdAtUs : wallClockMicros());
    bindOptional(*st, 2, t.sourceSessionId);
    bindOptional(*st, 3, t.sourceTraceId);
    bindOptional(*st, 4, t.verifySessionId);
    st->bind(5, t.calibrationId);
    st->bind(6, t.slo);
    st->bind(7, t.objective);
    st->bind(8, t.result.dump());
    if (const int rc = st->step(); rc != SQLITE_DONE)
        return db->error(rc, "store a tuning result");
    return db->lastInsertId();
}

namespace {

// Sets `key` of tuning `id`'s stored result document to `value`, and its
// verification session when one is given.
Status updateTuningResult(const TraceStore &store, std::int64_t id, const char *key,
                          const nlohmann::json &value, std::optional<std::int64_t> verifySession)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto read = db->prepare("SELECT result FROM tunings WHERE id = ?");
    if (!read)
        return read.status();
    read->bind(1, id);
    if (const int rc = read->step(); rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? Status(StatusCode::NotFound, "no tuning " + std::to_string(id))
                                 : db->error(rc, "read a tuning result");
    auto result = nlohmann::json::parse(read->textAt(0), nullptr, false);
    if (result.is_discarded())
        return Status(StatusCode::Internal, "tuning " + std::to_string(id) + " is not valid JSON");
    result[key] = value;
    auto st = db->prepare(verifySession ? "UPDATE tunings SET result = ?, verify_session_id = ? WHERE id = ?"
                                        : "UPDATE tunings SET result = ? WHERE id = ?");
    if (!st)
        return st.status();
    int column = 1;
    st->bind(column++, result.dump());
    if (verifySession)
        st->bind(column++, *verifySession);
    st->bind(column, id);
    if (const int rc = st->step(); rc != SQLITE_DONE)
        return db->error(rc, std::string("store a tuning's ") + key);
    return {};
}

} // namespace

Status setTuningVerification(const TraceStore &store, std::int64_t id, std::int64_t sessionId,
                             const nlohmann::json &verification)
{
    return updateTuningResult(store, id, "verification", verification, sessionId);
}

Status setTuningTarget(const TraceStore &store, std::int64_t id, const nlohmann::json &target)
{
    return updateTuningResult(store, id, "target", target, std::nullopt);
}

Result<std::vector<StoredTuning>> tuningsForSession(const TraceStore &store, std::int64_t sessionId)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st = db->prepare("SELECT id, created_at_us, source_session_id, source_trace_id, verify_session_id, "
                          "calibration_id, slo, objective, result FROM tunings "
                          "WHERE verify_session_id = ? OR source_session_id = ? ORDER BY id DESC");
    if (!st)
        return st.status();
    st->bind(1, sessionId);
    st->bind(2, sessionId);
    std::vector<StoredTuning> out;
    for (;;) {
        const int rc = st->step();
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW)
            return db->error(rc, "read tuning results");
        StoredTuning t;
        t.id = st->int64At(0);
        t.createdAtUs = st->int64At(1);
        t.sourceSessionId = optionalAt(*st, 2);
        t.sourceTraceId = optionalAt(*st, 3);
        t.verifySessionId = optionalAt(*st, 4);
        t.calibrationId = st->int64At(5);
        t.slo = st->textAt(6);
        t.objective = st->textAt(7);
        t.result = nlohmann::json::parse(st->textAt(8), nullptr, false);
        if (t.result.is_discarded())
            return Status(StatusCode::Internal, "tuning " + std::to_string(t.id) + " is not valid JSON");
        out.push_back(std::move(t));
    }
    return out;
}

} // namespace bp
