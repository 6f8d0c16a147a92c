#include "trace_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>

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

bool splitThree(std::string_view line, std::string_view out[3])
{
    for (int i = 0; i < 3; ++i) {
        const auto comma = line.find(',');
        if (i < 2 && comma == std::string_view::npos)
            return false;
        out[i] = trim(i < 2 ? line.substr(0, comma) : line);
        if (i < 2)
            line.remove_prefix(comma + 1);
    }
    return out[2].find(',') == std::string_view::npos;
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

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
long long daysFromCivil(int y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const long long era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = unsigned(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

// "2023-11-16 18:15:46.6805900" -> seconds since the epoch
bool parseTimestamp(std::string_view s, double &out)
{
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
        s[16] != ':')
        return false;
    int y, mo, d, h, mi, sec;
    if (!parseInt(s.substr(0, 4), y) || !parseInt(s.substr(5, 2), mo) || !parseInt(s.substr(8, 2), d) ||
        !parseInt(s.substr(11, 2), h) || !parseInt(s.substr(14, 2), mi) || !parseInt(s.substr(17, 2), sec))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 || mi < 0 || sec < 0)
        return false;
    double frac = 0;
    if (s.size() > 19) {
        if (s[19] != '.')
            return false;
        double scale = 0.1;
        for (char c : s.substr(20)) {
            if (c < '0' || c > '9')
                return false;
            frac += (c - '0') * scale;
            scale /= 10;
        }
    }
    out = double(daysFromCivil(y, unsigned(mo), unsigned(d))) * 86400.0 + h * 3600.0 + mi * 60.0 + sec + frac;
    return true;
}

} // namespace

Result<ParsedTrace> parseTraceText(const std::string &text, const TraceParseOptions &options)
{
    ParsedTrace trace;
    std::size_t pos = 0, lineNo = 0;
    bool haveHeader = false, haveFirst = false;
    double first = 0;
    std::size_t errorCount = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos)
            nl = text.size();
        const std::string_view line = trim(std::string_view(text).substr(pos, nl - pos));
        pos = nl + 1;
        ++lineNo;
        if (line.empty())
            continue;
        if (!haveHeader) {
            std::string_view cols[3];
            if (!splitThree(line, cols))
                return Status(StatusCode::InvalidArgument,
                              "line 1: expected a header 'TIMESTAMP,ContextTokens,GeneratedTokens' or "
                              "'arrival_s,input_tokens,output_tokens'");
            if (cols[0] == "TIMESTAMP" && cols[1] == "ContextTokens" && cols[2] == "GeneratedTokens")
                trace.format = TraceFormat::Azure;
            else if (cols[0] == "arrival_s" && cols[1] == "input_tokens" && cols[2] == "output_tokens")
                trace.format = TraceFormat::Plain;
            else
                return Status(StatusCode::InvalidArgument,
                              "line " + std::to_string(lineNo) + ": unknown header '" + std::string(line) +
                                  "' (expected TIMESTAMP,ContextTokens,GeneratedTokens or "
                                  "arrival_s,input_tokens,output_tokens)");
            haveHeader = true;
            continue;
        }
        ++trace.linesRead;
        std::string_view cols[3];
        TraceRow row;
        double t = 0;
        std::string problem;
        if (!splitThree(line, cols))
            problem = "expected 3 comma-separated fields";
        else if (trace.format == TraceFormat::Azure ? !parseTimestamp(cols[0], t) : !parseDouble(cols[0], t))
            problem = "bad arrival time '" + std::string(cols[0]) + "'";
        else if (!parseInt(cols[1], row.inputTokens) || row.inputTokens < 1)
            problem = "bad input token count '" + std::string(cols[1]) + "' (a positive integer)";
        else if (!parseInt(cols[2], row.outputTokens) || row.outputTokens < 0)
            problem = "bad output token count '" + std::string(cols[2]) + "' (a non-negative integer)";
        else if (trace.format == TraceFormat::Plain && t < 0)
            problem = "negative arrival time";
        if (!problem.empty()) {
            if (options.badRows == BadRowPolicy::RejectFile)
                return Status(StatusCode::InvalidArgument, "line " + std::to_string(lineNo) + ": " + problem);
            if (trace.errors.size() < options.maxErrorsKept)
                trace.errors.push_back({lineNo, problem});
            ++errorCount;
        }
        // Per line read, so that a file of bad rows can be cancelled too.
        if (options.progress && (trace.linesRead % 4096) == 0 && !options.progress(pos, text.size()))
            return Status(StatusCode::InvalidArgument, "import cancelled");
        if (!problem.empty())
            continue;
        if (!haveFirst || t < first) {
            first = t;
            haveFirst = true;
        }
        row.arrivalS = t;
        trace.rows.push_back(row);
    }
    if (!haveHeader)
        return Status(StatusCode::InvalidArgument, "the file is empty");
    if (trace.rows.empty())
        return Status(StatusCode::InvalidArgument,
                      "no valid rows (" + std::to_string(errorCount) + " malformed)");
    // offsets from the earliest arrival, in arrival order
    for (TraceRow &r : trace.rows)
        r.arrivalS -= first;
    std::stable_sort(trace.rows.begin(), trace.rows.end(),
                     [](const TraceRow &a, const TraceRow &b) { return a.arrivalS < b.arrivalS; });
    trace.skippedRows = errorCount;
    if (errorCount > trace.errors.size())
        trace.errors.push_back({0, std::to_string(errorCount - trace.errors.size()) + " more malformed rows"});
    if (options.progress)
        options.progress(text.size(), text.size());
    return trace;
}

Result<ParsedTrace> parseTraceFile(const std::string &path, const TraceParseOptions &options)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Status(StatusCode::NotFound, "cannot open trace file '" + path + "'");
    std::stringstream buffer;
    buffer << in.rdbuf();
    if (in.bad())
        return Status(StatusCode::NotFound, "cannot read trace file '" + path + "'");
    auto result = parseTraceText(buffer.str(), options);
    if (!result)
        return Status(result.status().code(), path + ": " + result.status().message());
    return result;
}

} // namespace bp
