#include "call_table.h"

namespace bp::rest {

CallTable::CallTable(FrontendContext &context, QObject *thread) : m_context(context)
{
    m_inbox = CompletionInbox::create(thread, [this](std::vector<Delivery> &d) { onDeliveries(d); });
}

CallTable::~CallTable()
{
    // Completions that arrive from now on are dropped: nobody is left to answer.
    m_inbox->detach();
}

void CallTable::submit(InferCall call, std::vector<Request> rows)
{
    Q_ASSERT(call.handler);
    call.submitted = InferCall::SteadyTime::clock::now();
    const quint64 id = m_nextCallId++;
    const int n = int(rows.size());
    call.rows = n;
    call.responses.resize(std::size_t(n));
    call.answered.assign(std::size_t(n), false);
    InferCall &c = m_calls.emplace(id, std::move(call)).first->second;
    for (int i = 0; i < n; ++i) {
        Request &row = rows[std::size_t(i)];
        if (c.wantsTokens) {
            // Each token hops to this thread like a completion does; the
            // callback runs on an engine thread and only pushes.
            row.onToken = [inbox = m_inbox, id, i](const TokenEvent &e) {
                Delivery d;
                d.callId = id;
                d.row = i;
                d.isToken = true;
                d.token = e.token;
                inbox->push(std::move(d));
            };
        }
        // The completion runs on an engine thread: it only hands the
        // response over and returns (no Qt object, no pointer into this).
        Status s = m_context.engine.submit(std::move(row), [inbox = m_inbox, id, i](Response &&response) {
            inbox->push({id, i, std::move(response)});
        });
        if (!s) {
            c.refusedRow = i;
            c.refusal = std::move(s);
            // The answer is this error whatever the rows already accepted
            // give: stop them where the scheduler honours the flag.
            if (c.cancelled)
                c.cancelled->store(true);
            break; // rows already accepted still answer; the reply waits for them
        }
        ++c.outstanding;
    }
    if (c.outstanding == 0) {
        InferCall done = std::move(c);
        m_calls.erase(id);
        done.handler->callAnswered(done);
    }
}

void CallTable::onDeliveries(std::vector<Delivery> &deliveries)
{
    for (Delivery &d : deliveries) {
        auto it = m_calls.find(d.callId);
        if (it == m_calls.end())
            continue;
        InferCall &call = it->second;
        if (d.isToken) {
            call.handler->tokenArrived(call, d.row, d.token);
            continue;
        }
        const bool last = call.deliver(d.row, std::move(d.response));
        call.handler->rowAnswered(call, d.row);
        if (last) {
            InferCall done = std::move(call);
            m_calls.erase(it);
            done.handler->callAnswered(done);
        }
    }
    if (afterDeliveries)
        afterDeliveries();
}

} // namespace bp::rest
