#include "remote_target_view.h"

#include "time_chart_view.h"

#include "engine/store/trace_store.h"

#include <QCoreApplication>
#include <QLabel>
#include <QPointer>
#include <QThreadPool>
#include <QVBoxLayout>

#include <algorithm>

namespace bp::ui {

struct RemoteTargetView::Read {
    std::uint64_t generation = 0;
    qint64 baseline = -1; // the newest session id, on the first read
    qint64 sessionId = 0; // the session read (0: none to show)
    SessionInfo session;
    std::vector<TargetSample> target;
    std::vector<MetricSample> client;
    QString error;
};

RemoteTargetView::RemoteTargetView(std::shared_ptr<TraceStore> store, QWidget *parent)
    : QWidget(parent), m_store(std::move(store))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_header = new QLabel(tr("No remote session yet: aim the Traffic panel or a replay at a server."), this);
    m_header->setWordWrap(true);
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_header);
    auto *charts = new QHBoxLayout;
    layout->addLayout(charts, 1);

    m_client = new TimeChartView(tr("Client: sent and answered"), tr("req/s · requests"), this);
    m_client->addSeries(tr("answers/s"), QColor(30, 130, 60), TimeChartView::Axis::Left, Qt::SolidLine, 2.2);
    m_client->addSeries(tr("on the wire"), QColor(40, 110, 200));
    m_client->addSeries(tr("client queue"), QColor(210, 100, 0), TimeChartView::Axis::Left, Qt::DashLine);
    m_client->addSeries(tr("p50"), QColor(150, 90, 200), TimeChartView::Axis::Right, Qt::DotLine);
    m_client->addSeries(tr("p99"), QColor(90, 40, 130), TimeChartView::Axis::Right, Qt::SolidLine, 2);
    m_client->setRightAxisTitle(tr("latency ms"));

    m_server = new TimeChartView(tr("Server: batching (scraped)"), tr("sequences · requests"), this);
    m_server->addSeries(tr("batch size"), QColor(30, 130, 60), TimeChartView::Axis::Left, Qt::SolidLine, 2.2);
    m_server->addSeries(tr("queue"), QColor(210, 100, 0));
    m_server->addSeries(tr("running"), QColor(40, 110, 200), TimeChartView::Axis::Left, Qt::DashLine);
    m_server->addSeries(tr("waiting"), QColor(200, 60, 140), TimeChartView::Axis::Left, Qt::DotLine, 2);

    m_step = new TimeChartView(tr("Server: KV cache and steps (scraped)"), tr("KV cache %"), this);
    m_step->addSeries(tr("KV usage"), QColor(90, 90, 90), TimeChartView::Axis::Left, Qt::SolidLine, 2);
    m_step->addSeries(tr("tokens/step"), QColor(118, 150, 0), TimeChartView::Axis::Right, Qt::DashLine);
    m_step->setFixedMax(TimeChartView::Axis::Left, 100);
    m_step->setRightAxisTitle(tr("tokens per step"));
    for (TimeChartView *c : {m_client, m_server, m_step}) {
        c->setTimeAxisTitle(tr("s since the session started"));
        c->setMinimumSize(260, 180);
        charts->addWidget(c, 1);
    }

    m_poll.setInterval(1000);
    connect(&m_poll, &QTimer::timeout, this, &RemoteTargetView::refresh);
    m_poll.start();
    refresh();
}

void RemoteTargetView::setPollInterval(int ms)
{
    m_poll.setInterval(std::max(10, ms));
}

void RemoteTargetView::follow(qint64 sessionId)
{
    if (sessionId == m_sessionId && !m_ended)
        return;
    ++m_generation;
    m_sessionId = sessionId;
    m_ended = false;
    m_reading = false; // a read on its way is for the session before: dropped
    m_targetSamples.clear();
    m_clientSamples.clear();
    refresh();
}

void RemoteTargetView::refresh()
{
    if (!m_store || m_reading)
        return;
    m_reading = true;
    const std::uint64_t generation = m_generation;
    // The session followed until it has ended and been read once more;
    // then (or with none) a live remote session newer than the view's start.
    const qint64 follow = m_sessionId > 0 && !m_ended ? m_sessionId : 0;
    const qint64 baseline = m_baseline;
    QPointer<RemoteTargetView> self(this);
    QThreadPool::globalInstance()->start([self, store = m_store, generation, follow, baseline] {
        Read r;
        r.generation = generation;
        r.baseline = baseline;
        r.sessionId = follow;
        if (r.sessionId == 0) {
            auto sessions = store->sessions(); // newest first
            if (sessions) {
                if (r.baseline < 0)
                    r.baseline = sessions->empty() ? 0 : sessions->front().id;
                for (const SessionInfo &s : *sessions)
                    if (s.id > r.baseline && s.kind == "remote" && !s.endedAtUs) {
                        r.sessionId = s.id;
                        break;
                    }
            }
        }
        if (r.sessionId > 0) {
            auto session = store->session(r.sessionId);
            auto target = store->targetSamples(r.sessionId);
            auto client = store->metricSamples(r.sessionId);
            if (session && target && client) {
                r.session = std::move(session.value());
                r.target = std::move(target.value());
                r.client = std::move(client.value());
            } else {
                r.error = QString::fromStdString((!session  ? session.status()
                                                  : !target ? target.status()
                                                            : client.status())
                                                     .message());
            }
        }
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, r = std::move(r)] {
                if (self)
                    self->apply(r);
            },
            Qt::QueuedConnection);
    });
}

void RemoteTargetView::apply(const Read &r)
{
    if (r.generation != m_generation)
        return; // follow() chose another session meanwhile
    m_reading = false;
    if (m_baseline < 0)
        m_baseline = r.baseline;
    if (r.sessionId == 0)
        return; // nothing new: the charts keep the last session
    if (!r.error.isEmpty()) {
        m_header->setText(tr("Session %1: %2").arg(r.sessionId).arg(r.error));
        emit updated();
        return;
    }
    m_sessionId = r.sessionId;
    m_ended = r.session.endedAtUs.has_value();
    m_targetSamples = r.target;
    m_clientSamples = r.client;

    auto seconds = [](Duration d) { return toSeconds(d); };
    QList<QPointF> client[5], server[4], step[2];
    double last = 0;
    for (const MetricSample &m : m_clientSamples) {
        const double x = seconds(m.at);
        last = std::max(last, x);
        client[RequestsPerS] << QPointF(x, m.requestsPerS);
        client[InFlight] << QPointF(x, m.inFlight);
        client[ClientQueue] << QPointF(x, double(m.queueDepth));
        client[P50Ms] << QPointF(x, m.totalP50Us / 1000);
        client[P99Ms] << QPointF(x, m.totalP99Us / 1000);
    }
    std::size_t errors = 0;
    QString serverName, lastError;
    for (const TargetSample &t : m_targetSamples) {
        if (!t.error.empty()) {
            ++errors;
            lastError = QString::fromStdString(t.error);
            continue;
        }
        if (!t.server.empty())
            serverName = QString::fromStdString(t.server);
        const double x = seconds(t.at);
        last = std::max(last, x);
        auto add = [x](QList<QPointF> &series, const std::optional<double> &v, double scale = 1) {
            if (v)
                series << QPointF(x, *v * scale);
        };
        add(server[BatchSize], t.batchSize);
        add(server[Queue], t.queue);
        add(server[Running], t.running);
        add(server[Waiting], t.waiting);
        add(step[KvUsagePercent], t.kvUsage, 100);
        add(step[TokensPerStep], t.tokensPerStep);
    }
    for (int i = 0; i < 5; ++i)
        m_client->setPoints(i, client[i]);
    for (int i = 0; i < 4; ++i)
        m_server->setPoints(i, server[i]);
    for (int i = 0; i < 2; ++i)
        m_step->setPoints(i, step[i]);
    for (TimeChartView *c : {m_client, m_server, m_step}) {
        c->setTimeRange(0, std::max(1.0, last));
        c->rescale();
    }
    QString text = tr("Session %1 → %2 · %3 · %L4 client samples, %L5 scrapes")
                       .arg(m_sessionId)
                       .arg(QString::fromStdString(r.session.targetUrl))
                       .arg(m_ended ? tr("ended") : tr("running"))
                       .arg(m_clientSamples.size())
                       .arg(m_targetSamples.size());
    if (!serverName.isEmpty())
        text += tr(" · server: %1").arg(serverName);
    else if (!m_targetSamples.empty() && errors < m_targetSamples.size())
        text += tr(" · server not recognised (no batching series mapped)");
    if (errors > 0)
        text += tr(" · %L1 failed scrapes (last: %2)").arg(errors).arg(lastError);
    m_header->setText(text);
    emit updated();
}

} // namespace bp::ui
