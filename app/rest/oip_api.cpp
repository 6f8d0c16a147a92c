#include "oip_api.h"

#include "oip_codec.h"

#include "engine/core/nvtx.h"

namespace bp::rest {

using nlohmann::json;

OipApi::OipApi(FrontendContext &context, WaitingRoom &waiting) : m_context(context), m_waiting(waiting) {}

void OipApi::handle(Route route, const QHttpServerRequest &request, const ReplyTicket &ticket)
{
    const bool ready = !m_context.isDraining();
    const ModelInfo &model = m_context.engine.model();
    auto notReady = [] {
        return errorReply(HttpStatus::ServiceUnavailable, "not ready: server is shutting down");
    };
    switch (route) {
    case Route::OipInfer: return startInfer(request.body(), ticket);
    case Route::HealthLive: return m_context.send(ticket, jsonReply(json{{"live", true}}));
    case Route::HealthReady:
        return m_context.send(ticket, ready ? jsonReply(json{{"ready", true}}) : notReady());
    case Route::ServerMetadata:
        return m_context.send(ticket, jsonReply(oipServerMetadata(m_context.version.toStdString())));
    case Route::ModelMetadata: return m_context.send(ticket, jsonReply(oipModelMetadata(model)));
    case Route::ModelReady:
        return m_context.send(
            ticket, ready ? jsonReply(json{{"name", servedModelName(model)}, {"ready", true}}) : notReady());
    default: return m_context.send(ticket, errorReply(HttpStatus::InternalServerError, "unhandled route"));
    }
}

void OipApi::startInfer(const QByteArray &body, const ReplyTicket &ticket)
{
    if (m_waiting.full()) // refused before the body is even parsed
        return m_context.send(ticket, m_waiting.fullReply());
    auto parsed = [&] {
        const nvtx::Range range(nvtx::Category::Rest, "parse /v2 infer");
        return parseOipInfer({body.constData(), std::size_t(body.size())}, m_context.engine.model(),
                             m_context.engine.clock().now());
    }();
    if (!parsed)
        return m_context.send(ticket, errorReply(parsed.status()));
    InferCall call;
    call.kind = InferCall::Kind::Oip;
    call.handler = this;
    call.ticket = ticket;
    call.modelName = servedModelName(m_context.engine.model());
    call.received = m_context.requestStart;
    std::vector<Request> rows = std::move(parsed->rows);
    call.oip = std::move(*parsed);
    m_waiting.admit(std::move(call), std::move(rows));
}

void OipApi::callAnswered(InferCall &call)
{
    m_context.send(call.ticket, call.reply(InferCall::SteadyTime::clock::now()));
}

} // namespace bp::rest
