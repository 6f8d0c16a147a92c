// TraceStore: imported traces.
#include "trace_store.h"

#include "sqlite_db.h"

#include "engine/workload/prefix_tokens.h"

#include <sqlite3.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>

namespace bp {

namespace {

constexpr const char *kTraceColumns = "id, name, source_path, format, imported_at_us, row_count, "
                                      "skipped_rows, duration_s, block_tokens FROM traces";

TraceInfo readTrace(const sqlite::Statement &st)
{
    TraceInfo t;
    t.id = st.int64At(0);
    t.name = st.textAt(1);
    t.sourcePath = st.textAt(2);
    t.format = parseTraceFormat(st.textAt(3)).value_or(TraceFormat::Plain);
    t.importedAtUs = st.int64At(4);
    t.rows = std::uint64_t(st.int64At(5));
    t.skippedRows = std::uint64_t(st.int64At(6));
    t.durationS = st.doubleAt(7);
    t.blockTokens = int(st.int64At(8));
    return t;
}

Status cancelled()
{
    return {StatusCode::InvalidArgument, "import cancelled"};
}

// "46,47,48" (what the hash_ids column holds)
std::string joinIds(const PrefixBlocks &ids)
{
    std::string s;
    for (std::int64_t id : ids) {
        if (!s.empty())
            s += ',';
        s += std::to_string(id);
    }
    return s;
}

bool splitIds(std::string_view text, PrefixBlocks &out)
{
    while (!text.empty()) {
        const auto comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        std::int64_t v = 0;
        const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
        if (r.ec != std::errc() || r.ptr != item.data() + item.size())
            return false;
        out.push_back(v);
        if (comma == std::string_view::npos)
            break;
        text.remove_prefix(comma + 1);
    }
    return true;
}

// Parsing is ~80% of an import's time, inserting the rest.
constexpr double kParseShare = 0.8;

// Inserts one trace and its rows inside one transaction; the caller holds
// the store's lock. `progress(rowsDone)` may cancel between chunks.
Result<std::int64_t> insertTrace(sqlite::Connection &db, const std::string &name,
                                 const std::string &sourcePath, TraceFormat format,
                                 const std::vector<TraceRow> &rows, std::uint64_t skippedRows,
                                 const std::vector<PrefixBlocks> &hashIds, int blockTokens,
                                 const std::function<bool(std::size_t)> &progress)
{
    sqlite::Transaction tx(db);
    if (Status s = tx.begin(); !s)
        return s;
    auto head = db.prepare("INSERT INTO traces (name, source_path, format, imported_at_us, row_count, "
                           "skipped_rows, duration_s, block_tokens) VALUES (?,?,?,?,?,?,?,?)");
    if (!head)
        return head.status();
    head->bind(1, name);
    head->bind(2, sourcePath);
    head->bindStatic(3, traceFormatName(format));
    head->bind(4, wallClockMicros());
    head->bind(5, std::int64_t(rows.size()));
    head->bind(6, std::int64_t(skippedRows));
    head->bind(7, rows.empty() ? 0.0 : rows.back().arrivalS);
    head->bind(8, std::int64_t(hashIds.empty() ? 0 : blockTokens));
    if (int rc = head->step(); rc != SQLITE_DONE)
        return db.error(rc, "store trace '" + name + "'");
    const std::int64_t id = db.lastInsertId();
    auto ins =
        db.prepare("INSERT INTO trace_requests (trace_id, idx, arrival_ns, input_tokens, output_tokens, "
                   "hash_ids, conversation_id, turn, think_time_ns) VALUES (?,?,?,?,?,?,?,?,?)");
    if (!ins)
        return ins.status();
    ins->bind(1, id);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        ins->bind(2, std::int64_t(i));
        ins->bind(3, std::int64_t(std::llround(rows[i].arrivalS * 1e9)));
        ins->bind(4, std::int64_t(rows[i].inputTokens));
        ins->bind(5, std::int64_t(rows[i].outputTokens));
        if (hashIds.empty())
            ins->bindNull(6);
        else
            ins->bind(6, joinIds(hashIds[i]));
        ins->bind(7, rows[i].conversation);
        ins->bind(8, std::int64_t(rows[i].turn));
        ins->bind(9, std::int64_t(std::llround(rows[i].thinkS * 1e9)));
        if (int rc = ins->step(); rc != SQLITE_DONE)
            return db.error(rc, "store row " + std::to_string(i) + " of trace '" + name + "'");
        ins->reset();
        if (progress && (i % 4096) == 4095 && !progress(i + 1))
            return cancelled();
    }
    if (Status s = tx.commit(); !s)
        return s;
    return id;
}

// ImportOptions::repeatTo: copies of `rows` back to back.
void repeatRows(std::vector<TraceRow> &rows, std::vector<PrefixBlocks> &hashIds, Duration to)
{
    if (rows.size() < 2 || to <= Duration::zero())
        return;
    const double span = rows.back().arrivalS - rows.front().arrivalS;
    const double period = span + span / double(rows.size() - 1);
    if (!(period > 0))
        return;
    const std::size_t n = rows.size();
    const auto copies = std::size_t(std::ceil(toSeconds(to) / period));
    rows.reserve(n * copies);
    if (!hashIds.empty())
        hashIds.reserve(n * copies);
    for (std::size_t c = 1; c < copies; ++c)
        for (std::size_t i = 0; i < n; ++i) {
            TraceRow r = rows[i];
            r.arrivalS += double(c) * period;
            rows.push_back(r);
            if (!hashIds.empty())
                hashIds.push_back(hashIds[i]);
        }
}

} // namespace

Result<ImportResult> TraceStore::importTrace(const std::string &csvPath, const ImportOptions &options)
{
    TraceParseOptions parse;
    parse.badRows = options.badRows;
    parse.format = options.format;
    parse.skipFailed = options.skipFailed;
    parse.blockTokens = options.blockTokens;
    if (options.progress)
        parse.progress = [&](std::size_t done, std::size_t total) {
            return options.progress(total ? kParseShare * double(done) / double(total) : 0.0);
        };
    auto parsed = parseTraceFile(csvPath, parse);
    if (!parsed)
        return parsed.status();
    const std::uint64_t skipped = parsed->skippedRows;
    std::string name = options.name;
    if (name.empty())
        name = std::filesystem::path(csvPath).stem().string();
    std::error_code ec;
    std::string absolute = std::filesystem::absolute(csvPath, ec).string();
    if (ec)
        absolute = csvPath;

    repeatRows(parsed->rows, parsed->hashIds, options.repeatTo);
    const auto &rows = parsed->rows;
    std::function<bool(std::size_t)> rowProgress;
    if (options.progress)
        rowProgress = [&](std::size_t done) {
            return options.progress(kParseShare + (1 - kParseShare) * double(done) / double(rows.size()));
        };
    std::int64_t traceId = 0;
    {
        std::lock_guard lock(m_mutex);
        auto id = insertTrace(*m_db, name, absolute, parsed->format, rows, skipped, parsed->hashIds,
                              parsed->blockTokens, rowProgress);
        if (!id)
            return id.status();
        traceId = *id;
    }
    if (options.progress)
        options.progress(1.0);

    auto stored = trace(traceId);
    if (!stored)
        return stored.status();
    ImportResult result;
    result.trace = std::move(stored.value());
    result.errors = std::move(parsed->errors);
    result.failedRows = parsed->failedRows;
    result.prefix = prefixReuse(parsed->hashIds);
    result.share = prefixShare(rows, parsed->hashIds, parsed->blockTokens);
    return result;
}

Result<TraceInfo> TraceStore::addTrace(const std::string &name, const std::string &sourcePath,
                                       TraceFormat format, const std::vector<TraceRow> &rows,
                                       std::uint64_t skippedRows, const std::vector<PrefixBlocks> &hashIds,
                                       int blockTokens)
{
    if (blockTokens < 1)
        return Status(StatusCode::InvalidArgument, "a trace's block size must be at least 1 token");
    if (!hashIds.empty() && hashIds.size() != rows.size())
        return Status(StatusCode::InvalidArgument, "hash ids for " + std::to_string(hashIds.size()) +
                                                       " rows, " + std::to_string(rows.size()) +
                                                       " rows given");
    for (std::size_t i = 1; i < rows.size(); ++i)
        if (rows[i].arrivalS < rows[i - 1].arrivalS)
            return Status(StatusCode::InvalidArgument, "trace rows must be in arrival order (row " +
                                                           std::to_string(i) +
                                                           " is earlier than its predecessor)");
    std::int64_t id = 0;
    {
        std::lock_guard lock(m_mutex);
        auto inserted =
            insertTrace(*m_db, name, sourcePath, format, rows, skippedRows, hashIds, blockTokens, {});
        if (!inserted)
            return inserted.status();
        id = *inserted;
    }
    return trace(id);
}

Result<std::vector<TraceInfo>> TraceStore::traces() const
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare(std::string("SELECT ") + kTraceColumns + " ORDER BY id DESC");
    if (!st)
        return st.status();
    std::vector<TraceInfo> out;
    int rc;
    while ((rc = st->step()) == SQLITE_ROW)
        out.push_back(readTrace(*st));
    if (rc != SQLITE_DONE)
        return m_db->error(rc, "list traces");
    return out;
}

Result<TraceInfo> TraceStore::trace(std::int64_t id) const
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare(std::string("SELECT ") + kTraceColumns + " WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, id);
    const int rc = st->step();
    if (rc == SQLITE_ROW)
        return readTrace(*st);
    if (rc == SQLITE_DONE)
        return Status(StatusCode::NotFound, "no trace " + std::to_string(id) + " in '" + m_path + "'");
    return m_db->error(rc, "read trace " + std::to_string(id));
}

Result<std::vector<TraceRow>> TraceStore::traceRows(std::int64_t id) const
{
    if (auto t = trace(id); !t)
        return t.status();
    std::lock_guard lock(m_mutex);
    auto st =
        m_db->prepare("SELECT arrival_ns, input_tokens, output_tokens, conversation_id, turn, think_time_ns "
                      "FROM trace_requests WHERE trace_id = ? ORDER BY idx");
    if (!st)
        return st.status();
    st->bind(1, id);
    std::vector<TraceRow> out;
    int rc;
    while ((rc = st->step()) == SQLITE_ROW)
        out.push_back({double(st->int64At(0)) / 1e9, int(st->int64At(1)), int(st->int64At(2)), st->int64At(3),
                       int(st->int64At(4)), double(st->int64At(5)) / 1e9});
    if (rc != SQLITE_DONE)
        return m_db->error(rc, "read trace " + std::to_string(id));
    return out;
}

Result<std::vector<PrefixBlocks>> TraceStore::traceHashIds(std::int64_t id) const
{
    auto t = trace(id);
    if (!t)
        return t.status();
    if (t->blockTokens == 0)
        return std::vector<PrefixBlocks>{};
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("SELECT idx, hash_ids FROM trace_requests WHERE trace_id = ? ORDER BY idx");
    if (!st)
        return st.status();
    st->bind(1, id);
    std::vector<PrefixBlocks> out;
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
        PrefixBlocks ids;
        if (!splitIds(st->textAt(1), ids))
            return Status(StatusCode::InvalidArgument, "trace " + std::to_string(id) + " row " +
                                                           std::to_string(st->int64At(0)) +
                                                           ": bad hash_ids '" + st->textAt(1) + "'");
        out.push_back(std::move(ids));
    }
    if (rc != SQLITE_DONE)
        return m_db->error(rc, "read the hash ids of trace " + std::to_string(id));
    return out;
}

Result<std::vector<std::int64_t>> TraceStore::traceWindowStarts(std::int64_t id, Duration window) const
{
    if (window <= Duration::zero())
        return Status(StatusCode::InvalidArgument, "a window must be longer than zero");
    if (auto t = trace(id); !t)
        return t.status();
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("SELECT arrival_ns FROM trace_requests WHERE trace_id = ? ORDER BY idx");
    if (!st)
        return st.status();
    st->bind(1, id);
    std::vector<std::int64_t> starts;
    std::int64_t row = 0;
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
        const std::int64_t k = st->int64At(0) / window.count();
        while (std::int64_t(starts.size()) <= k)
            starts.push_back(row);
        ++row;
    }
    if (rc != SQLITE_DONE)
        return m_db->error(rc, "read trace " + std::to_string(id));
    starts.push_back(row);
    return starts;
}

Status TraceStore::traceSlice(std::int64_t id, std::int64_t begin, std::int64_t end,
                              std::vector<TraceRow> &rows, std::vector<PrefixBlocks> &hashIds) const
{
    rows.clear();
    hashIds.clear();
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("SELECT arrival_ns, input_tokens, output_tokens, hash_ids FROM trace_requests "
                            "WHERE trace_id = ? AND idx >= ? AND idx < ? ORDER BY idx");
    if (!st)
        return st.status();
    st->bind(1, id);
    st->bind(2, begin);
    st->bind(3, end);
    rows.reserve(std::size_t(std::max<std::int64_t>(0, end - begin)));
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
        rows.push_back({double(st->int64At(0)) / 1e9, int(st->int64At(1)), int(st->int64At(2))});
        if (!st->isNullAt(3)) {
            hashIds.resize(rows.size());
            if (!splitIds(st->textAt(3), hashIds.back()))
                return Status(StatusCode::InvalidArgument,
                              "trace " + std::to_string(id) + ": bad hash_ids '" + st->textAt(3) + "'");
        }
    }
    if (rc != SQLITE_DONE)
        return m_db->error(rc, "read trace " + std::to_string(id));
    if (!hashIds.empty())
        hashIds.resize(rows.size());
    return Status::ok();
}

Status TraceStore::deleteTrace(std::int64_t id)
{
    std::lock_guard lock(m_mutex);
    auto st = m_db->prepare("DELETE FROM traces WHERE id = ?");
    if (!st)
        return st.status();
    st->bind(1, id);
    if (int rc = st->step(); rc != SQLITE_DONE)
        return m_db->error(rc, "delete trace " + std::to_string(id));
    if (sqlite3_changes(m_db->handle()) == 0)
        return {StatusCode::NotFound, "no trace " + std::to_string(id)};
    return Status::ok();
}

} // namespace bp
