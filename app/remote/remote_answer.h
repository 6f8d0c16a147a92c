// How one remote exchange becomes what a local request would have been: a
// RequestRecord for the trace store and a Response for the caller, with
// the outcome classified the way the engine classifies its own,
// as pure functions (tested without a server):
//  - timing: queue_wait = waiting for a connection, compute = on the wire
//    (request written -> answer complete), total = scheduled arrival ->
//    answer complete; TTFT = scheduled arrival -> first token event
//    (streamed) or the first byte of the answer (OIP, when it generates);
//    TPOT = (last - first token event) / (output tokens - 1), the output
//    tokens the answer's usage says (else its token events: an event may
//    hold two tokens), and the inter-token gaps (between events), stored like the engine's (requests.tpot_ns,
//    itl_*), so a remote session's TPOT and goodput are computed from its rows;
//  - status: a timeout is deadline_exceeded, a refused or broken connection
//    unavailable, an HTTP status maps through statusForHttp (429 queue_full,
//    4xx invalid/not found/out of range, 5xx internal/unavailable); the
//    session summary counts them as rejected or failed by that status
//    (engine/store/session_summary.h: remoteRequestRejected);
//  - `httpKey`: the client's tally key ("200", "429", "timeout",
//    "transport_error", "not_sent", "client_shed").
#pragma once

#include "http1_connection.h"
#include "remote_codec.h"

#include "engine/core/records.h"
#include "engine/core/request.h"

#include <QString>

namespace bp::remote {

struct RemoteAnswer {
    RequestRecord record;
    Response response;
    QString httpKey;
};

// The answer to `request`, sent at `sentAt`, that came back as `result`.
// Streamed protocols pass the SSE reader that read its body and the first
// KiBs of that body (`streamedBody`, for an error's text); `cancelling`:
// the replay is being cancelled (a transport error then reads as
// shutting_down).
RemoteAnswer answerOf(const Request &request, TimePoint sentAt, const HttpResult &result, Protocol protocol,
                      const SseReader &sse, const QByteArray &streamedBody, bool cancelling);

// A request that never went out: failed at `now` with `status` (shutting_down
// when the replay was cancelled, queue_full when the client shed it).
RemoteAnswer unsentAnswer(const Request &request, TimePoint now, Status status, const QString &httpKey);

} // namespace bp::remote
