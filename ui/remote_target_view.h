// The "Remote target" dock: while a remote session runs (the Traffic panel
// or a replay aimed at a server, or `batchpilot replay --target` writing to
// the same database), the server's scraped /metrics series (target_samples:
// batch size, queue, running and waiting sequences, KV-cache usage, tokens
// per step; engine/telemetry/target_metrics.h) are charted beside the
// client-side figures (metric_samples: request rate, latency percentiles,
// requests on the wire and in the client's queue), on one time axis from
// the session's start.
//
// Data: read from the trace store every `pollInterval` off the GUI thread
// (one read at a time), so whatever records the session — this console or
// another process — is shown the same way. follow(id) shows that session;
// without it (and once the followed session has ended and been read once
// more, its charts left as they are) the newest remote session started
// since the view was created that has not ended is followed.
#pragma once

#include "engine/store/store_types.h"

#include <QTimer>
#include <QWidget>

#include <memory>
#include <vector>

class QLabel;

namespace bp {
class TraceStore;
}

namespace bp::ui {

class TimeChartView;

class RemoteTargetView : public QWidget {
    Q_OBJECT
public:
    // Series indices of the three charts.
    enum ClientSeries { RequestsPerS, InFlight, ClientQueue, P50Ms, P99Ms };
    enum ServerSeries { BatchSize, Queue, Running, Waiting };
    enum StepSeries { KvUsagePercent, TokensPerStep };

    explicit RemoteTargetView(std::shared_ptr<TraceStore> store, QWidget *parent = nullptr);

    void setPollInterval(int ms);
    qint64 sessionId() const { return m_sessionId; }
    // The first read is in: remote sessions started from now on are followed.
    bool watching() const { return m_baseline >= 0; }

    TimeChartView *clientChart() const { return m_client; }
    TimeChartView *serverChart() const { return m_server; }
    TimeChartView *stepChart() const { return m_step; }
    QLabel *header() const { return m_header; }
    const std::vector<TargetSample> &targetSamples() const { return m_targetSamples; }
    const std::vector<MetricSample> &clientSamples() const { return m_clientSamples; }

public slots:
    // Shows this session (live or ended) from now on.
    void follow(qint64 sessionId);
    // Reads the followed session's samples now (or looks for a live remote
    // session to follow); `updated` follows once the read is in.
    void refresh();

signals:
    void updated();

private:
    struct Read;
    void apply(const Read &read);

    std::shared_ptr<TraceStore> m_store;
    QTimer m_poll;
    qint64 m_sessionId = 0;
    bool m_ended = false;           // the followed session has ended and was read after that
    bool m_reading = false;         // a read is on its way
    qint64 m_baseline = -1;         // sessions up to this id existed before the view (not auto-followed)
    std::uint64_t m_generation = 0; // follow() drops a read of the session before
    std::vector<TargetSample> m_targetSamples;
    std::vector<MetricSample> m_clientSamples;
    QLabel *m_header = nullptr;
    TimeChartView *m_client = nullptr;
    TimeChartView *m_server = nullptr;
    TimeChartView *m_step = nullptr;
};

} // namespace bp::ui
