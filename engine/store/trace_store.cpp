#include "trace_store.h"

#include "schema.h"
#include "sqlite_db.h"

#include <sqlite3.h>

#include <filesystem>

namespace bp {

using sqlite::Connection;

namespace {

constexpr const char *kSessionColumns =
    "s.id, s.kind, s.started_at_us, s.ended_at_us, s.model, s.device, s.host, s.notes, s.source_session_id, "
    "s.source_trace_id, s.replay, s.dropped_rows, s.logging_error, s.target_url, "
    "(SELECT count(*) FROM requests r WHERE r.session_id = s.id), "
    "(SELECT count(*) FROM batches b WHERE b.session_id = s.id)";

nlohmann::json parseJsonColumn(const std::string &text)
{
    if (text.empty())
        return nullptr;
    auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

SessionInfo readSession(const sqlite::Statement &st)
{
    SessionInfo s;
    s.id = st.int64At(0);
    s.kind = st.textAt(1);
    s.startedAtUs = st.int64At(2);
    if (!st.isNullAt(3))
        s.endedAtUs = st.int64At(3);
    s.model = st.textAt(4);
    s.device = st.textAt(5);
    s.host = parseJsonColumn(st.textAt(6));
    s.notes = st.textAt(7);
    if (!st.isNullAt(8))
        s.sourceSessionId = st.int64At(8);
    if (!st.isNullAt(9))
        s.sourceTraceId = st.int64At(9);
    s.replay = parseJsonColumn(st.textAt(10));
    s.droppedRows = std::uint64_t(st.int64At(11));
    s.loggingError = st.textAt(12);
    s.targetUrl = st.textAt(13);
    s.requestCount = std::uint64_t(st.int64At(14));
    s.batchCount = std::uint64_t(st.int64At(15));
    return s;
}

Status stepDone(const Connection &db, sqlite::Statement &st, std::string_view what)
{
    const int rc = st.step();
    return rc == SQLITE_DONE ? Status::ok() : db.error(rc, what);
}

} // namespace

TraceStore::TraceStore(std::string path) : m_path(std::move(path)) {}
TraceStore::~TraceStore() = default;

Result<std::shared_ptr<TraceStore>> TraceStore::open(const std::string &path, OpenMode mode)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    if (mode == OpenMode::MustExist && !exists)
        return Status(StatusCode::NotFound, "no trace database at '" + path + "'");
    if (exists && fs::is_directory(path, ec))
        return Status(StatusCode::InvalidArgument, "'" + path + "' is a directory, not a trace database");
    auto db = Connection::open(path, Connection::Mode::ReadWriteCreate);
    if (!db)
        return db.status();
    auto id = store::identify(*db);
    if (!id)
        return id.status();
    const bool fresh = id->applicationId == 0 && id->userVersion == 0 && id->objects == 0;
    if (!fresh && id->applicationId != store::kApplicationId)
        return Status(StatusCode::InvalidArgument,
                      "'" + path + "' is not a BatchPilot trace database (an SQLite file of another application)");
    if (id->userVersion > store::kSchemaVersion)
        return Status(StatusCode::InvalidArgument,
                      "'" + path + "' was written by a newer BatchPilot (schema version " +
                          std::to_string(id->userVersion) + "; this build reads up to " +
                          std::to_string(store::kSchemaVersion) + ")");
    if (Status s = store::configureConnection(*db); !s)
        return s;
    if (Status s = store::migrate(*db); !s)
        return s;
    std::shared_ptr<TraceStore> store(new TraceStore(path));
    store->m_db = std::make_unique<Connection>(std::move(db.value()));
    return store;
}

int TraceStore::schemaVersion() const
{
    std::lock_guard lock(m_mutex);
    auto v = m_db->queryInt("PRAGMA user_version");
    return v ? int(*v) : 0;
}

Result<std::int64_t> TraceStore::startSession(const SessionStart &start)
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("INSERT INTO sessions (kind, started_at_us, model, device, host, notes, "
                            "source_session_id, source_trace_id, replay, target_url) VALUES (?,?,?,?,?,?,?,?,?,?)");
    if (!st)
        return st.status();
    st->bind(1, start.kind);
    st->bind(2, std::int64_t(start.startedAtUs ? start.startedAtUs : wallClockMicros()));
    st->bind(3, start.model);
    st->bind(4, start.device);
    st->bind(5, start.host.is_null() ? std::string("{}") : start.host.dump());
    st->bind(6, start.notes);
    start.sourceSessionId ? st->bind(7, *start.sourceSessionId) : st->bindNull(7);
    start.sourceTraceId ? st->bind(8, *start.sourceTraceId) : st->bindNull(8);
    st->bind(9, start.replay.is_null() ? std::string() : start.replay.dump());
    st->bind(10, start.targetUrl);
    if (Status s = stepDone(*m_db, *st, "start a session"); !s)
        return s;
    return m_db->lastInsertId();
}

Status TraceStore::endSession(std::int64_t id, const SessionEnd &end)
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("UPDATE sessions SET ended_at_us = ?, dropped_rows = ?, logging_error = ? WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, std::int64_t(end.endedAtUs ? end.endedAtUs : wallClockMicros()));
    st->bind(2, std::int64_t(end.droppedRows));
    st->bind(3, end.loggingError);
    st->bind(4, id);
    if (Status s = stepDone(*m_db, *st, "end session " + std::to_string(id)); !s)
        return s;
    if (sqlite3_changes(m_db->handle()) == 0)
        return {StatusCode::NotFound, "no session " + std::to_string(id)};
    return Status::ok();
}

Status TraceStore::setSessionNotes(std::int64_t id, const std::string &notes)
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("UPDATE sessions SET notes = ? WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, notes);
    st->bind(2, id);
    if (Status s = stepDone(*m_db, *st, "set the notes of session " + std::to_string(id)); !s)
        return s;
    if (sqlite3_changes(m_db->handle()) == 0)
        return {StatusCode::NotFound, "no session " + std::to_string(id)};
    return Status::ok();
}

Status TraceStore::setSessionReplay(std::int64_t id, const nlohmann::json &replay)
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("UPDATE sessions SET replay = ? WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, replay.is_null() ? std::string() : replay.dump());
    st->bind(2, id);
    if (Status s = stepDone(*m_db, *st, "set the replay of session " + std::to_string(id)); !s)
        return s;
    if (sqlite3_changes(m_db->handle()) == 0)
        return {StatusCode::NotFound, "no session " + std::to_string(id)};
    return Status::ok();
}

Status TraceStore::deleteSession(std::int64_t id)
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("DELETE FROM sessions WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, id);
    if (Status s = stepDone(*m_db, *st, "delete session " + std::to_string(id)); !s)
        return s;
    if (sqlite3_changes(m_db->handle()) == 0)
        return {StatusCode::NotFound, "no session " + std::to_string(id)};
    return Status::ok();
}

Result<std::vector<SessionInfo>> TraceStore::sessions() const
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare(std::string("SELECT ") + kSessionColumns + " FROM sessions s ORDER BY s.id DESC");
    if (!st)
        return st.status();
    std::vector<SessionInfo> out;
    int rc;
    while ((rc = st->step()) == SQLITE_ROW)
        out.push_back(readSession(*st));
    if (rc != SQLITE_DONE)
        return m_db->error(rc, "list sessions");
    return out;
}

Result<SessionInfo> TraceStore::session(std::int64_t id) const
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare(std::string("SELECT ") + kSessionColumns + " FROM sessions s WHERE s.id = ?");
    if (!st)
        return st.status();
    st->bind(1, id);
    const int rc = st->step();
    if (rc == SQLITE_ROW)
        return readSession(*st);
    if (rc == SQLITE_DONE)
        return Status(StatusCode::NotFound, "no session " + std::to_string(id) + " in '" + m_path + "'");
    return m_db->error(rc, "read session " + std::to_string(id));
}

} // namespace bp
