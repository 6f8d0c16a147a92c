#include "http_remote_target.h"

#include "http1_connection.h"

#include "engine/histogram.h"
#include "engine/metrics.h"
#include "engine/store/prometheus_text.h"
#include "engine/store/target_metrics.h"

#include <QTimer>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

namespace bp::remote {

namespace {

nlohmann::json latencyJson(const LatencyHistogram &h)
{
    auto ms = [](std::int64_t ns) { return double(ns) / 1e6; };
    return {{"count", h.count()},         {"mean", h.mean() / 1e6},      {"p50", ms(h.quantile(0.5))},
            {"p90", ms(h.quantile(0.9))}, {"p99", ms(h.quantile(0.99))}, {"max", ms(h.max())}};
}

HttpEndpoint endpointOf(const QUrl &url)
{
    HttpEndpoint e;
    e.tls = url.scheme() == QLatin1String("https");
    e.host = url.host();
    e.port = quint16(url.port(e.tls ? 443 : 80));
    return e;
}

QByteArray pathOf(const QUrl &url)
{
    QByteArray p = url.path(QUrl::FullyEncoded).toUtf8();
    while (p.endsWith('/'))
        p.chop(1);
    return p;
}

} // namespace

Status validate(const RemoteOptions &o)
{
    auto bad = [](const QString &what) { return Status(StatusCode::InvalidArgument, what.toStdString()); };
    if (!o.target.isValid() ||
        (o.target.scheme() != QLatin1String("http") && o.target.scheme() != QLatin1String("https")))
        return bad(
            QStringLiteral("--target must be an http:// or https:// URL, not '%1'").arg(o.target.toString()));
    if (o.target.host().isEmpty())
        return bad(QStringLiteral("--target '%1' has no host").arg(o.target.toString()));
    if (o.target.hasQuery() || o.target.hasFragment())
        return bad(QStringLiteral("--target '%1': give the server's base URL, without ?query or #fragment")
                       .arg(o.target.toString()));
    if (o.model.isEmpty())
        return bad(QStringLiteral("a remote replay needs --model NAME (the model's name on the server)"));
    if (o.maxConcurrency < 1 || o.maxConcurrency > 16384)
        return bad(QStringLiteral("--max-concurrency must be in [1, 16384]"));
    if (o.timeout < Duration::zero() || o.scrapeInterval < Duration::zero())
        return bad(QStringLiteral("timeouts and intervals cannot be negative"));
    if (o.scrapeInterval > Duration::zero() && o.scrapeInterval < std::chrono::milliseconds(10))
        return bad(QStringLiteral("--scrape-interval must be at least 10 ms"));
    if (!o.metricsUrl.isEmpty() &&
        (!o.metricsUrl.isValid() || o.metricsUrl.host().isEmpty() ||
         (o.metricsUrl.scheme() != QLatin1String("http") && o.metricsUrl.scheme() != QLatin1String("https"))))
        return bad(QStringLiteral("--metrics-url must be an http:// or https:// URL"));
    if (o.vocabSize < 2 || o.maxInputTokens < 1 || o.maxNewTokens < 0)
        return bad(QStringLiteral("vocabulary size, input and output limits must be positive"));
    return Status::ok();
}

// Everything that runs on the HTTP thread, plus the few thread-safe figures
// the other threads read.
class HttpRemoteTarget::Worker : public QObject {
public:
    explicit Worker(const RemoteOptions &o)
        : metrics(SteadyClock::now()), m_options(o), m_endpoint(endpointOf(o.target)),
          m_basePath(pathOf(o.target)),
          m_metricsUrl(o.metricsUrl.isEmpty()
                           ? QUrl(o.target.adjusted(QUrl::RemovePath)).resolved(QUrl("/metrics"))
                           : o.metricsUrl)
    {
        m_route = m_basePath + routeFor(o.protocol, o.model);
        m_headers = {{"Content-Type", "application/json"},
                     {"Accept", isStreaming(o.protocol) ? QByteArray("text/event-stream")
                                                        : QByteArray("application/json")}};
        if (!o.token.isEmpty())
            m_headers.append({"Authorization", "Bearer " + o.token.toUtf8()});
        m_scrapeTimer.setParent(this);
        connect(&m_scrapeTimer, &QTimer::timeout, this, [this] { scrape(); });
    }

    struct Pending {
        Request request;
        Completion done;
    };

    // --- HTTP thread ---------------------------------------------------
    void begin(std::shared_ptr<TraceSink> sink, TimePoint epoch)
    {
        m_sink = std::move(sink);
        m_epoch = epoch;
        if (m_options.scrapeInterval > Duration::zero()) {
            m_scrapeTimer.start(
                std::chrono::duration_cast<std::chrono::milliseconds>(m_options.scrapeInterval));
            scrape();
        }
    }

    void enqueue(Pending p)
    {
        if (m_cancelling) {
            failUnsent(std::move(p));
            return;
        }
        m_queue.push_back(std::move(p));
        dispatch();
    }

    void cancelAll()
    {
        m_cancelling = true;
        m_scrapeTimer.stop();
        while (!m_queue.empty()) {
            Pending p = std::move(m_queue.front());
            m_queue.pop_front();
            failUnsent(std::move(p));
        }
        for (Http1Connection *c : m_connections)
            if (c->busy())
                c->abort(QStringLiteral("replay cancelled"));
    }

    void stopScraping() { m_scrapeTimer.stop(); }

    // Starts the closing scrape; false when scraping is off.
    bool finalScrape()
    {
        if (m_options.scrapeInterval <= Duration::zero() || !m_sink)
            return false;
        m_scrapeTimer.stop();
        scrape(true);
        return true;
    }

    nlohmann::json summary() const
    {
        nlohmann::json http = nlohmann::json::object();
        for (const auto &[key, n] : m_httpCounts)
            http[key.toStdString()] = n;
        return {{"protocol", protocolName(m_options.protocol).toStdString()},
                {"http_status", http},
                {"ttft_ms", latencyJson(m_ttft)},
                {"tpot_ms", latencyJson(m_tpot)},
                {"itl_ms", latencyJson(m_itl)},
                {"connections_opened", m_connections.size()},
                {"max_in_flight", m_maxInFlight},
                {"server", m_server.toStdString()},
                {"scrapes", m_scrapes},
                {"scrape_errors", m_scrapeErrors},
                {"metrics_url", m_metricsUrl.toString().toStdString()}};
    }

    // Normally after finish(); also safe without it (a replay that failed
    // before its first request): whatever is still out fails as cancelled.
    void shutdown()
    {
        cancelAll();
        m_idle.clear();
        const std::vector<Http1Connection *> connections = std::move(m_connections);
        m_connections.clear();
        for (Http1Connection *c : connections)
            delete c;
        delete m_scrapeConnection;
        m_scrapeConnection = nullptr;
    }

    // --- any thread ----------------------------------------------------
    MetricsRecorder metrics;
    std::atomic<std::uint64_t> submitted{0};
    std::atomic<int> inFlight{0};
    std::atomic<std::size_t> queued{0};
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t outstanding = 0; // guarded by mutex: submitted, done not yet called
    bool finalScrapeDone = true; // guarded by mutex

private:
    void dispatch()
    {
        while (!m_queue.empty()) {
            Http1Connection *c = nullptr;
            if (!m_idle.empty()) {
                c = m_idle.back();
                m_idle.pop_back();
            } else if (int(m_connections.size()) < m_options.maxConcurrency) {
                c = new Http1Connection(m_endpoint, this);
                m_connections.push_back(c);
            } else {
                return;
            }
            Pending p = std::move(m_queue.front());
            m_queue.pop_front();
            queued.fetch_sub(1, std::memory_order_relaxed);
            send(c, std::move(p));
        }
    }

    struct InFlight {
        Pending p;
        TimePoint sentAt{};
        SseReader sse;
        QByteArray errorBody; // the first KiBs of a streamed answer, for its error text
    };

    void send(Http1Connection *c, Pending p)
    {
        auto f = std::make_shared<InFlight>();
        f->p = std::move(p);
        f->sentAt = SteadyClock::now();
        HttpExchange ex;
        ex.method = "POST";
        ex.path = m_route;
        ex.headers = m_headers;
        ex.timeout = m_options.timeout;
        ex.body = requestBody(m_options.protocol, f->p.request, m_options.model);
        if (isStreaming(m_options.protocol)) {
            ex.onBodyPiece = [f](const QByteArray &piece, TimePoint at) {
                if (f->errorBody.size() < 4096)
                    f->errorBody += piece.left(4096);
                f->sse.feed(piece, at);
            };
        }
        m_maxInFlight = std::max(m_maxInFlight, inFlight.fetch_add(1, std::memory_order_relaxed) + 1);
        c->start(std::move(ex), [this, c, f](HttpResult &&r) { answered(c, *f, std::move(r)); });
    }

    void answered(Http1Connection *c, InFlight &f, HttpResult &&r)
    {
        inFlight.fetch_sub(1, std::memory_order_relaxed);
        const Request &req = f.p.request;
        RequestRecord rec;
        rec.id = req.id;
        rec.arrival = req.arrival;
        rec.inputTokens = int(req.tokens.size());
        rec.queueWait = std::max(Duration::zero(), Duration(f.sentAt - req.arrival));
        rec.compute = r.finished - r.started;
        rec.total = r.finished - req.arrival;
        Status status;
        QString key;
        if (!r.error.isEmpty()) {
            key = r.timedOut ? QStringLiteral("timeout") : QStringLiteral("transport_error");
            status =
                Status(m_cancelling ? StatusCode::ShuttingDown
                                    : (r.timedOut ? StatusCode::DeadlineExceeded : StatusCode::Unavailable),
                       r.error.toStdString());
        } else {
            key = QString::number(r.status);
            const QByteArray &body = m_options.protocol == Protocol::Oip ? r.body : f.errorBody;
            if (r.status < 200 || r.status >= 300) {
                status =
                    Status(statusForHttp(r.status),
                           QStringLiteral("HTTP %1: %2").arg(r.status).arg(errorText(body)).toStdString());
            } else if (m_options.protocol == Protocol::Oip) {
                const OipAnswer a = parseOipAnswer(r.body);
                if (!a.error.isEmpty())
                    status = Status(StatusCode::Internal, a.error.toStdString());
                rec.outputTokens = a.outputTokens;
                if (r.firstByte != TimePoint{} && req.maxNewTokens > 0)
                    rec.timeToFirstToken = r.firstByte - req.arrival; // a non-streamed answer: its first byte
            } else if (!f.sse.error().isEmpty()) {
                status = Status(StatusCode::Internal, f.sse.error().toStdString());
            } else if (!f.sse.done()) {
                status = Status(StatusCode::Internal, "the event stream ended without data: [DONE]");
            } else {
                rec.outputTokens = f.sse.outputTokens();
                if (f.sse.firstToken())
                    rec.timeToFirstToken = *f.sse.firstToken() - req.arrival;
            }
        }
        ++m_httpCounts[key];
        rec.status = status.code();
        Response resp;
        resp.requestId = req.id;
        resp.status = status;
        resp.timing.queueWait = rec.queueWait;
        resp.timing.compute = rec.compute;
        resp.timing.total = rec.total;
        resp.timing.timeToFirstToken = rec.timeToFirstToken;
        if (status.isOk()) {
            if (rec.timeToFirstToken > Duration::zero())
                m_ttft.record(rec.timeToFirstToken.count());
            if (f.sse.firstToken() && f.sse.lastToken() && f.sse.tokenEvents() > 1) {
                resp.timing.timePerOutputToken =
                    (*f.sse.lastToken() - *f.sse.firstToken()) / (f.sse.tokenEvents() - 1);
                m_tpot.record(resp.timing.timePerOutputToken.count());
            }
            for (Duration gap : f.sse.gaps())
                m_itl.record(gap.count());
            metrics.recordCacheHit(rec,
                                   r.finished); // "completed without a batch we can see": counts and latency
        } else {
            metrics.recordFailure(status.code());
        }
        if (m_sink)
            m_sink->recordRequest(rec);
        Completion done = std::move(f.p.done);
        if (done)
            done(std::move(resp));
        if (!m_cancelling)
            m_idle.push_back(c);
        {
            std::lock_guard lock(mutex);
            --outstanding;
        }
        cv.notify_all();
        dispatch();
    }

    // A request that never went out (cancelled while it waited for a connection).
    void failUnsent(Pending p)
    {
        queued.fetch_sub(1, std::memory_order_relaxed);
        RequestRecord rec;
        rec.id = p.request.id;
        rec.arrival = p.request.arrival;
        rec.inputTokens = int(p.request.tokens.size());
        rec.total = std::max(Duration::zero(), Duration(SteadyClock::now() - p.request.arrival));
        rec.queueWait = rec.total;
        rec.status = StatusCode::ShuttingDown;
        metrics.recordFailure(rec.status);
        ++m_httpCounts[QStringLiteral("not_sent")];
        if (m_sink)
            m_sink->recordRequest(rec);
        Response resp;
        resp.requestId = rec.id;
        resp.status = Status(StatusCode::ShuttingDown, "replay cancelled before the request was sent");
        resp.timing.total = rec.total;
        if (p.done)
            p.done(std::move(resp));
        {
            std::lock_guard lock(mutex);
            --outstanding;
        }
        cv.notify_all();
    }

    void scrape(bool last = false)
    {
        if (!m_sink)
            return;
        if (!m_scrapeConnection)
            m_scrapeConnection = new Http1Connection(endpointOf(m_metricsUrl), this);
        if (m_scrapeConnection->busy()) {
            if (!last)
                return; // the previous one is still out: skip this tick rather than pile up
            m_scrapeConnection->abort(QStringLiteral("superseded by the closing scrape"));
        }
        HttpExchange ex;
        ex.method = "GET";
        ex.path = m_metricsUrl.path(QUrl::FullyEncoded).toUtf8();
        if (ex.path.isEmpty())
            ex.path = "/";
        if (m_metricsUrl.hasQuery())
            ex.path += '?' + m_metricsUrl.query(QUrl::FullyEncoded).toUtf8();
        ex.headers = {{"Accept", "text/plain;version=0.0.4"}};
        if (!m_options.token.isEmpty())
            ex.headers.append({"Authorization", "Bearer " + m_options.token.toUtf8()});
        ex.timeout = std::max<Duration>(std::chrono::seconds(2), m_options.scrapeInterval * 2);
        if (last) {
            std::lock_guard lock(mutex);
            finalScrapeDone = false;
        }
        m_scrapeConnection->start(std::move(ex), [this, last](HttpResult &&r) {
            TargetSample t;
            if (!r.error.isEmpty() || r.status != 200) {
                t.error =
                    r.error.isEmpty()
                        ? QStringLiteral("HTTP %1: %2").arg(r.status).arg(errorText(r.body)).toStdString()
                        : r.error.toStdString();
            } else if (auto e = prom::parse(std::string_view(r.body.constData(), std::size_t(r.body.size())));
                       !e) {
                t.error = "unreadable /metrics: " + e.status().message();
            } else {
                t = m_mapper.map(*e, Duration::zero());
                if (m_server.isEmpty())
                    m_server = QString::fromStdString(t.server);
            }
            // The time the figures describe: when the answer came back.
            t.at = r.finished - m_epoch;
            ++m_scrapes;
            if (!t.error.empty())
                ++m_scrapeErrors;
            m_sink->recordTargetSample(t);
            if (last) {
                {
                    std::lock_guard lock(mutex);
                    finalScrapeDone = true;
                }
                cv.notify_all();
            }
        });
    }

    const RemoteOptions m_options;
    const HttpEndpoint m_endpoint;
    const QByteArray m_basePath;
    const QUrl m_metricsUrl;
    QByteArray m_route;
    QList<QPair<QByteArray, QByteArray>> m_headers;
    std::shared_ptr<TraceSink> m_sink;
    TimePoint m_epoch{};
    std::deque<Pending> m_queue;
    std::vector<Http1Connection *> m_connections; // children of this worker
    std::vector<Http1Connection *> m_idle;
    bool m_cancelling = false;
    int m_maxInFlight = 0;
    std::map<QString, std::uint64_t> m_httpCounts;
    LatencyHistogram m_ttft, m_tpot, m_itl;
    QTimer m_scrapeTimer;
    Http1Connection *m_scrapeConnection = nullptr;
    TargetMetricsMapper m_mapper;
    QString m_server;
    std::uint64_t m_scrapes = 0, m_scrapeErrors = 0;
};

Result<std::unique_ptr<HttpRemoteTarget>> HttpRemoteTarget::create(RemoteOptions options)
{
    if (Status s = validate(options); !s)
        return s;
    return std::unique_ptr<HttpRemoteTarget>(new HttpRemoteTarget(std::move(options)));
}

HttpRemoteTarget::HttpRemoteTarget(RemoteOptions options) : m_options(std::move(options))
{
    m_model.name = m_options.model.toStdString();
    m_model.device = "remote";
    m_model.vocabSize = m_options.vocabSize;
    m_model.maxSequenceLength = m_options.maxInputTokens;
    m_model.generative = m_options.generative;
    m_model.maxNewTokensLimit = m_options.maxNewTokens;
    m_thread.setObjectName(QStringLiteral("remote-http"));
    m_worker = new Worker(m_options);
    m_worker->moveToThread(&m_thread);
    m_thread.start();
}

HttpRemoteTarget::~HttpRemoteTarget()
{
    QMetaObject::invokeMethod(
        m_worker, [w = m_worker] { w->shutdown(); }, Qt::BlockingQueuedConnection);
    m_worker->deleteLater(); // runs on its thread before the thread ends
    m_thread.quit();
    m_thread.wait();
}

std::string HttpRemoteTarget::url() const
{
    return m_options.target.toString().toStdString();
}

nlohmann::json HttpRemoteTarget::describe() const
{
    return {{"url", url()},
            {"protocol", protocolName(m_options.protocol).toStdString()},
            {"model", m_options.model.toStdString()},
            {"max_concurrency", m_options.maxConcurrency},
            {"timeout_ms", std::chrono::duration_cast<std::chrono::milliseconds>(m_options.timeout).count()},
            {"scrape_interval_ms",
             std::chrono::duration_cast<std::chrono::milliseconds>(m_options.scrapeInterval).count()},
            {"authorization", !m_options.token.isEmpty()}}; // whether a token was sent, never the token
}

Status HttpRemoteTarget::begin(std::shared_ptr<TraceSink> sink, TimePoint epoch)
{
    QMetaObject::invokeMethod(
        m_worker, [w = m_worker, sink, epoch] { w->begin(sink, epoch); }, Qt::BlockingQueuedConnection);
    return Status::ok();
}

Status HttpRemoteTarget::submit(Request request, Completion done)
{
    {
        std::lock_guard lock(m_worker->mutex);
        ++m_worker->outstanding;
    }
    m_worker->submitted.fetch_add(1, std::memory_order_relaxed);
    m_worker->queued.fetch_add(1, std::memory_order_relaxed);
    m_worker->metrics.recordAccepted();
    QMetaObject::invokeMethod(
        m_worker,
        [w = m_worker, p = Worker::Pending{std::move(request), std::move(done)}]() mutable {
            w->enqueue(std::move(p));
        },
        Qt::QueuedConnection);
    return Status::ok();
}

MetricSample HttpRemoteTarget::sample(TimePoint epoch, std::uint64_t droppedRows) const
{
    const TimePoint now = SteadyClock::now();
    Snapshot s;
    m_worker->metrics.fill(s, now);
    MetricSample m;
    m.at = now - epoch;
    m.requestsPerS = s.requestsPerS;
    m.inputTokensPerS = s.inputTokensPerS;
    m.outputTokensPerS = s.outputTokensPerS;
    m.totalP50Us = s.total.p50Us;
    m.totalP90Us = s.total.p90Us;
    m.totalP99Us = s.total.p99Us;
    m.queueDepth = m_worker->queued.load(std::memory_order_relaxed);
    m.inFlight = m_worker->inFlight.load(std::memory_order_relaxed);
    m.submitted = m_worker->submitted.load(std::memory_order_relaxed);
    m.completed = s.byStatus[std::size_t(StatusCode::Ok)];
    for (std::size_t i = 0; i < s.byStatus.size(); ++i)
        if (i != std::size_t(StatusCode::Ok))
            m.failed += s.byStatus[i];
    m.droppedRows = droppedRows;
    return m;
}

nlohmann::json HttpRemoteTarget::finish(bool cancel)
{
    Worker *w = m_worker;
    if (cancel)
        QMetaObject::invokeMethod(
            w, [w] { w->cancelAll(); }, Qt::BlockingQueuedConnection);
    {
        std::unique_lock lock(w->mutex);
        w->cv.wait(lock, [w] { return w->outstanding == 0; });
    }
    // One scrape after the last answer, so that even a short session has
    // the figures as the server ended them (and a rate needs two scrapes).
    bool scraping = false;
    QMetaObject::invokeMethod(
        w, [w, &scraping] { scraping = w->finalScrape(); }, Qt::BlockingQueuedConnection);
    if (scraping) {
        std::unique_lock lock(w->mutex);
        w->cv.wait(lock, [w] { return w->finalScrapeDone; });
    }
    nlohmann::json out;
    QMetaObject::invokeMethod(
        w,
        [w, &out] {
            w->stopScraping();
            out = w->summary();
        },
        Qt::BlockingQueuedConnection);
    return out;
}

} // namespace bp::remote
