// Internal to the trace readers: Azure's timestamps (trace_csv.cpp reads the rows).
#include "trace_rows.h"

#include <charconv>

namespace bp::trace_rows {

namespace {

bool parseInt(std::string_view s, int &out)
{
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
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

// Azure timestamps -> seconds since the epoch. 2023: "2023-11-16 18:15:46.6805900";
// 2024: "2024-05-10 00:00:00.009930+00:00", and "2024-05-12 00:00:00+00:00" on
// whole seconds. Also "T" between date and time, and a "Z" or ±HH[:]MM offset.
} // namespace

bool parseAzureTimestamp(std::string_view s, double &out)
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
    std::string_view rest = s.substr(19);
    double frac = 0;
    if (!rest.empty() && rest.front() == '.') {
        rest.remove_prefix(1);
        double scale = 0.1;
        std::size_t digits = 0;
        while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
            frac += (rest.front() - '0') * scale;
            scale /= 10;
            rest.remove_prefix(1);
            ++digits;
        }
        if (digits == 0)
            return false;
    }
    double offset = 0; // seconds east of UTC
    if (rest == "Z") {
        rest = {};
    } else if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
        const int sign = rest.front() == '+' ? 1 : -1;
        rest.remove_prefix(1);
        int oh = 0, om = 0;
        const bool colon = rest.size() == 5 && rest[2] == ':';
        if ((!colon && rest.size() != 4) || !parseInt(rest.substr(0, 2), oh) ||
            !parseInt(rest.substr(colon ? 3 : 2, 2), om) || oh > 23 || om > 59 || oh < 0 || om < 0)
            return false;
        offset = sign * (oh * 3600.0 + om * 60.0);
        rest = {};
    }
    if (!rest.empty())
        return false;
    out = double(daysFromCivil(y, unsigned(mo), unsigned(d))) * 86400.0 + h * 3600.0 + mi * 60.0 + sec +
          frac - offset;
    return true;
}

} // namespace bp::trace_rows
