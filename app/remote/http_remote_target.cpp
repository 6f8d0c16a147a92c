#include "http_remote_target.h"

#include "client_router.h"
#include "remote_answer.h"
#include "remote_exchange.h"
#include "remote_pool.h"
#include "remote_scraper.h"
#include "remote_tally.h"

#include "engine/metrics/metrics.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

namespace bp::remote {

// The figures other threads read or wait on: the sample() counts, and what
// finish() waits for.
struct TargetFigures {
    explicit TargetFigures(TimePoint start) : metrics(start) {}

    MetricsRecorder metrics;
    std::atomic<std::uint64_t> submitted{0};
    std::atomic<std::uint64_t> shed{0};
    std::atomic<int> inFlight{0};
    std::atomic<std::size_t> queued{0};
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t outstanding = 0; // guarded by mutex: submitted, done not yet called
    bool finalScrapeDone = true; // guarded by mutex
};

// Everything that runs on the HTTP thread: the routing, the pools and the
// completions; `figures` is what the other threads read.
class HttpRemoteTarget::Worker : public QObject {
public:
    // With several URLs (a fleet), each has its own connections and FIFO
    // under the same caps, and the ClientRouter picks one per request; the
    // first URL's /metrics is the one scraped (target_samples has no
    // replica column).
    explicit Worker(const RemoteOptions &o);

    void begin(std::shared_ptr<TraceSink> sink, TimePoint epoch);
    // Routes `p` to a pool: out at once on a free connection, else into the
    // pool's FIFO, or shed when that is full.
    void enqueue(PendingRequest p);
    // Fails what waits for a connection (not_sent).
    void dropQueued(const std::string &why);
    // dropQueued(), and fails what is on the wire.
    void cancelAll();
    void stopScraping() { m_scraper.stop(); }
    // Starts the closing scrape; false when scraping is off.
    bool finalScrape();
    nlohmann::json summary() const;
    // Normally after finish(); also safe without it (a replay that failed
    // before its first request): whatever is still out fails as cancelled.
    void shutdown();

    TargetFigures figures; // any thread

private:
    // Sends what waits in `pool` while it has connections to spare.
    void dispatch(ConnectionPool &pool);
    void send(Http1Connection *c, const QByteArray &route, PendingRequest p);
    void answered(Http1Connection *c, InFlightRequest &f, HttpResult &&r);
    // A request that never went out: cancelled while it waited for a
    // connection, or shed because too many waited.
    void finishUnsent(PendingRequest p, Status status, const QString &key);
    // Records `a` (the replica that served it on its row), runs p's
    // completion, and settles the outstanding counts.
    void complete(PendingRequest &p, RemoteAnswer a, TimePoint at);

    const RemoteOptions m_options;
    const ExchangeBuilder m_exchanges;
    std::vector<ConnectionPool> m_pools;    // one per URL, in replica order
    std::unique_ptr<ClientRouter> m_router; // a fleet (two or more URLs) only
    std::shared_ptr<TraceSink> m_sink;
    bool m_cancelling = false;
    AnswerTally m_tally;
    MetricsScraper m_scraper;
};

HttpRemoteTarget::Worker::Worker(const RemoteOptions &o)
    : figures(SteadyClock::now()), m_options(o), m_exchanges(o),
      m_scraper(o.metricsUrl.isEmpty() ? QUrl(o.target.adjusted(QUrl::RemovePath)).resolved(QUrl("/metrics"))
                                       : o.metricsUrl,
                o.token, o.scrapeInterval, this)
{
    for (const QUrl &url : targetUrls(o))
        m_pools.emplace_back(url, routeFor(o.protocol, o.model));
    if (m_pools.size() > 1)
        m_router = std::make_unique<ClientRouter>(o.router, o.replicas);
}

void HttpRemoteTarget::Worker::begin(std::shared_ptr<TraceSink> sink, TimePoint epoch)
{
    m_sink = sink;
    m_scraper.begin(std::move(sink), epoch);
}

void HttpRemoteTarget::Worker::enqueue(PendingRequest p)
{
    if (m_cancelling) {
        finishUnsent(std::move(p),
                     Status(StatusCode::ShuttingDown, "replay cancelled before the request was sent"),
                     QStringLiteral("not_sent"));
        return;
    }
    // The client's own queue is bounded: an open loop
    // offered far more than the server serves would otherwise grow it
    // until Stop. What exceeds it is shed at once, recorded as rejected
    // (queue_full) and counted as "client_shed".
    p.tokens = int(p.request.tokens.size());
    p.replica = m_router ? m_router->route(p.request) : 0;
    ConnectionPool &pool = m_pools[std::size_t(p.replica)];
    if (m_options.maxQueued > 0 && pool.queue().size() >= std::size_t(m_options.maxQueued)) {
        figures.shed.fetch_add(1, std::memory_order_relaxed);
        const std::size_t waiting = pool.queue().size();
        finishUnsent(
            std::move(p),
            Status(StatusCode::QueueFull, "shed by the client: " + std::to_string(waiting) +
                                              " requests already wait for a connection (--max-queued)"),
            QStringLiteral("client_shed"));
        return;
    }
    pool.queue().push_back(std::move(p));
    dispatch(pool);
}

void HttpRemoteTarget::Worker::dropQueued(const std::string &why)
{
    for (ConnectionPool &pool : m_pools)
        while (!pool.queue().empty()) {
            PendingRequest p = std::move(pool.queue().front());
            pool.queue().pop_front();
            finishUnsent(std::move(p), Status(StatusCode::ShuttingDown, why), QStringLiteral("not_sent"));
        }
}

void HttpRemoteTarget::Worker::cancelAll()
{
    m_cancelling = true;
    m_scraper.stop();
    dropQueued("replay cancelled before the request was sent");
    for (ConnectionPool &pool : m_pools)
        pool.abortBusy(QStringLiteral("replay cancelled"));
}

bool HttpRemoteTarget::Worker::finalScrape()
{
    {
        std::lock_guard lock(figures.mutex);
        figures.finalScrapeDone = false;
    }
    const bool started = m_scraper.finalScrape([this] {
        {
            std::lock_guard lock(figures.mutex);
            figures.finalScrapeDone = true;
        }
        figures.cv.notify_all();
    });
    if (!started) {
        std::lock_guard lock(figures.mutex);
        figures.finalScrapeDone = true;
    }
    return started;
}

nlohmann::json HttpRemoteTarget::Worker::summary() const
{
    std::size_t opened = 0;
    for (const ConnectionPool &pool : m_pools)
        opened += pool.opened();
    nlohmann::json out = m_tally.json();
    out.update({{"protocol", protocolName(m_options.protocol).toStdString()},
                {"connections_opened", opened},
                {"max_in_flight", m_tally.maxInFlight()},
                {"max_queued", m_options.maxQueued},
                {"client_shed", figures.shed.load(std::memory_order_relaxed)},
                {"server", m_scraper.server().toStdString()},
                {"server_settings", m_scraper.settings()},
                {"scrapes", m_scraper.scrapes()},
                {"scrape_errors", m_scraper.errors()},
                {"metrics_url", m_scraper.url().toString().toStdString()}});
    if (m_router)
        out["fleet"] = m_router->json();
    return out;
}

void HttpRemoteTarget::Worker::shutdown()
{
    cancelAll();
    for (ConnectionPool &pool : m_pools)
        pool.close();
    m_scraper.shutdown();
}

void HttpRemoteTarget::Worker::dispatch(ConnectionPool &pool)
{
    while (!pool.queue().empty()) {
        Http1Connection *c = pool.take(m_options.maxConcurrency, this);
        if (!c)
            return;
        PendingRequest p = std::move(pool.queue().front());
        pool.queue().pop_front();
        figures.queued.fetch_sub(1, std::memory_order_relaxed);
        send(c, pool.route(), std::move(p));
    }
}

void HttpRemoteTarget::Worker::send(Http1Connection *c, const QByteArray &route, PendingRequest p)
{
    auto f = std::make_shared<InFlightRequest>();
    f->p = std::move(p);
    f->sentAt = SteadyClock::now();
    HttpExchange ex = m_exchanges.build(route, f);
    m_tally.sent(figures.inFlight.fetch_add(1, std::memory_order_relaxed) + 1);
    c->start(std::move(ex), [this, c, f](HttpResult &&r) { answered(c, *f, std::move(r)); });
}

void HttpRemoteTarget::Worker::answered(Http1Connection *c, InFlightRequest &f, HttpResult &&r)
{
    figures.inFlight.fetch_sub(1, std::memory_order_relaxed);
    RemoteAnswer a = answerOf(f.p.request, f.sentAt, r, m_options.protocol, f.sse, f.errorBody, m_cancelling);
    ConnectionPool &pool = m_pools[std::size_t(f.p.replica)];
    complete(f.p, std::move(a), r.finished);
    if (!m_cancelling)
        pool.giveBack(c);
    dispatch(pool);
}

void HttpRemoteTarget::Worker::finishUnsent(PendingRequest p, Status status, const QString &key)
{
    figures.queued.fetch_sub(1, std::memory_order_relaxed);
    const TimePoint now = SteadyClock::now();
    complete(p, unsentAnswer(p.request, now, std::move(status), key), now);
}

void HttpRemoteTarget::Worker::complete(PendingRequest &p, RemoteAnswer a, TimePoint at)
{
    a.record.replica = std::max(0, p.replica);
    if (m_router)
        m_router->ended(p.replica, p.tokens, a.response.status.isOk(), a.record.outputTokens);
    Completion done = std::move(p.done);
    m_tally.record(a);
    if (a.response.status.isOk())
        figures.metrics.recordCacheHit(a.record,
                                       at); // "completed without a batch we can see": counts and latency
    else
        figures.metrics.recordFailure(a.record.status);
    if (m_sink)
        m_sink->recordRequest(a.record);
    if (done)
        done(std::move(a.response));
    {
        std::lock_guard lock(figures.mutex);
        --figures.outstanding;
    }
    figures.cv.notify_all();
}

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
        std::lock_guard lock(m_worker->figures.mutex);
        ++m_worker->figures.outstanding;
    }
    m_worker->figures.submitted.fetch_add(1, std::memory_order_relaxed);
    m_worker->figures.queued.fetch_add(1, std::memory_order_relaxed);
    m_worker->figures.metrics.recordAccepted();
    QMetaObject::invokeMethod(
        m_worker,
        [w = m_worker, p = PendingRequest{std::move(request), std::move(done)}]() mutable {
            w->enqueue(std::move(p));
        },
        Qt::QueuedConnection);
    return Status::ok();
}

MetricSample HttpRemoteTarget::sample(TimePoint epoch, std::uint64_t droppedRows) const
{
    const TimePoint now = SteadyClock::now();
    Snapshot s;
    m_worker->figures.metrics.fill(s, now);
    MetricSample m;
    m.at = now - epoch;
    m.requestsPerS = s.requestsPerS;
    m.inputTokensPerS = s.inputTokensPerS;
    m.outputTokensPerS = s.outputTokensPerS;
    m.totalP50Us = s.total.p50Us;
    m.totalP90Us = s.total.p90Us;
    m.totalP99Us = s.total.p99Us;
    m.queueDepth = m_worker->figures.queued.load(std::memory_order_relaxed);
    m.inFlight = m_worker->figures.inFlight.load(std::memory_order_relaxed);
    m.submitted = m_worker->figures.submitted.load(std::memory_order_relaxed);
    m.completed = s.byStatus[std::size_t(StatusCode::Ok)];
    for (std::size_t i = 0; i < s.byStatus.size(); ++i)
        if (i != std::size_t(StatusCode::Ok))
            m.failed += s.byStatus[i];
    m.droppedRows = droppedRows;
    return m;
}

std::uint64_t HttpRemoteTarget::shed() const
{
    return m_worker->figures.shed.load(std::memory_order_relaxed);
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
        std::unique_lock lock(w->figures.mutex);
        w->figures.cv.wait(lock, [w] { return w->figures.outstanding == 0; });
    }
    // One scrape after the last answer, so that even a short session has
    // the figures as the server ended them (and a rate needs two scrapes).
    bool scraping = false;
    QMetaObject::invokeMethod(
        w, [w, &scraping] { scraping = w->finalScrape(); }, Qt::BlockingQueuedConnection);
    if (scraping) {
        std::unique_lock lock(w->figures.mutex);
        w->figures.cv.wait(lock, [w] { return w->figures.finalScrapeDone; });
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
