// The remote target's /metrics, scraped every `interval` on a connection of
// its own (outside the concurrency cap), parsed strictly
// (engine/telemetry/prometheus_text.h), mapped to one set of series
// (engine/telemetry/target_metrics.h) and stored in target_samples; a failed
// scrape is stored as a row with its error. The server's kind and the
// settings its /metrics publishes (engine/telemetry/server_settings.h) are
// kept from the last scrape that had them. A periodic scrape still out when
// the closing one starts is abandoned without a row.
//
// Threading: lives on the remote target's HTTP thread; every call there.
#pragma once

#include "http1_connection.h"

#include "engine/store/trace_sink.h"
#include "engine/telemetry/target_metrics.h"

#include <QObject>
#include <QTimer>
#include <QUrl>

#include <functional>
#include <memory>

namespace bp::remote {

class MetricsScraper : public QObject {
public:
    MetricsScraper(QUrl metricsUrl, QString token, Duration interval, QObject *parent);

    // Starts the timer and takes the first scrape at once (when the
    // interval is not zero); samples go to `sink`, times from `epoch`.
    void begin(std::shared_ptr<TraceSink> sink, TimePoint epoch);
    void stop() { m_timer.stop(); }
    // The closing scrape (superseding one still out); `done` runs when its
    // answer is stored. False (and `done` never runs) when scraping is off.
    bool finalScrape(std::function<void()> done);
    // Aborts a scrape in flight and drops the connection.
    void shutdown();

    const QUrl &url() const { return m_url; }
    const QString &server() const { return m_server; }
    const std::string &settings() const { return m_settings; }
    std::uint64_t scrapes() const { return m_scrapes; }
    std::uint64_t errors() const { return m_errors; }

private:
    void scrape(bool last);

    const QUrl m_url;
    const QString m_token;
    const Duration m_interval;
    std::shared_ptr<TraceSink> m_sink;
    TimePoint m_epoch{};
    QTimer m_timer;
    Http1Connection *m_connection = nullptr; // a child of this
    TargetMetricsMapper m_mapper;
    QString m_server;
    std::string m_settings;
    std::uint64_t m_scrapes = 0, m_errors = 0;
    std::function<void()> m_finalDone;
    bool m_dropAborted = false; // set while the closing scrape aborts a periodic one
};

} // namespace bp::remote
