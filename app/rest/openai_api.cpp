#include "openai_api.h"

#include "oip_codec.h"
#include "openai_chat.h"

#include "engine/core/nvtx.h"

#include <chrono>

namespace bp::rest {

namespace {
std::int64_t unixSeconds()
{
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}
} // namespace

OpenAiApi::OpenAiApi(FrontendContext &context, WaitingRoom &waiting)
    : m_context(context), m_waiting(waiting), m_startedAt(unixSeconds())
{
}

void OpenAiApi::handle(Route route, const QHttpServerRequest &request, const ReplyTicket &ticket)
{
    const ModelInfo &model = m_context.engine.model();
    switch (route) {
    case Route::ListModels: return m_context.send(ticket, jsonReply(modelList(model, m_startedAt)));
    case Route::GetModel: return m_context.send(ticket, jsonReply(modelObject(model, m_startedAt)));
    case Route::Completions:
    case Route::ChatCompletions: return start(route, request.body(), ticket);
    default: return m_context.send(ticket, errorReply(HttpStatus::InternalServerError, "unhandled route"));
    }
}

void OpenAiApi::start(Route route, const QByteArray &body, const ReplyTicket &ticket)
{
    if (m_waiting.full()) // refused before the body is even parsed
        return m_context.send(ticket, m_waiting.fullReply());
    const bool chat = route == Route::ChatCompletions;
    auto parsed = [&] {
        const nvtx::Range range(nvtx::Category::Rest,
                                chat ? "parse /v1/chat/completions" : "parse /v1/completions");
        const std::string_view text(body.constData(), std::size_t(body.size()));
        return chat ? parseChatRequest(text, m_context.engine.model())
                    : parseCompletionRequest(text, m_context.engine.model());
    }();
    if (!parsed) {
        HttpReply refusal = errorReply(parsed.status());
        if (parsed.status().code() == StatusCode::NotFound) // the only NotFound: `model`
            refusal.withErrorCode("model_not_found");
        return m_context.send(ticket, std::move(refusal));
    }
    InferCall call;
    call.kind = InferCall::Kind::OpenAi;
    call.handler = this;
    call.ticket = ticket;
    call.modelName = servedModelName(m_context.engine.model());
    call.received = m_context.requestStart;
    call.openAi = OpenAiCall(*parsed, (chat ? "chatcmpl-" : "cmpl-") + std::to_string(m_nextId++),
                             unixSeconds(), call.modelName);
    call.wantsTokens = parsed->stream;
    // A client that disconnects before its answer is written stops its
    // requests at the engine's next step or decision: its connection queue
    // sets the slot's flag (nothing is connected per request).
    call.cancelled = ticket.cancelFlag();
    for (Request &r : parsed->prompts)
        r.cancelled = call.cancelled;
    m_waiting.admit(std::move(call), std::move(parsed->prompts));
}

void OpenAiApi::tokenArrived(InferCall &call, int row, TokenId token)
{
    if (call.openAi.ended() || call.firstFailedRow() >= 0)
        return;
    if (!call.ticket.connected()) {
        call.cancelled->store(true);
        return;
    }
    const bool head = call.openAi.headSent();
    QByteArray piece = call.openAi.tokenPiece(row, token);
    if (!head)
        m_context.countStreamStart();
    call.ticket.stream(std::move(piece), false);
}

void OpenAiApi::rowAnswered(InferCall &call, int row)
{
    const Status &status = call.rowStatus(row);
    if (!status.isOk())
        call.cancelled->store(true); // the answer is this error: stop the other choices
    if (!call.openAi.stream() || call.openAi.ended() || !call.ticket.connected())
        return;
    if (status.isOk()) {
        if (call.firstFailedRow() >= 0)
            return; // the answer is an error already
        const bool head = call.openAi.headSent();
        QByteArray piece = call.openAi.choicePiece(row, call.responses[std::size_t(row)]);
        if (!head)
            m_context.countStreamStart();
        call.ticket.stream(std::move(piece), false);
        return;
    }
    if (!call.openAi.headSent())
        return; // callAnswered() answers with the error's status code
    // Too late for a status code: an error event ends the stream.
    const std::string where = call.openAi.choices() > 1 ? "prompt[" + std::to_string(row) + "]: " : "";
    call.ticket.stream(call.openAi.errorPiece(Status(status.code(), where + status.message())), true);
}

void OpenAiApi::callAnswered(InferCall &call)
{
    if (!call.ticket.connected())
        return; // the client has gone (its requests were cancelled): nothing to write
    const auto now = InferCall::SteadyTime::clock::now();
    if (!call.openAi.stream() || !call.openAi.headSent())
        return m_context.send(call.ticket, call.reply(now)); // the whole answer, or an ordinary error
    if (call.openAi.ended())
        return;
    call.ticket.stream(call.openAi.endPiece(), true);
}

} // namespace bp::rest
