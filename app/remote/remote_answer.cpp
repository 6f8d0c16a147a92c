#include "remote_answer.h"

#include <algorithm>

namespace bp::remote {

RemoteAnswer answerOf(const Request &req, TimePoint sentAt, const HttpResult &r, Protocol protocol,
                      const SseReader &sse, const QByteArray &streamedBody, bool cancelling)
{
    RemoteAnswer a;
    RequestRecord &rec = a.record;
    rec.id = req.id;
    rec.arrival = req.arrival;
    rec.inputTokens = int(req.tokens.size());
    rec.conversation = req.conversation;
    rec.turn = req.turn;
    rec.queueWait = std::max(Duration::zero(), Duration(sentAt - req.arrival));
    rec.compute = r.finished - r.started;
    rec.total = r.finished - req.arrival;
    const bool streamed = protocol != Protocol::Oip;
    Status status;
    if (!r.error.isEmpty()) {
        a.httpKey = r.timedOut ? QStringLiteral("timeout") : QStringLiteral("transport_error");
        status = Status(cancelling ? StatusCode::ShuttingDown
                                   : (r.timedOut ? StatusCode::DeadlineExceeded : StatusCode::Unavailable),
                        r.error.toStdString());
    } else {
        a.httpKey = QString::number(r.status);
        const QByteArray &body = streamed ? streamedBody : r.body;
        if (r.status < 200 || r.status >= 300) {
            status = Status(statusForHttp(r.status),
                            QStringLiteral("HTTP %1: %2").arg(r.status).arg(errorText(body)).toStdString());
        } else if (!streamed) {
            const OipAnswer oip = parseOipAnswer(r.body);
            if (!oip.error.isEmpty())
                status = Status(StatusCode::Internal, oip.error.toStdString());
            rec.outputTokens = oip.outputTokens;
            if (r.firstByte != TimePoint{} && req.maxNewTokens > 0)
                rec.timeToFirstToken = r.firstByte - req.arrival; // a non-streamed answer: its first byte
        } else if (!sse.error().isEmpty()) {
            status = Status(StatusCode::Internal, sse.error().toStdString());
        } else if (!sse.done()) {
            status = Status(StatusCode::Internal, "the event stream ended without data: [DONE]");
        } else {
            rec.outputTokens = sse.outputTokens();
            if (sse.firstToken())
                rec.timeToFirstToken = *sse.firstToken() - req.arrival;
            // Per output token, not per event: a server may send two tokens
            // in one event (llama-server, a UTF-8 character split between
            // them), and the steps are the tokens (vLLM's bench serve
            // divides by the output tokens too).
            if (sse.firstToken() && sse.lastToken() && sse.tokenEvents() > 1 && rec.outputTokens > 1) {
                rec.timePerOutputToken = (*sse.lastToken() - *sse.firstToken()) / (rec.outputTokens - 1);
                rec.interTokenLatencies = sse.gaps();
            }
        }
    }
    rec.status = status.code();
    if (!status.isOk()) {
        rec.timePerOutputToken = Duration::zero();
        rec.interTokenLatencies.clear();
    }
    Response &resp = a.response;
    resp.requestId = req.id;
    resp.status = std::move(status);
    resp.timing.queueWait = rec.queueWait;
    resp.timing.compute = rec.compute;
    resp.timing.total = rec.total;
    resp.timing.timeToFirstToken = rec.timeToFirstToken;
    resp.timing.timePerOutputToken = rec.timePerOutputToken;
    resp.timing.interTokenLatencies = rec.interTokenLatencies;
    return a;
}

RemoteAnswer unsentAnswer(const Request &request, TimePoint now, Status status, const QString &httpKey)
{
    RemoteAnswer a;
    RequestRecord &rec = a.record;
    rec.id = request.id;
    rec.arrival = request.arrival;
    rec.inputTokens = int(request.tokens.size());
    rec.conversation = request.conversation;
    rec.turn = request.turn;
    rec.total = std::max(Duration::zero(), Duration(now - request.arrival));
    rec.queueWait = rec.total;
    rec.status = status.code();
    a.response.requestId = rec.id;
    a.response.status = std::move(status);
    a.response.timing.total = rec.total;
    a.response.timing.queueWait = rec.total;
    a.httpKey = httpKey;
    return a;
}

} // namespace bp::remote
