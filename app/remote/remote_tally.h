// What a remote target's answers add up to, for the session's summary
// (http_remote_target.h, finish()): the answers by HTTP status or failure
// key, the TTFT, TPOT and inter-token latencies of the good ones, and the
// most requests on the wire at once.
//
// Threading: the remote target's HTTP thread.
#pragma once

#include "remote_answer.h"

#include "engine/core/histogram.h"

#include <nlohmann/json.hpp>

#include <QString>

#include <cstdint>
#include <map>

namespace bp::remote {

class AnswerTally {
public:
    // A request went out with `inFlight` on the wire, itself included.
    void sent(int inFlight) { m_maxInFlight = std::max(m_maxInFlight, inFlight); }
    // An answer, or a request that never went out (its key only).
    void record(const RemoteAnswer &a);

    int maxInFlight() const { return m_maxInFlight; }
    // {"http_status": {key: count}, "ttft_ms", "tpot_ms", "itl_ms": {count, mean, p50, p90, p99, max}}
    nlohmann::json json() const;

private:
    std::map<QString, std::uint64_t> m_httpCounts;
    LatencyHistogram m_ttft, m_tpot, m_itl;
    int m_maxInFlight = 0;
};

} // namespace bp::remote
