#include "remote_tally.h"

namespace bp::remote {

namespace {

nlohmann::json latencyJson(const LatencyHistogram &h)
{
    auto ms = [](std::int64_t ns) { return double(ns) / 1e6; };
    return {{"count", h.count()},         {"mean", h.mean() / 1e6},      {"p50", ms(h.quantile(0.5))},
            {"p90", ms(h.quantile(0.9))}, {"p99", ms(h.quantile(0.99))}, {"max", ms(h.max())}};
}

} // namespace

void AnswerTally::record(const RemoteAnswer &a)
{
    ++m_httpCounts[a.httpKey];
    if (!a.response.status.isOk())
        return;
    if (a.record.timeToFirstToken > Duration::zero())
        m_ttft.record(a.record.timeToFirstToken.count());
    if (a.record.timePerOutputToken > Duration::zero())
        m_tpot.record(a.record.timePerOutputToken.count());
    for (Duration gap : a.record.interTokenLatencies)
        m_itl.record(gap.count());
}

nlohmann::json AnswerTally::json() const
{
    nlohmann::json http = nlohmann::json::object();
    for (const auto &[key, n] : m_httpCounts)
        http[key.toStdString()] = n;
    return {{"http_status", http},
            {"ttft_ms", latencyJson(m_ttft)},
            {"tpot_ms", latencyJson(m_tpot)},
            {"itl_ms", latencyJson(m_itl)}};
}

} // namespace bp::remote
