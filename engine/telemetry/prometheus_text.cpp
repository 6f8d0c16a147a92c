#include "prometheus_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace bp::prom {

namespace {

bool nameStart(char c)
{
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool nameChar(char c)
{
    return nameStart(c) || std::isdigit(static_cast<unsigned char>(c));
}
bool labelStart(char c)
{
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool labelChar(char c)
{
    return labelStart(c) || std::isdigit(static_cast<unsigned char>(c));
}
bool blank(char c)
{
    return c == ' ' || c == '\t';
}

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

// Go's strconv.ParseFloat, as the Prometheus reference parser uses it:
// decimal and exponent forms, an optional sign, Inf/Infinity/NaN in any case.
std::optional<double> parseFloat(std::string_view s)
{
    if (s.empty())
        return std::nullopt;
    bool negative = false;
    std::string_view body = s;
    if (body.front() == '+' || body.front() == '-') {
        negative = body.front() == '-';
        body.remove_prefix(1);
    }
    const std::string word = lower(body);
    if (word == "inf" || word == "infinity")
        return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    if (word == "nan")
        return std::numeric_limits<double>::quiet_NaN();
    if (body.empty() || !(std::isdigit(static_cast<unsigned char>(body.front())) || body.front() == '.'))
        return std::nullopt;
    double v = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
    if (ec != std::errc() || end != body.data() + body.size())
        return std::nullopt;
    return negative ? -v : v;
}

std::optional<MetricType> parseType(std::string_view s)
{
    if (s == "counter")
        return MetricType::Counter;
    if (s == "gauge")
        return MetricType::Gauge;
    if (s == "histogram")
        return MetricType::Histogram;
    if (s == "summary")
        return MetricType::Summary;
    if (s == "untyped")
        return MetricType::Untyped;
    return std::nullopt;
}

// The family a sample belongs to: histogram and summary parts share their
// family's TYPE line.
std::string familyOf(const std::string &name, const std::map<std::string, MetricType> &types)
{
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        if (name.size() > suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            std::string base = name.substr(0, name.size() - suffix.size());
            auto t = types.find(base);
            if (t != types.end() && (t->second == MetricType::Histogram || t->second == MetricType::Summary))
                return base;
        }
    }
    return name;
}

class LineParser {
public:
    explicit LineParser(std::string_view line) : m_s(line) {}

    std::string error;

    void skipBlanks()
    {
        while (m_i < m_s.size() && blank(m_s[m_i]))
            ++m_i;
    }
    bool atEnd() const { return m_i >= m_s.size(); }
    char peek() const { return atEnd() ? '\0' : m_s[m_i]; }
    void advance() { ++m_i; }

    std::optional<std::string> name()
    {
        if (atEnd() || !nameStart(m_s[m_i])) {
            error = "expected a metric name";
            return std::nullopt;
        }
        const std::size_t start = m_i;
        while (m_i < m_s.size() && nameChar(m_s[m_i]))
            ++m_i;
        return std::string(m_s.substr(start, m_i - start));
    }

    // After '{': label pairs up to and including '}'.
    bool labels(std::map<std::string, std::string> &out)
    {
        for (;;) {
            skipBlanks();
            if (peek() == '}') {
                ++m_i;
                return true;
            }
            if (atEnd() || !labelStart(m_s[m_i])) {
                error = "expected a label name or '}'";
                return false;
            }
            const std::size_t start = m_i;
            while (m_i < m_s.size() && labelChar(m_s[m_i]))
                ++m_i;
            std::string key(m_s.substr(start, m_i - start));
            skipBlanks();
            if (peek() != '=') {
                error = "expected '=' after label '" + key + "'";
                return false;
            }
            ++m_i;
            skipBlanks();
            if (peek() != '"') {
                error = "expected '\"' to open the value of label '" + key + "'";
                return false;
            }
            ++m_i;
            std::string value;
            bool closed = false;
            while (m_i < m_s.size()) {
                const char c = m_s[m_i++];
                if (c == '"') {
                    closed = true;
                    break;
                }
                if (c == '\\') {
                    if (m_i >= m_s.size())
                        break;
                    const char e = m_s[m_i++];
                    if (e == '\\' || e == '"')
                        value += e;
                    else if (e == 'n')
                        value += '\n';
                    else {
                        error = std::string("unknown escape '\\") + e + "' in label '" + key + "'";
                        return false;
                    }
                    continue;
                }
                value += c;
            }
            if (!closed) {
                error = "unterminated value of label '" + key + "'";
                return false;
            }
            if (!out.emplace(key, std::move(value)).second) {
                error = "label '" + key + "' given twice";
                return false;
            }
            skipBlanks();
            if (peek() == ',') {
                ++m_i;
                continue;
            }
            if (peek() != '}') {
                error = "expected ',' or '}' after label '" + key + "'";
                return false;
            }
        }
    }

    std::string_view token()
    {
        const std::size_t start = m_i;
        while (m_i < m_s.size() && !blank(m_s[m_i]))
            ++m_i;
        return m_s.substr(start, m_i - start);
    }
    std::string_view rest() const { return m_s.substr(std::min(m_i, m_s.size())); }

private:
    std::string_view m_s;
    std::size_t m_i = 0;
};

std::string unescapeHelp(std::string_view s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
            out += s[i + 1] == 'n' ? '\n' : '\\';
            ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}

} // namespace

Result<Exposition> parse(std::string_view text)
{
    Exposition out;
    std::map<std::string, bool> familySeen; // a sample of the family was read
    std::size_t lineNo = 0;
    std::size_t pos = 0;
    auto fail = [&](const std::string &what) {
        return Status(StatusCode::InvalidArgument, "line " + std::to_string(lineNo) + ": " + what);
    };
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        LineParser p(line);
        p.skipBlanks();
        if (p.atEnd())
            continue;
        if (p.peek() == '#') {
            std::string_view rest = line.substr(line.find('#') + 1);
            LineParser c(rest);
            c.skipBlanks();
            const std::string_view keyword = c.token();
            if (keyword != "HELP" && keyword != "TYPE")
                continue; // a plain comment
            c.skipBlanks();
            auto name = c.name();
            if (!name)
                return fail(std::string(keyword) + " line: " + c.error);
            if (!c.atEnd() && !blank(c.peek()))
                return fail("bad character in metric name '" + *name + "'");
            c.skipBlanks();
            if (keyword == "HELP") {
                if (out.help.count(*name))
                    return fail("second HELP line for '" + *name + "'");
                out.help[*name] = unescapeHelp(c.rest());
                continue;
            }
            const std::string_view typeWord = c.token();
            c.skipBlanks();
            auto type = parseType(typeWord);
            if (!type || !c.atEnd())
                return fail("unknown metric type '" + std::string(c.atEnd() ? typeWord : c.rest()) +
                            "' for '" + *name + "'");
            if (out.types.count(*name))
                return fail("second TYPE line for '" + *name + "'");
            if (familySeen.count(*name))
                return fail("TYPE line for '" + *name + "' after its samples");
            out.types[*name] = *type;
            continue;
        }
        Sample s;
        auto name = p.name();
        if (!name)
            return fail(p.error);
        s.name = std::move(*name);
        if (p.peek() == '{') {
            p.advance();
            if (!p.labels(s.labels))
                return fail(p.error);
        }
        LineParser &q = p;
        if (!q.atEnd() && !blank(q.peek()))
            return fail("bad character after metric name '" + s.name + "'");
        q.skipBlanks();
        const std::string_view valueText = q.token();
        if (valueText.empty())
            return fail("sample '" + s.name + "' has no value");
        auto value = parseFloat(valueText);
        if (!value)
            return fail("'" + std::string(valueText) + "' is not a number (sample '" + s.name + "')");
        s.value = *value;
        q.skipBlanks();
        if (!q.atEnd()) {
            const std::string_view ts = q.token();
            std::int64_t t = 0;
            auto [e, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
            if (ec != std::errc() || e != ts.data() + ts.size())
                return fail("'" + std::string(ts) + "' is not a timestamp (sample '" + s.name + "')");
            s.timestampMs = t;
            q.skipBlanks();
            if (!q.atEnd())
                return fail("unexpected text after the timestamp of '" + s.name + "'");
        }
        familySeen[familyOf(s.name, out.types)] = true;
        out.samples.push_back(std::move(s));
    }
    return out;
}

std::optional<double> Exposition::sum(std::string_view name,
                                      const std::map<std::string, std::string> &match) const
{
    std::optional<double> total;
    for (const Sample &s : samples) {
        if (s.name != name)
            continue;
        bool ok = true;
        for (const auto &[k, v] : match) {
            auto it = s.labels.find(k);
            if (it == s.labels.end() || it->second != v) {
                ok = false;
                break;
            }
        }
        if (ok)
            total = total.value_or(0.0) + s.value;
    }
    return total;
}

std::optional<double> Exposition::mean(std::string_view name) const
{
    double total = 0;
    int n = 0;
    for (const Sample &s : samples)
        if (s.name == name) {
            total += s.value;
            ++n;
        }
    return n ? std::optional<double>(total / n) : std::nullopt;
}

bool Exposition::has(std::string_view name) const
{
    return std::any_of(samples.begin(), samples.end(), [&](const Sample &s) { return s.name == name; });
}

bool Exposition::hasPrefix(std::string_view prefix) const
{
    return std::any_of(samples.begin(), samples.end(), [&](const Sample &s) {
        return std::string_view(s.name).substr(0, prefix.size()) == prefix;
    });
}

} // namespace bp::prom
