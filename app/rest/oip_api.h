// The KServe v2 / Open Inference Protocol routes (docs/rest.md): health,
// server and model metadata, model readiness and POST .../infer (one engine
// request per row). Errors are {"error": "message"}.
//
// Server thread only.
#pragma once

#include "call_table.h"
#include "frontend_context.h"
#include "routes.h"
#include "waiting_room.h"

#include <QHttpServerRequest>

namespace bp::rest {

class OipApi : public CallHandler {
public:
    OipApi(FrontendContext &context, WaitingRoom &waiting);

    void handle(Route route, const QHttpServerRequest &request, const ReplyTicket &ticket);

    void callAnswered(InferCall &call) override;

private:
    void startInfer(const QByteArray &body, const ReplyTicket &ticket);

    FrontendContext &m_context;
    WaitingRoom &m_waiting;
};

} // namespace bp::rest
