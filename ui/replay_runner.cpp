#include "replay_runner.h"

namespace bp::ui {

ReplayRunner::ReplayRunner(std::shared_ptr<TraceStore> store, BackendFactory backend, QObject *parent)
    : QObject(parent), m_store(std::move(store)), m_backend(std::move(backend))
{
    qRegisterMetaType<ReplayOutcome>();
    m_pool.setMaxThreadCount(2); // a superseded replay may still be winding down
}

ReplayRunner::BackendFactory ReplayRunner::cached(BackendFactory make)
{
    struct Cache {
        std::mutex mutex;
        BackendFactory make;
        std::shared_ptr<Backend> backend; // guarded by mutex
    };
    auto cache = std::make_shared<Cache>();
    cache->make = std::move(make);
    return [cache]() -> Result<std::shared_ptr<Backend>> {
        std::lock_guard lock(cache->mutex);
        if (!cache->backend) {
            auto made = cache->make();
            if (!made)
                return made.status(); // not cached: the next replay tries again
            cache->backend = std::move(made.value());
        }
        return cache->backend;
    };
}

ReplayRunner::~ReplayRunner()
{
    cancel();
    m_pool.waitForDone(); // Replayer honours cancel within ~50 ms
}

void ReplayRunner::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

void ReplayRunner::start(const ReplayOptions &requested, const std::optional<remote::RemoteOptions> &remote)
{
    cancel();
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_percent = 0;
    emit progressChanged(0, remote ? tr("Connecting to %1…").arg(remote->target.toString())
                                   : tr("Loading the model…"));
    ReplayOptions options = requested;
    options.progressInterval = std::min<Duration>(options.progressInterval, std::chrono::milliseconds(100));
    m_jobs.startJob(
        [store = m_store, factory = m_backend, options, remote, cancel = m_cancel,
         self = QPointer<ReplayRunner>(this)](const JobTracker::Ticket &ticket) -> Result<ReplayOutcome> {
            auto progress = [ticket, self](const ReplayProgress &p) {
                const int percent = int(100 * p.fraction());
                const QString text = tr("%1 of %2 requests done, %3 s into the source")
                                         .arg(p.finished)
                                         .arg(p.total)
                                         .arg(p.sourceSeconds, 0, 'f', 1);
                ticket.post([self, percent, text] {
                    if (self) {
                        self->m_percent = percent;
                        emit self->progressChanged(percent, text);
                    }
                });
            };
            if (remote) {
                auto target = remote::HttpRemoteTarget::create(*remote);
                if (!target)
                    return target.status();
                return Replayer(store).runRemote(options, **target, progress, cancel.get());
            }
            if (!factory)
                return Status(StatusCode::Unavailable, "this console cannot replay: no model to replay on");
            auto backend = factory();
            if (!backend)
                return backend.status();
            Replayer replayer(store, *backend);
            return replayer.run(options, progress, cancel.get());
        },
        [this](Result<ReplayOutcome> outcome) {
            if (!outcome) {
                emit failed(QString::fromStdString(outcome.status().message()));
                return;
            }
            if (!outcome->cancelled) {
                m_percent = 100;
                emit progressChanged(100, tr("Replayed %1 requests into session %2")
                                              .arg(outcome->submitted)
                                              .arg(outcome->sessionId));
            }
            emit finished(*outcome);
        });
}

} // namespace bp::ui
