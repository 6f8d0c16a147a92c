#include "remote_scraper.h"

#include "remote_codec.h"

#include "engine/telemetry/prometheus_text.h"
#include "engine/telemetry/server_settings.h"

namespace bp::remote {

MetricsScraper::MetricsScraper(QUrl metricsUrl, QString token, Duration interval, QObject *parent)
    : QObject(parent), m_url(std::move(metricsUrl)), m_token(std::move(token)), m_interval(interval)
{
    m_timer.setParent(this);
    connect(&m_timer, &QTimer::timeout, this, [this] { scrape(false); });
}

void MetricsScraper::begin(std::shared_ptr<TraceSink> sink, TimePoint epoch)
{
    m_sink = std::move(sink);
    m_epoch = epoch;
    if (m_interval <= Duration::zero())
        return;
    m_timer.start(std::chrono::duration_cast<std::chrono::milliseconds>(m_interval));
    scrape(false);
}

bool MetricsScraper::finalScrape(std::function<void()> done)
{
    if (m_interval <= Duration::zero() || !m_sink)
        return false;
    m_timer.stop();
    m_finalDone = std::move(done);
    scrape(true);
    return true;
}

void MetricsScraper::shutdown()
{
    m_timer.stop();
    delete m_connection;
    m_connection = nullptr;
}

void MetricsScraper::scrape(bool last)
{
    if (!m_sink)
        return;
    if (!m_connection)
        m_connection = new Http1Connection(endpointOf(m_url), this);
    if (m_connection->busy()) {
        if (!last)
            return; // the previous one is still out: skip this tick rather than pile up
        // Abandoned, not failed: its answer would describe the same moment
        // as the closing one's, and the server did nothing wrong.
        m_dropAborted = true;
        m_connection->abort(QStringLiteral("superseded by the closing scrape"));
        m_dropAborted = false;
    }
    HttpExchange ex;
    ex.method = "GET";
    ex.path = requestPathOf(m_url);
    ex.headers = {{"Accept", "text/plain;version=0.0.4"}};
    if (!m_token.isEmpty())
        ex.headers.append({"Authorization", "Bearer " + m_token.toUtf8()});
    ex.timeout = std::max<Duration>(std::chrono::seconds(2), m_interval * 2);
    m_connection->start(std::move(ex), [this, last](HttpResult &&r) {
        if (m_dropAborted)
            return; // superseded by the closing scrape (above): not a sample
        TargetSample t;
        if (!r.error.isEmpty() || r.status != 200) {
            t.error = r.error.isEmpty()
                          ? QStringLiteral("HTTP %1: %2").arg(r.status).arg(errorText(r.body)).toStdString()
                          : r.error.toStdString();
        } else if (auto e = prom::parse(std::string_view(r.body.constData(), std::size_t(r.body.size())));
                   !e) {
            t.error = "unreadable /metrics: " + e.status().message();
        } else {
            t = m_mapper.map(*e, Duration::zero());
            if (!t.server.empty())
                m_server = QString::fromStdString(t.server);
            if (std::string settings = scrapedServerSettings(*e); !settings.empty())
                m_settings = std::move(settings); // the last known: what the server ended with
        }
        // The time the figures describe: when the answer came back.
        t.at = r.finished - m_epoch;
        ++m_scrapes;
        if (!t.error.empty())
            ++m_errors;
        m_sink->recordTargetSample(t);
        if (last && m_finalDone)
            std::exchange(m_finalDone, nullptr)();
    });
}

} // namespace bp::remote
