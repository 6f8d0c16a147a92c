// Runs store work (listing, import, replay, comparison) on a thread pool
// and hands the result to the GUI thread only if no newer job of the same
// tracker has started since and the context object still lives — the
// generation counter + QPointer idea of hotspot's JobTracker. Results and
// progress arrive as values through queued calls; nothing is shared.
#pragma once

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>

#include <cstdint>
#include <memory>

namespace bp::ui {

class JobTracker {
    struct State {
        QPointer<QObject> context;
        std::uint64_t generation = 0; // GUI thread only
        bool running = false;         // GUI thread only
    };

public:
    // Handed to the job: posts to the GUI thread while the job is current.
    class Ticket {
    public:
        // Any thread. `f` runs on the GUI thread unless the job was
        // superseded (or the context destroyed) by then.
        template <typename F> void post(F f) const
        {
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [state = m_state, generation = m_generation, f = std::move(f)]() mutable {
                    if (state->context && generation == state->generation)
                        f();
                },
                Qt::QueuedConnection);
        }
        std::uint64_t generation() const { return m_generation; }

    private:
        friend class JobTracker;
        Ticket(std::shared_ptr<State> state, std::uint64_t generation)
            : m_state(std::move(state)), m_generation(generation)
        {
        }
        std::shared_ptr<State> m_state;
        std::uint64_t m_generation;
    };

    JobTracker(QObject *context, QThreadPool *pool) : m_state(std::make_shared<State>()), m_pool(pool)
    {
        m_state->context = context;
    }

    bool isJobRunning() const { return m_state->running; }
    std::uint64_t generation() const { return m_state->generation; }

    // GUI thread. `job(const Ticket &)` runs on the pool and returns a value;
    // `then(value)` runs on the GUI thread if the job is still current.
    template <typename Job, typename Then> void startJob(Job job, Then then)
    {
        const Ticket ticket(m_state, ++m_state->generation);
        m_state->running = true;
        m_pool->start([ticket, job = std::move(job), then = std::move(then)]() mutable {
            auto result = job(ticket);
            ticket.post(
                [state = ticket.m_state, result = std::move(result), then = std::move(then)]() mutable {
                    state->running = false;
                    then(std::move(result));
                });
        });
    }

    // Drops the result of whatever is running (GUI thread).
    void reset()
    {
        ++m_state->generation;
        m_state->running = false;
    }

private:
    std::shared_ptr<State> m_state;
    QThreadPool *m_pool;
};

} // namespace bp::ui
