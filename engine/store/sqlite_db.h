// A thin RAII layer over the sqlite3 C API: a connection and prepared
// statements, with SQLite result codes turned into Status values whose
// message names the database file, what was being done and SQLite's reason.
//
// Threading: a Connection and its Statements belong to one thread at a time
// (the store guards its connection with a mutex; the trace sink's writer
// thread owns its own connection). Not copyable; movable.
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace bp::sqlite {

// Maps an SQLite result code to a StatusCode: FULL -> ResourceExhausted,
// READONLY/CANTOPEN/PERM/IOERR/BUSY/LOCKED -> Unavailable,
// NOTADB/CORRUPT -> InvalidArgument, anything else -> Internal.
StatusCode statusCodeFor(int sqliteCode);

class Statement {
public:
    Statement() = default;
    explicit Statement(sqlite3_stmt *stmt) : m_stmt(stmt) {}
    ~Statement();
    Statement(Statement &&other) noexcept : m_stmt(other.m_stmt) { other.m_stmt = nullptr; }
    Statement &operator=(Statement &&other) noexcept;
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;

    bool valid() const { return m_stmt != nullptr; }

    // Parameters are 1-based, as in SQLite. Text is copied (SQLITE_TRANSIENT)
    // unless bindStatic is used for text that outlives the next step().
    void bind(int index, std::int64_t value);
    void bind(int index, double value);
    void bind(int index, std::string_view text);
    void bindStatic(int index, std::string_view text);
    void bindNull(int index);

    // SQLITE_ROW, SQLITE_DONE or an error code.
    int step();
    // Ready for the next execution; bindings are kept.
    void reset();

    // Columns are 0-based, as in SQLite.
    std::int64_t int64At(int column) const;
    double doubleAt(int column) const;
    std::string textAt(int column) const;
    bool isNullAt(int column) const;

private:
    sqlite3_stmt *m_stmt = nullptr;
};

class Connection {
public:
    enum class Mode { ReadWriteCreate, ReadWrite };

    // Opens (or creates) `path`. Sets a busy timeout so that two connections
    // to the same file (the store and the sink's writer) wait for each other
    // instead of failing.
    static Result<Connection> open(const std::string &path, Mode mode);

    Connection() = default;
    ~Connection();
    Connection(Connection &&other) noexcept;
    Connection &operator=(Connection &&other) noexcept;
    Connection(const Connection &) = delete;
    Connection &operator=(const Connection &) = delete;

    bool valid() const { return m_db != nullptr; }
    sqlite3 *handle() const { return m_db; }
    const std::string &path() const { return m_path; }

    // Runs one or more statements without results.
    Status exec(std::string_view sql, std::string_view what);
    Result<Statement> prepare(std::string_view sql) const;
    // Runs a query whose first row's first column is an integer (PRAGMAs,
    // counts). `fallback` when there is no row.
    Result<std::int64_t> queryInt(std::string_view sql, std::int64_t fallback = 0) const;
    Result<std::string> queryText(std::string_view sql) const;

    std::int64_t lastInsertId() const;

    // A Status for a failed call: "trace database 'PATH': WHAT: SQLite's
    // message (SQLITE_FULL)".
    Status error(int rc, std::string_view what) const;

private:
    sqlite3 *m_db = nullptr;
    std::string m_path;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when not committed.
class Transaction {
public:
    explicit Transaction(Connection &db) : m_db(db) {}
    ~Transaction();
    Status begin();
    Status commit();

private:
    Connection &m_db;
    bool m_open = false;
};

} // namespace bp::sqlite
