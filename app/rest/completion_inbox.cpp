#include "completion_inbox.h"

#include <QMetaObject>

namespace bp::rest {

std::shared_ptr<CompletionInbox> CompletionInbox::create(QObject *target, Sink sink)
{
    return std::shared_ptr<CompletionInbox>(new CompletionInbox(target, std::move(sink)));
}

CompletionInbox::CompletionInbox(QObject *target, Sink sink) : m_target(target), m_sink(std::move(sink)) {}

void CompletionInbox::push(Delivery delivery)
{
    std::lock_guard lock(m_mutex);
    if (!m_target)
        return; // the server has stopped: nobody is left to answer
    m_pending.push_back(std::move(delivery));
    if (m_wakePosted)
        return;
    m_wakePosted = true;
    // Posting under the lock keeps m_target alive: detach() takes the same
    // lock before the target is destroyed. A posted call whose target is
    // destroyed before it runs is discarded by Qt.
    QMetaObject::invokeMethod(
        m_target, [self = shared_from_this()] { self->drain(); }, Qt::QueuedConnection);
}

void CompletionInbox::detach()
{
    std::lock_guard lock(m_mutex);
    m_target = nullptr;
    m_pending.clear();
}

void CompletionInbox::drain()
{
    {
        std::lock_guard lock(m_mutex);
        m_wakePosted = false;
        if (!m_target)
            return;
        m_taking.swap(m_pending);
    }
    if (!m_taking.empty())
        m_sink(m_taking);
    m_taking.clear();
}

} // namespace bp::rest
