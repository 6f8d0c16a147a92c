#include "trace_csv.h"
#include "trace_rows.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace bp {

namespace {

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\xef' ||
                          s.front() == '\xbb' || s.front() == '\xbf')) // BOM bytes
        s.remove_prefix(1);
    return s;
}

// Exactly `n` comma-separated fields, each trimmed.
bool splitFields(std::string_view line, std::size_t n, std::string_view *out)
{
    for (std::size_t i = 0; i < n; ++i) {
        const auto comma = line.find(',');
        const bool last = i + 1 == n;
        if (!last && comma == std::string_view::npos)
            return false;
        out[i] = trim(last ? line : line.substr(0, comma));
        if (!last)
            line.remove_prefix(comma + 1);
    }
    return out[n - 1].find(',') == std::string_view::npos;
}

bool parseInt(std::string_view s, int &out)
{
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parseDouble(std::string_view s, double &out)
{
    // from_chars for double is available in GCC 11+
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

struct FormatInfo {
    TraceFormat format;
    std::string_view name;
    std::vector<std::string_view> header; // CSV columns; empty for JSON Lines
};

const std::vector<FormatInfo> &formats()
{
    static const std::vector<FormatInfo> list = {
        {TraceFormat::Azure, "azure", {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}},
        {TraceFormat::Plain, "plain", {"arrival_s", "input_tokens", "output_tokens"}},
        {TraceFormat::BurstGpt,
         "burstgpt",
         {"Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"}},
        {TraceFormat::Mooncake, "mooncake", {}},
        {TraceFormat::GenAiPerf, "genai-perf", {}},
        {TraceFormat::MultiTurn, "multi-turn", {}},
    };
    return list;
}

const FormatInfo &info(TraceFormat f)
{
    return formats()[std::size_t(f)];
}

std::string joined(const std::vector<std::string_view> &cols)
{
    std::string s;
    for (std::string_view c : cols)
        s += (s.empty() ? "" : ",") + std::string(c);
    return s;
}

bool isJsonLines(TraceFormat f)
{
    return info(f).header.empty();
}

bool headerMatches(TraceFormat f, std::string_view line)
{
    const auto &want = info(f).header;
    std::vector<std::string_view> cols(want.size());
    if (!splitFields(line, want.size(), cols.data()))
        return false;
    for (std::size_t i = 0; i < want.size(); ++i)
        if (cols[i] != want[i])
            return false;
    return true;
}

std::string expectedHeaders()
{
    std::string s;
    for (const FormatInfo &f : formats())
        if (!f.header.empty())
            s += (s.empty() ? "" : " or ") + joined(f.header);
    return s;
}

// One CSV data line. Returns "" or the problem.
std::string parseCsvRow(TraceFormat format, std::string_view line, trace_rows::ParsedRow &out)
{
    const std::size_t n = info(format).header.size();
    std::string_view cols[6];
    if (!splitFields(line, n, cols))
        return "expected " + std::to_string(n) + " comma-separated fields";
    // BurstGPT: Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type
    const std::string_view in = format == TraceFormat::BurstGpt ? cols[2] : cols[1];
    const std::string_view outTok = format == TraceFormat::BurstGpt ? cols[3] : cols[2];
    if (format == TraceFormat::Azure ? !trace_rows::parseAzureTimestamp(cols[0], out.time)
                                     : !parseDouble(cols[0], out.time))
        return "bad arrival time '" + std::string(cols[0]) + "'";
    if (format != TraceFormat::Azure && out.time < 0)
        return "negative arrival time";
    if (!parseInt(in, out.row.inputTokens) || out.row.inputTokens < 1)
        return "bad input token count '" + std::string(in) + "' (a positive integer)";
    if (!parseInt(outTok, out.row.outputTokens) || out.row.outputTokens < 0)
        return "bad output token count '" + std::string(outTok) + "' (a non-negative integer)";
    out.failed = format == TraceFormat::BurstGpt && out.row.outputTokens == 0;
    return {};
}

// Feeds lines one at a time (from a string or a stream) and collects rows.
class TraceReader {
public:
    TraceReader(const TraceParseOptions &options, std::size_t totalBytes)
        : m_options(options), m_total(totalBytes)
    {
    }

    // Not OK: stop reading and return it.
    Status line(std::string_view raw, std::size_t bytesDone)
    {
        ++m_lineNo;
        const std::string_view line = trim(raw);
        if (line.empty())
            return Status::ok();
        if (!m_started) {
            m_started = true;
            if (Status s = start(line); !s)
                return s;
            if (!isJsonLines(m_trace.format))
                return Status::ok(); // the CSV header
        }
        ++m_trace.linesRead;
        trace_rows::ParsedRow row;
        std::string problem = isJsonLines(m_trace.format)
                                  ? trace_rows::parseJsonRow(m_trace.format, line, row, m_options.blockTokens)
                                  : parseCsvRow(m_trace.format, line, row);
        if (problem.empty() && m_trace.format == TraceFormat::MultiTurn)
            problem = conversationOf(row);
        const bool bad = !problem.empty();
        if (bad) {
            if (m_options.badRows == BadRowPolicy::RejectFile)
                return Status(StatusCode::InvalidArgument,
                              "line " + std::to_string(m_lineNo) + ": " + problem);
            if (m_trace.errors.size() < m_options.maxErrorsKept)
                m_trace.errors.push_back({m_lineNo, std::move(problem)});
            ++m_errorCount;
        }
        // Per line read, so that a file of bad rows can be cancelled too.
        if (m_options.progress && (m_trace.linesRead % 4096) == 0 && !m_options.progress(bytesDone, m_total))
            return Status(StatusCode::InvalidArgument, "import cancelled");
        if (bad)
            return Status::ok();
        if (row.failed) {
            ++m_trace.failedRows;
            if (m_options.skipFailed)
                return Status::ok();
        }
        if (!m_haveFirst || row.time < m_first) {
            m_first = row.time;
            m_haveFirst = true;
        }
        row.row.arrivalS = row.time;
        m_trace.rows.push_back(row.row);
        if (isJsonLines(m_trace.format)) {
            m_anyBlocks = m_anyBlocks || !row.blocks.empty();
            m_trace.hashIds.push_back(std::move(row.blocks));
        }
        return Status::ok();
    }

    Result<ParsedTrace> finish()
    {
        if (!m_started)
            return Status(StatusCode::InvalidArgument, "the file is empty");
        if (m_trace.rows.empty())
            return Status(StatusCode::InvalidArgument,
                          "no valid rows (" + std::to_string(m_errorCount) + " malformed" +
                              (m_trace.failedRows
                                   ? ", " + std::to_string(m_trace.failedRows) + " failed skipped"
                                   : std::string()) +
                              ")");
        if (!m_anyBlocks)
            m_trace.hashIds.clear();
        // offsets from the earliest arrival, in arrival order
        for (TraceRow &r : m_trace.rows)
            r.arrivalS -= m_first;
        sortByArrival();
        m_trace.skippedRows = m_errorCount;
        if (m_errorCount > m_trace.errors.size())
            m_trace.errors.push_back(
                {0, std::to_string(m_errorCount - m_trace.errors.size()) + " more malformed rows"});
        if (m_options.progress)
            m_options.progress(m_total, m_total);
        return std::move(m_trace);
    }

private:
    // multi-turn: numbers the conversation, checks the turn follows the
    // previous one, and dates a turn without a timestamp at the previous
    // turn's time plus its think time. Returns "" or the problem.
    std::string conversationOf(trace_rows::ParsedRow &row)
    {
        auto it = m_conversations.find(row.conversationKey);
        const std::string shown = row.conversationKey.substr(2);
        if (it == m_conversations.end()) {
            if (row.row.turn != 1)
                return "turn " + std::to_string(row.row.turn) + " of conversation " + shown +
                       " before its turn 1";
            it = m_conversations.emplace(row.conversationKey, Conversation{}).first;
            it->second.id = std::int64_t(m_conversations.size());
        } else if (row.row.turn != it->second.lastTurn + 1) {
            return "turn " + std::to_string(row.row.turn) + " of conversation " + shown + " follows turn " +
                   std::to_string(it->second.lastTurn) + " (turns are consecutive, in file order)";
        } else if (!row.hasTime) {
            row.time = it->second.lastTime + row.row.thinkS;
        } else if (row.time < it->second.lastTime) {
            return "turn " + std::to_string(row.row.turn) + " of conversation " + shown +
                   " is timed before turn " + std::to_string(it->second.lastTurn);
        }
        // Committed only for a row that is kept (a bad row leaves no trace).
        it->second.lastTurn = row.row.turn;
        it->second.lastTime = row.time;
        row.row.conversation = it->second.id;
        return {};
    }

    Status start(std::string_view line)
    {
        if (m_options.blockTokens < 1 || m_options.blockTokens > (1 << 20))
            return Status(StatusCode::InvalidArgument, "block size " + std::to_string(m_options.blockTokens) +
                                                           " tokens per hash id (1 to 1048576)");
        m_trace.blockTokens = m_options.blockTokens;
        if (m_options.format) {
            m_trace.format = *m_options.format;
            if (!isJsonLines(m_trace.format) && !headerMatches(m_trace.format, line))
                return Status(StatusCode::InvalidArgument,
                              "line " + std::to_string(m_lineNo) + ": expected the " +
                                  std::string(info(m_trace.format).name) + " header '" +
                                  joined(info(m_trace.format).header) + "', got '" + std::string(line) + "'");
            return Status::ok();
        }
        auto detected = detectTraceFormat(line);
        if (!detected)
            return Status(StatusCode::InvalidArgument,
                          "line " + std::to_string(m_lineNo) + ": " + detected.status().message());
        m_trace.format = *detected;
        return Status::ok();
    }

    void sortByArrival()
    {
        auto &rows = m_trace.rows;
        const auto earlier = [](const TraceRow &a, const TraceRow &b) { return a.arrivalS < b.arrivalS; };
        if (std::is_sorted(rows.begin(), rows.end(), earlier))
            return;
        if (m_trace.hashIds.empty()) {
            std::stable_sort(rows.begin(), rows.end(), earlier);
            return;
        }
        std::vector<std::size_t> order(rows.size());
        for (std::size_t i = 0; i < order.size(); ++i)
            order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return rows[a].arrivalS < rows[b].arrivalS; });
        std::vector<TraceRow> sortedRows;
        std::vector<PrefixBlocks> sortedIds;
        sortedRows.reserve(rows.size());
        sortedIds.reserve(rows.size());
        for (std::size_t i : order) {
            sortedRows.push_back(rows[i]);
            sortedIds.push_back(std::move(m_trace.hashIds[i]));
        }
        rows = std::move(sortedRows);
        m_trace.hashIds = std::move(sortedIds);
    }

    const TraceParseOptions &m_options;
    const std::size_t m_total;
    ParsedTrace m_trace;
    std::size_t m_lineNo = 0, m_errorCount = 0;
    bool m_started = false, m_haveFirst = false, m_anyBlocks = false;
    double m_first = 0;
    struct Conversation {
        std::int64_t id = 0;
        int lastTurn = 0;
        double lastTime = 0;
    };
    std::unordered_map<std::string, Conversation> m_conversations;
};

} // namespace

std::string_view traceFormatName(TraceFormat format)
{
    return info(format).name;
}

std::optional<TraceFormat> parseTraceFormat(std::string_view name)
{
    for (const FormatInfo &f : formats())
        if (f.name == name)
            return f.format;
    return std::nullopt;
}

std::string traceFormatNames()
{
    std::string s;
    for (const FormatInfo &f : formats())
        s += (s.empty() ? "" : ", ") + std::string(f.name);
    return s;
}

Result<TraceFormat> detectTraceFormat(std::string_view firstLine)
{
    const std::string_view line = trim(firstLine);
    if (!line.empty() && (line.front() == '{' || line.front() == '['))
        return trace_rows::detectJsonFormat(line);
    for (const FormatInfo &f : formats())
        if (!f.header.empty() && headerMatches(f.format, line))
            return f.format;
    return Status(StatusCode::InvalidArgument,
                  "unknown header '" + std::string(line.substr(0, 120)) + "' (expected " + expectedHeaders() +
                      ", or a Mooncake / genai-perf / multi-turn JSON Lines file)");
}

Result<ParsedTrace> parseTraceText(const std::string &text, const TraceParseOptions &options)
{
    TraceReader reader(options, text.size());
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos)
            nl = text.size();
        const std::string_view line = std::string_view(text).substr(pos, nl - pos);
        pos = nl + 1;
        if (Status s = reader.line(line, std::min(pos, text.size())); !s)
            return s;
    }
    return reader.finish();
}

Result<ParsedTrace> parseTraceFile(const std::string &path, const TraceParseOptions &options)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Status(StatusCode::NotFound, "cannot open trace file '" + path + "'");
    in.seekg(0, std::ios::end);
    const auto size = in.tellg();
    in.seekg(0, std::ios::beg);
    TraceReader reader(options, size > 0 ? std::size_t(size) : 0);
    std::string line;
    std::size_t done = 0;
    auto withPath = [&](const Status &s) { return Status(s.code(), path + ": " + s.message()); };
    while (std::getline(in, line)) {
        done += line.size() + 1;
        if (Status s = reader.line(line, done); !s)
            return withPath(s);
    }
    if (in.bad())
        return Status(StatusCode::NotFound, "cannot read trace file '" + path + "'");
    auto result = reader.finish();
    if (!result)
        return withPath(result.status());
    return result;
}

PrefixReuse prefixReuse(const std::vector<PrefixBlocks> &hashIds)
{
    PrefixReuse r;
    std::unordered_set<std::int64_t> seen;
    for (const PrefixBlocks &blocks : hashIds)
        for (std::int64_t id : blocks) {
            ++r.blocks;
            if (!seen.insert(id).second)
                ++r.reusedBlocks;
        }
    r.uniqueBlocks = seen.size();
    return r;
}

} // namespace bp
