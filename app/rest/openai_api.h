// The OpenAI-compatible API (docs/rest.md, "OpenAI"): GET /v1/models,
// GET /v1/models/{id}, POST /v1/completions and POST /v1/chat/completions.
// Every error on these routes is an OpenAI error object (the request's
// ticket carries ErrorStyle::OpenAi).
//
// A completions request with a list of prompts is one call with one engine
// request per prompt: they batch with each other and with everyone else's
// requests, and the answer (or the stream) holds one choice per prompt,
// indexed in order. A client that disconnects before its answer is written
// cancels its requests: the connection queue sets the shared
// Request::cancelled flag, and the scheduler stops them at its next step or
// decision (policy continuous).
//
// Server thread only.
#pragma once

#include "call_table.h"
#include "frontend_context.h"
#include "routes.h"
#include "waiting_room.h"

#include <QHttpServerRequest>

namespace bp::rest {

class OpenAiApi : public CallHandler {
public:
    OpenAiApi(FrontendContext &context, WaitingRoom &waiting);

    void handle(Route route, const QHttpServerRequest &request, const ReplyTicket &ticket);

    // A token: its chunk goes out now (streams only).
    void tokenArrived(InferCall &call, int row, TokenId token) override;
    // A choice is complete: its closing chunk goes out (streams), or, if it
    // failed, the error ends the stream and the other choices are cancelled.
    void rowAnswered(InferCall &call, int row) override;
    // Every choice is in: the end of the stream, or the whole answer.
    void callAnswered(InferCall &call) override;

private:
    void start(Route route, const QByteArray &body, const ReplyTicket &ticket);

    FrontendContext &m_context;
    WaitingRoom &m_waiting;
    quint64 m_nextId = 1;
    // When the server started: the `created` of its model (Unix seconds).
    std::int64_t m_startedAt = 0;
};

} // namespace bp::rest
