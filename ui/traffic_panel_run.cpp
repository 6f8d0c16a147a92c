// TrafficPanel: starting and stopping the load, on the embedded engine or
// a remote target. The panel's form: traffic_panel.cpp; its state and
// counters: traffic_panel_state.cpp.
#include "traffic_panel.h"

#include "remote_target_form.h"
#include "trace_list_model.h"

#include "engine/store/trace_store.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QThreadPool>
#include <QVBoxLayout>

namespace bp::ui {

void TrafficPanel::toggle()
{
    running() ? stop() : start();
}

void TrafficPanel::start()
{
    if (running())
        return;
    m_error->hide();
    const auto lengths = LengthKind(m_lengths->currentData().toInt());
    if (lengths != LengthKind::Trace) {
        launch(nullptr);
        return;
    }
    const qint64 id = m_trace->currentData(Qt::UserRole).toLongLong();
    if (id <= 0 || !m_store) {
        m_error->setText(tr("Import a trace first (Traces ▸ Import CSV…) to draw lengths from it."));
        m_error->show();
        m_start->setChecked(false);
        return;
    }
    if (auto it = m_traceRows.find(id); it != m_traceRows.end()) {
        launch(it->second);
        return;
    }
    // Load the rows off the GUI thread; a stop or another start meanwhile wins.
    const std::uint64_t generation = ++m_loadGeneration;
    m_start->setText(tr("Loading trace…"));
    QPointer<TrafficPanel> self(this);
    QThreadPool::globalInstance()->start([self, generation, id, store = m_store] {
        auto rows = store->traceRows(id);
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, generation, id, rows = std::move(rows)]() mutable {
                if (!self || generation != self->m_loadGeneration)
                    return;
                if (!rows) {
                    self->startFailed(rows.status().message());
                    return;
                }
                auto shared = std::make_shared<const std::vector<TraceRow>>(std::move(rows.value()));
                self->m_traceRows[id] = shared;
                self->launch(shared);
            },
            Qt::QueuedConnection);
    });
}

void TrafficPanel::launch(std::shared_ptr<const std::vector<TraceRow>> rows)
{
    m_rows = rows;
    WorkloadSpec spec = targetSpec(std::move(rows));
    if (Status s = spec.validate(); !s) {
        startFailed(s.message());
        return;
    }
    ++m_seed; // a fresh sequence each start
    if (remoteTarget()) {
        launchRemote(std::move(spec));
        return;
    }
    m_generator = std::make_unique<LoadGenerator>(m_bridge.engine(), spec);
    m_generator->start();
    started();
}

void TrafficPanel::launchRemote(WorkloadSpec spec)
{
    const remote::RemoteOptions options = m_remoteForm->options();
    if (Status s = remote::validate(options); !s)
        return startFailed(s.message());
    if (!m_store)
        return startFailed(
            tr("Remote traffic is recorded as a session: it needs the trace store.").toStdString());
    auto target = remote::HttpRemoteTarget::create(options);
    if (!target)
        return startFailed(target.status().message());
    auto load = remote::RemoteLoad::start(m_store, std::move(target.value()), std::move(spec));
    if (!load)
        return startFailed(load.status().message());
    m_remoteLoad = std::move(load.value());
    started();
    emit remoteSessionStarted(m_remoteLoad->sessionId(), options.target.toString());
}

void TrafficPanel::started()
{
    m_start->setChecked(true);
    m_refresh.start();
    m_queue.reset();
    updateVisibility();
    updateCounters();
    updateLoad();
    emit runningChanged(true);
}

void TrafficPanel::startFailed(const std::string &message)
{
    m_error->setText(QString::fromStdString(message));
    m_error->show();
    m_start->setChecked(false);
    updateCounters();
}

void TrafficPanel::stop()
{
    stopLoad(false);
}

void TrafficPanel::shutdown()
{
    stopLoad(true);
    // Sessions stopped earlier may still wait for a slow server's answers.
    for (const std::weak_ptr<remote::RemoteLoad> &w : m_finishing)
        if (const std::shared_ptr<remote::RemoteLoad> load = w.lock())
            load->failPending(true);
    m_finishing.clear();
}

void TrafficPanel::stopLoad(bool cancelInFlight)
{
    ++m_loadGeneration;
    m_restart.stop();
    if (m_remoteLoad) {
        m_remoteLoad->stop();
        m_remoteLoad->failPending(false);
        m_before = counters(); // answers still on the wire after this are not counted here
        // Waiting for those answers (up to the request timeout) happens off
        // the GUI thread; the session ends when they are in. Requests still
        // waiting for a connection are not sent; at shutdown none is waited for.
        std::shared_ptr<remote::RemoteLoad> finishing(std::move(m_remoteLoad));
        std::erase_if(m_finishing, [](const std::weak_ptr<remote::RemoteLoad> &w) { return w.expired(); });
        m_finishing.push_back(finishing);
        QPointer<TrafficPanel> self(this);
        QThreadPool::globalInstance()->start([self, finishing, cancelInFlight] {
            finishing->finish(cancelInFlight);
            const qint64 id = finishing->sessionId();
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [self, id] {
                    if (self)
                        emit self->remoteSessionFinished(id);
                },
                Qt::QueuedConnection);
        });
        m_refresh.stop();
        updateVisibility();
        emit runningChanged(false);
    }
    if (m_generator) {
        m_generator->stop();
        // Completions still queued in the engine after this are not counted.
        m_before = counters();
        m_generator.reset();
        m_refresh.stop();
        emit runningChanged(false);
    }
    m_start->setChecked(false);
    m_queue.reset();
    updateVisibility();
    updateCounters();
    updateLoad();
}

} // namespace bp::ui
