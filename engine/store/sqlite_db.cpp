#include "sqlite_db.h"

#include <sqlite3.h>

#include <chrono>

namespace bp::sqlite {

namespace {
// How long a connection waits for another one's write lock before giving up.
constexpr int kBusyTimeoutMs = 5000;

std::string codeName(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL: return "SQLITE_FULL";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_PERM: return "SQLITE_PERM";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_NOMEM: return "SQLITE_NOMEM";
    default: return "SQLite error " + std::to_string(rc);
    }
}
} // namespace

StatusCode statusCodeFor(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL: return StatusCode::ResourceExhausted;
    case SQLITE_NOMEM: return StatusCode::ResourceExhausted;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return StatusCode::Unavailable;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_CONSTRAINT: return StatusCode::InvalidArgument;
    default: return StatusCode::Internal;
    }
}

// --- Statement -------------------------------------------------------------

Statement::~Statement()
{
    sqlite3_finalize(m_stmt);
}

Statement &Statement::operator=(Statement &&other) noexcept
{
    if (this != &other) {
        sqlite3_finalize(m_stmt);
        m_stmt = other.m_stmt;
        other.m_stmt = nullptr;
    }
    return *this;
}

void Statement::bind(int i, std::int64_t v) { sqlite3_bind_int64(m_stmt, i, v); }
void Statement::bind(int i, double v) { sqlite3_bind_double(m_stmt, i, v); }
void Statement::bind(int i, std::string_view t) { sqlite3_bind_text(m_stmt, i, t.data(), int(t.size()), SQLITE_TRANSIENT); }
void Statement::bindStatic(int i, std::string_view t) { sqlite3_bind_text(m_stmt, i, t.data(), int(t.size()), SQLITE_STATIC); }
void Statement::bindNull(int i) { sqlite3_bind_null(m_stmt, i); }
int Statement::step() { return sqlite3_step(m_stmt); }
void Statement::reset() { sqlite3_reset(m_stmt); }
std::int64_t Statement::int64At(int c) const { return sqlite3_column_int64(m_stmt, c); }
double Statement::doubleAt(int c) const { return sqlite3_column_double(m_stmt, c); }
bool Statement::isNullAt(int c) const { return sqlite3_column_type(m_stmt, c) == SQLITE_NULL; }

std::string Statement::textAt(int c) const
{
    const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, c));
    return p ? std::string(p, std::size_t(sqlite3_column_bytes(m_stmt, c))) : std::string();
}

// --- Connection ------------------------------------------------------------

Result<Connection> Connection::open(const std::string &path, Mode mode)
{
    Connection c;
    c.m_path = path;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    if (mode == Mode::ReadWriteCreate)
        flags |= SQLITE_OPEN_CREATE;
    const int rc = sqlite3_open_v2(path.c_str(), &c.m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        Status s = c.error(rc, "cannot open");
        return s;
    }
    sqlite3_extended_result_codes(c.m_db, 1);
    sqlite3_busy_timeout(c.m_db, kBusyTimeoutMs);
    return c;
}

Connection::~Connection()
{
    sqlite3_close_v2(m_db);
}

Connection::Connection(Connection &&other) noexcept : m_db(other.m_db), m_path(std::move(other.m_path))
{
    other.m_db = nullptr;
}

Connection &Connection::operator=(Connection &&other) noexcept
{
    if (this != &other) {
        sqlite3_close_v2(m_db);
        m_db = other.m_db;
        m_path = std::move(other.m_path);
        other.m_db = nullptr;
    }
    return *this;
}

Status Connection::error(int rc, std::string_view what) const
{
    std::string reason = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    if (reason == "not an error" || reason.empty())
        reason = sqlite3_errstr(rc);
    return {statusCodeFor(rc),
            "trace database '" + m_path + "': " + std::string(what) + ": " + reason + " (" + codeName(rc) + ")"};
}

Status Connection::exec(std::string_view sql, std::string_view what)
{
    char *message = nullptr;
    const int rc = sqlite3_exec(m_db, std::string(sql).c_str(), nullptr, nullptr, &message);
    sqlite3_free(message);
    return rc == SQLITE_OK ? Status::ok() : error(rc, what);
}

Result<Statement> Connection::prepare(std::string_view sql) const
{
    sqlite3_stmt *stmt = nullptr;
    const int rc = sqlite3_prepare_v3(m_db, sql.data(), int(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK)
        return error(rc, "cannot prepare '" + std::string(sql.substr(0, 60)) + "'");
    return Statement(stmt);
}

Result<std::int64_t> Connection::queryInt(std::string_view sql, std::int64_t fallback) const
{
    auto stmt = prepare(sql);
    if (!stmt)
        return stmt.status();
    const int rc = stmt->step();
    if (rc == SQLITE_ROW)
        return stmt->int64At(0);
    if (rc == SQLITE_DONE)
        return fallback;
    return error(rc, "query '" + std::string(sql.substr(0, 60)) + "'");
}

Result<std::string> Connection::queryText(std::string_view sql) const
{
    auto stmt = prepare(sql);
    if (!stmt)
        return stmt.status();
    const int rc = stmt->step();
    if (rc == SQLITE_ROW)
        return stmt->textAt(0);
    if (rc == SQLITE_DONE)
        return std::string();
    return error(rc, "query '" + std::string(sql.substr(0, 60)) + "'");
}

std::int64_t Connection::lastInsertId() const
{
    return sqlite3_last_insert_rowid(m_db);
}

// --- Transaction -----------------------------------------------------------

Transaction::~Transaction()
{
    if (m_open)
        sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

Status Transaction::begin()
{
    Status s = m_db.exec("BEGIN IMMEDIATE", "begin a transaction");
    m_open = s.isOk();
    return s;
}

Status Transaction::commit()
{
    Status s = m_db.exec("COMMIT", "commit");
    if (s)
        m_open = false;
    return s;
}

} // namespace bp::sqlite
