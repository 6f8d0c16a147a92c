#include "http_remote_target.h"

#include "client_router.h"
#include "http1_connection.h"
#include "remote_answer.h"
#include "remote_scraper.h"

#include "engine/core/histogram.h"
#include "engine/metrics/metrics.h"

#include <algorithm>
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

} // namespace

// Everything that runs on the HTTP thread, plus the few thread-safe figures
// the other threads read.
class HttpRemoteTarget::Worker : public QObject {
public:
    // With several URLs (a fleet), each has its own connections and FIFO
    // under the same caps, and the ClientRouter picks one per request; the
    // first URL's /metrics is the one scraped (target_samples has no
    // replica column).
    explicit Worker(const RemoteOptions &o)
        : metrics(SteadyClock::now()), m_options(o),
          m_scraper(o.metricsUrl.isEmpty()
                        ? QUrl(o.target.adjusted(QUrl::RemovePath)).resolved(QUrl("/metrics"))
                        : o.metricsUrl,
                    o.token, o.scrapeInterval, this)
    {
        for (const QUrl &url : targetUrls(o)) {
            Pool &pool = m_pools.emplace_back();
            pool.endpoint = endpointOf(url);
            pool.route = basePathOf(url) + routeFor(o.protocol, o.model);
        }
        if (m_pools.size() > 1)
            m_router = std::make_unique<ClientRouter>(o.router, o.replicas);
        m_headers = {{"Content-Type", "application/json"},
                     {"Accept", isStreaming(o.protocol) ? QByteArray("text/event-stream")
                                                        : QByteArray("application/json")}};
        if (!o.token.isEmpty())
            m_headers.append({"Authorization", "Bearer " + o.token.toUtf8()});
    }

    struct Pending {
        Request request;
        Completion done;
        int replica = -1; // the pool it was routed to (-1: not routed, cancelled first)
        int tokens = 0;   // its prompt's length when routed
    };

    // --- HTTP thread ---------------------------------------------------
    void begin(std::shared_ptr<TraceSink> sink, TimePoint epoch)
    {
        m_sink = sink;
        m_scraper.begin(std::move(sink), epoch);
    }

    void enqueue(Pending p)
    {
        if (m_cancelling) {
            finishUnsent(std::move(p),
                         Status(StatusCode::ShuttingDown, "replay cancelled before the request was sent"),
                         QStringLiteral("not_sent"));
            return;
        }
        // The client's own queue is bounded (issue 23 item 9): an open loop
        // offered far more than the server serves would otherwise grow it
        // until Stop. What exceeds it is shed at once, recorded as rejected
        // (queue_full) and counted as "client_shed".
        p.tokens = int(p.request.tokens.size());
        p.replica = m_router ? m_router->route(p.request) : 0;
        Pool &pool = m_pools[std::size_t(p.replica)];
        if (m_options.maxQueued > 0 && pool.queue.size() >= std::size_t(m_options.maxQueued)) {
            shed.fetch_add(1, std::memory_order_relaxed);
            const std::size_t waiting = pool.queue.size();
            finishUnsent(
                std::move(p),
                Status(StatusCode::QueueFull, "shed by the client: " + std::to_string(waiting) +
                                                  " requests already wait for a connection (--max-queued)"),
                QStringLiteral("client_shed"));
            return;
        }
        pool.queue.push_back(std::move(p));
        dispatch(pool);
    }

    void dropQueued(const std::string &why)
    {
        for (Pool &pool : m_pools)
            while (!pool.queue.empty()) {
                Pending p = std::move(pool.queue.front());
                pool.queue.pop_front();
                finishUnsent(std::move(p), Status(StatusCode::ShuttingDown, why), QStringLiteral("not_sent"));
            }
    }

    void cancelAll()
    {
        m_cancelling = true;
        m_scraper.stop();
        dropQueued("replay cancelled before the request was sent");
        for (Pool &pool : m_pools) {
            for (Http1Connection *c : pool.connections)
                if (c->busy())
                    c->abort(QStringLiteral("replay cancelled"));
        }
    }

    void stopScraping() { m_scraper.stop(); }

    // Starts the closing scrape; false when scraping is off.
    bool finalScrape()
    {
        {
            std::lock_guard lock(mutex);
            finalScrapeDone = false;
        }
        const bool started = m_scraper.finalScrape([this] {
            {
                std::lock_guard lock(mutex);
                finalScrapeDone = true;
            }
            cv.notify_all();
        });
        if (!started) {
            std::lock_guard lock(mutex);
            finalScrapeDone = true;
        }
        return started;
    }

    nlohmann::json summary() const
    {
        nlohmann::json http = nlohmann::json::object();
        for (const auto &[key, n] : m_httpCounts)
            http[key.toStdString()] = n;
        std::size_t opened = 0;
        for (const Pool &pool : m_pools)
            opened += pool.connections.size();
        nlohmann::json out = {{"protocol", protocolName(m_options.protocol).toStdString()},
                              {"http_status", http},
                              {"ttft_ms", latencyJson(m_ttft)},
                              {"tpot_ms", latencyJson(m_tpot)},
                              {"itl_ms", latencyJson(m_itl)},
                              {"connections_opened", opened},
                              {"max_in_flight", m_maxInFlight},
                              {"max_queued", m_options.maxQueued},
                              {"client_shed", shed.load(std::memory_order_relaxed)},
                              {"server", m_scraper.server().toStdString()},
                              {"server_settings", m_scraper.settings()},
                              {"scrapes", m_scraper.scrapes()},
                              {"scrape_errors", m_scraper.errors()},
                              {"metrics_url", m_scraper.url().toString().toStdString()}};
        if (m_router)
            out["fleet"] = m_router->json();
        return out;
    }

    // Normally after finish(); also safe without it (a replay that failed
    // before its first request): whatever is still out fails as cancelled.
    void shutdown()
    {
        cancelAll();
        for (Pool &pool : m_pools) {
            pool.idle.clear();
            const std::vector<Http1Connection *> connections = std::move(pool.connections);
            pool.connections.clear();
            for (Http1Connection *c : connections)
                delete c;
        }
        m_scraper.shutdown();
    }

    // --- any thread ----------------------------------------------------
    MetricsRecorder metrics;
    std::atomic<std::uint64_t> submitted{0};
    std::atomic<std::uint64_t> shed{0};
    std::atomic<int> inFlight{0};
    std::atomic<std::size_t> queued{0};
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t outstanding = 0; // guarded by mutex: submitted, done not yet called
    bool finalScrapeDone = true; // guarded by mutex

private:
    // One URL's connections and the requests routed to it that wait for one.
    struct Pool {
        HttpEndpoint endpoint;
        QByteArray route; // the URL's base path + the protocol's route
        std::deque<Pending> queue;
        std::vector<Http1Connection *> connections; // children of this worker
        std::vector<Http1Connection *> idle;
    };

    void dispatch(Pool &pool)
    {
        while (!pool.queue.empty()) {
            Http1Connection *c = nullptr;
            if (!pool.idle.empty()) {
                c = pool.idle.back();
                pool.idle.pop_back();
            } else if (int(pool.connections.size()) < m_options.maxConcurrency) {
                c = new Http1Connection(pool.endpoint, this);
                pool.connections.push_back(c);
            } else {
                return;
            }
            Pending p = std::move(pool.queue.front());
            pool.queue.pop_front();
            queued.fetch_sub(1, std::memory_order_relaxed);
            send(c, pool.route, std::move(p));
        }
    }

    struct InFlight {
        Pending p;
        TimePoint sentAt{};
        SseReader sse;
        QByteArray errorBody; // the first KiBs of a streamed answer, for its error text
    };

    void send(Http1Connection *c, const QByteArray &route, Pending p)
    {
        auto f = std::make_shared<InFlight>();
        f->p = std::move(p);
        f->sentAt = SteadyClock::now();
        HttpExchange ex;
        ex.method = "POST";
        ex.path = route;
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
        RemoteAnswer a =
            answerOf(f.p.request, f.sentAt, r, m_options.protocol, f.sse, f.errorBody, m_cancelling);
        if (a.response.status.isOk()) {
            if (a.record.timeToFirstToken > Duration::zero())
                m_ttft.record(a.record.timeToFirstToken.count());
            if (a.record.timePerOutputToken > Duration::zero())
                m_tpot.record(a.record.timePerOutputToken.count());
            for (Duration gap : a.record.interTokenLatencies)
                m_itl.record(gap.count());
        }
        Pool &pool = m_pools[std::size_t(f.p.replica)];
        complete(f.p, std::move(a), r.finished);
        if (!m_cancelling)
            pool.idle.push_back(c);
        dispatch(pool);
    }

    // A request that never went out: cancelled while it waited for a
    // connection, or shed because too many waited.
    void finishUnsent(Pending p, Status status, const QString &key)
    {
        queued.fetch_sub(1, std::memory_order_relaxed);
        const TimePoint now = SteadyClock::now();
        complete(p, unsentAnswer(p.request, now, std::move(status), key), now);
    }

    // Records `a` (the replica that served it on its row), runs p's
    // completion, and settles the outstanding counts.
    void complete(Pending &p, RemoteAnswer a, TimePoint at)
    {
        a.record.replica = std::max(0, p.replica);
        if (m_router)
            m_router->ended(p.replica, p.tokens, a.response.status.isOk(), a.record.outputTokens);
        Completion done = std::move(p.done);
        ++m_httpCounts[a.httpKey];
        if (a.response.status.isOk())
            metrics.recordCacheHit(a.record,
                                   at); // "completed without a batch we can see": counts and latency
        else
            metrics.recordFailure(a.record.status);
        if (m_sink)
            m_sink->recordRequest(a.record);
        if (done)
            done(std::move(a.response));
        {
            std::lock_guard lock(mutex);
            --outstanding;
        }
        cv.notify_all();
    }

    const RemoteOptions m_options;
    std::vector<Pool> m_pools;              // one per URL, in replica order
    std::unique_ptr<ClientRouter> m_router; // a fleet (two or more URLs) only
    QList<QPair<QByteArray, QByteArray>> m_headers;
    std::shared_ptr<TraceSink> m_sink;
    bool m_cancelling = false;
    int m_maxInFlight = 0;
    std::map<QString, std::uint64_t> m_httpCounts;
    LatencyHistogram m_ttft, m_tpot, m_itl;
    MetricsScraper m_scraper;
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
    return targetList(m_options).toStdString();
}

nlohmann::json HttpRemoteTarget::describe() const
{
    return describeOptions(m_options);
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

std::uint64_t HttpRemoteTarget::shed() const
{
    return m_worker->shed.load(std::memory_order_relaxed);
}

void HttpRemoteTarget::failPending(bool onTheWire)
{
    Worker *w = m_worker;
    QMetaObject::invokeMethod(
        w,
        [w, onTheWire] {
            if (onTheWire)
                w->cancelAll();
            else
                w->dropQueued("the load stopped before the request was sent");
        },
        Qt::BlockingQueuedConnection);
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
