#include "engine_bridge.h"

#include <QTimer>

namespace bp::app {

// Runs on the bridge's worker thread.
class SnapshotPoller : public QObject {
    Q_OBJECT
public:
    explicit SnapshotPoller(Engine &engine) : m_engine(engine)
    {
        m_timer.setTimerType(Qt::PreciseTimer);
        m_timer.setInterval(100); // 10 Hz: charts move well within a second
        connect(&m_timer, &QTimer::timeout, this, &SnapshotPoller::poll);
    }
    void start() { m_timer.start(); }
    void setInterval(int ms) { m_timer.setInterval(ms); }
    void setHostSampler(std::unique_ptr<HostSampler> sampler) { m_host = std::move(sampler); }

signals:
    void snapshotReady(const bp::app::SnapshotPtr &snapshot);
    void hostSampleReady(const bp::app::HostSample &sample);

private:
    void poll()
    {
        if (m_host)
            emit hostSampleReady(m_host->sample());
        emit snapshotReady(std::make_shared<const Snapshot>(m_engine.snapshot()));
    }

    Engine &m_engine;
    QTimer m_timer{this};
    std::unique_ptr<HostSampler> m_host;
};

EngineBridge::EngineBridge(Engine &engine, QObject *parent) : QObject(parent), m_engine(engine)
{
    qRegisterMetaType<SnapshotPtr>();
    qRegisterMetaType<BatchingConfig>();
    qRegisterMetaType<HostSample>();
    m_poller = new SnapshotPoller(engine);
    m_poller->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_poller, &QObject::deleteLater);
    connect(m_poller, &SnapshotPoller::snapshotReady, this, [this](const SnapshotPtr &s) {
        m_latest = s;
        emit snapshotReady(s);
    }); // queued: the poller lives on another thread
    connect(m_poller, &SnapshotPoller::hostSampleReady, this, &EngineBridge::hostSampleReady);
    m_thread.setObjectName("snapshot-poller");
    m_thread.start();
    QMetaObject::invokeMethod(m_poller, &SnapshotPoller::start, Qt::QueuedConnection);
}

EngineBridge::~EngineBridge()
{
    m_thread.quit();
    m_thread.wait();
}

void EngineBridge::setPollInterval(int ms)
{
    QMetaObject::invokeMethod(
        m_poller, [p = m_poller, ms] { p->setInterval(ms); }, Qt::QueuedConnection);
}

void EngineBridge::startHostSampling(const QString &nvmlLibrary, unsigned gpuIndex)
{
    // NVML is initialised on the poller thread, which then owns it.
    QMetaObject::invokeMethod(
        m_poller,
        [p = m_poller, library = nvmlLibrary.toStdString(), gpuIndex] {
            p->setHostSampler(std::make_unique<HostSampler>(library, gpuIndex));
        },
        Qt::QueuedConnection);
}

std::optional<ConfigUpdate> EngineBridge::applyPatch(const ConfigPatch &patch, const QString &origin)
{
    auto update = m_engine.update(patch, origin.toStdString());
    if (!update) {
        emit configRejected(QString::fromStdString(update.status().message()));
        return std::nullopt;
    }
    emit configApplied(update->after);
    return std::move(update).value();
}

bool EngineBridge::applyConfig(const BatchingConfig &config, const QString &origin)
{
    return applyPatch(ConfigPatch::whole(config), origin).has_value();
}

} // namespace bp::app

#include "engine_bridge.moc"
