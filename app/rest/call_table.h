// The inference calls in flight to the engine, on the server thread.
//
// submit() turns a call's rows into engine Requests. Each request's
// completion (and, for a call that streams, each token: Request::onToken)
// runs on an engine thread and only pushes (call id, row, Response) into
// the CompletionInbox; the inbox wakes the server thread, which looks the
// call up by id here and tells its CallHandler (the API that started it):
// a token, a row answered, the whole call answered. Nothing an engine
// thread holds points at a Qt object or into this table.
//
// Server thread only (the inbox's push() excepted).
#pragma once

#include "completion_inbox.h"
#include "frontend_context.h"
#include "infer_call.h"

#include <QObject>

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace bp::rest {

// What the API that started a call does with its answers. Every method
// runs on the server thread; the call is erased after callAnswered().
class CallHandler {
public:
    virtual ~CallHandler() = default;
    // A token of row `row` (only for calls with wantsTokens).
    virtual void tokenArrived(InferCall &, int /*row*/, TokenId) {}
    // Row `row`'s Response is in call.responses[row].
    virtual void rowAnswered(InferCall &, int /*row*/) {}
    // Nothing is outstanding: every accepted row answered (a row refused at
    // submit is call.refusedRow).
    virtual void callAnswered(InferCall &call) = 0;
};

class CallTable {
public:
    // `thread` lives on the server thread: the inbox wakes it.
    CallTable(FrontendContext &context, QObject *thread);
    ~CallTable();

    // Submits every row (call.handler must be set). A row the engine
    // refuses ends the submission there (call.refusedRow); an OpenAI call's
    // accepted rows are then cancelled. A call with nothing accepted is
    // answered at once.
    void submit(InferCall call, std::vector<Request> rows);
    // Hands over every delivery that has arrived now.
    void flush() { m_inbox->drain(); }
    std::size_t size() const { return m_calls.size(); }
    // Runs after each burst of deliveries (the queue has moved: the waiting
    // room may submit).
    std::function<void()> afterDeliveries;

private:
    void onDeliveries(std::vector<Delivery> &deliveries);

    FrontendContext &m_context;
    std::shared_ptr<CompletionInbox> m_inbox;
    std::unordered_map<quint64, InferCall> m_calls;
    quint64 m_nextCallId = 1;
};

} // namespace bp::rest
