// The probe plan driven over HTTP (probe_runner.h).
#include "probe_runner.h"

#include "http1_connection.h"
#include "remote_codec.h"

#include "engine/sim/calibration/remote_calibrate.h"
#include "engine/sim/calibration/unknown_server.h"
#include "engine/telemetry/target_metrics.h"

#include <QEventLoop>
#include <QTimer>

#include <memory>
#include <random>

namespace bp::remote {

std::size_t ProbeRun::failed() const
{
    std::size_t n = 0;
    for (const ProbeRequest &r : requests)
        n += r.ok ? 0 : 1;
    return n;
}

namespace {

constexpr qsizetype kErrorBodyBytes = 4096;

class ProbeDriver : public QObject {
public:
    explicit ProbeDriver(const ProbeRunOptions &o)
        : m_o(o), m_rounds(o.plan.rounds()), m_endpoint(endpointOf(o.remote.target)),
          m_route(basePathOf(o.remote.target) + routeFor(o.remote.protocol, o.remote.model)),
          m_streaming(isStreaming(o.remote.protocol)),
          m_seed(o.seed != 0 ? o.seed
                             : (std::uint64_t(std::random_device{}()) << 32 | std::random_device{}())),
          m_rng(m_seed)
    {
        m_run.seed = m_seed;
        if (!o.remote.token.isEmpty())
            m_headers.append({"Authorization", "Bearer " + o.remote.token.toUtf8()});
        m_headers.append({QByteArray("Content-Type"), QByteArray("application/json")});
        if (m_streaming)
            m_headers.append({QByteArray("Accept"), QByteArray("text/event-stream")});
        m_metricsUrl = o.remote.metricsUrl.isValid() && !o.remote.metricsUrl.isEmpty()
                           ? o.remote.metricsUrl
                           : QUrl(o.remote.target.adjusted(QUrl::RemovePath | QUrl::RemoveQuery).toString() +
                                  QStringLiteral("/metrics"));
    }

    ProbeRun run()
    {
        m_epoch = SteadyClock::now();
        m_run.planned = m_o.plan.requests();
        m_run.requests.reserve(m_run.planned);
        QTimer watch;
        watch.setInterval(20);
        QObject::connect(&watch, &QTimer::timeout, [this] { checkStop(); });
        watch.start();
        QTimer scrapes;
        if (m_o.scrapeInterval > Duration::zero()) {
            scrapes.setInterval(int(std::max<std::int64_t>(
                10, std::chrono::duration_cast<std::chrono::milliseconds>(m_o.scrapeInterval).count())));
            QObject::connect(&scrapes, &QTimer::timeout, [this] { scrape(false); });
            scrapes.start();
        }
        scrape(false);
        QTimer::singleShot(0, this, [this] { nextRound(); });
        m_loop.exec();
        m_run.seconds = toSeconds(SteadyClock::now() - m_epoch);
        m_run.interrupted = m_stopped;
        for (const auto &c : m_connections)
            c->abort(QStringLiteral("probe over"));
        if (m_scraper)
            m_scraper->abort(QStringLiteral("probe over"));
        return std::move(m_run);
    }

private:
    double now() const { return toSeconds(SteadyClock::now() - m_epoch); }

    void checkStop()
    {
        if (m_stopped || m_finishing)
            return;
        const bool interrupted = m_o.interrupt && m_o.interrupt->load();
        if (!interrupted && SteadyClock::now() - m_epoch < m_o.plan.maxDuration)
            return;
        m_stopped = true;
        for (const auto &c : m_connections)
            if (c->busy())
                c->abort(interrupted ? QStringLiteral("interrupted") : QStringLiteral("probe time bound"));
        finish();
    }

    Http1Connection *idleConnection()
    {
        for (const auto &c : m_connections)
            if (!c->busy())
                return c.get();
        m_connections.push_back(std::make_unique<Http1Connection>(m_endpoint));
        return m_connections.back().get();
    }

    void nextRound()
    {
        if (m_stopped)
            return;
        if (m_round >= m_rounds.size())
            return finish();
        ProbeRound &r = m_rounds[m_round];
        const std::string head =
            "round " + std::to_string(m_round + 1) + "/" + std::to_string(m_rounds.size()) + ": " + r.phase;
        std::string change;
        if (!r.probes.empty()) {
            // The cap /metrics showed; where no /metrics could be read, the
            // one the decode rounds' own timings showed (a server of unknown
            // kind publishes no series): with every place taken by a stream,
            // no prompt is ever sent and the round cannot tell iteration-
            // from request-level. A server whose series are read keeps its
            // plan unless they show a cap (timings on a busy machine would
            // show caps that are not there).
            std::optional<int> cap = runningCapOf(observedLimits(m_run.scrapes, nullptr, nullptr));
            std::string from;
            if (!cap && !m_run.first) {
                cap = inferScheduler(m_run.requests).runningCap;
                from = " (seen in the decode rounds' timings)";
            }
            if (cap)
                if (change = leaveRoomForProbes(r, *cap); !change.empty())
                    change += from;
        }
        if (!change.empty()) {
            m_run.planned = 0;
            for (const ProbeRound &planned : m_rounds)
                m_run.planned += std::size_t(planned.concurrency) + planned.probes.size();
            m_run.changes.push_back(r.phase + ": " + change);
            change = " (" + change + "; the plan is now " + std::to_string(m_run.planned) + " requests)";
        }
        if (r.concurrency == 0) { // dropped
            if (m_o.progress)
                m_o.progress(head + change);
            ++m_round;
            QTimer::singleShot(0, this, [this] { nextRound(); });
            return;
        }
        if (m_o.progress)
            m_o.progress(head + ", " + std::to_string(r.concurrency) + " at once, prompt " +
                         std::to_string(r.promptTokens) + ", max_tokens " + std::to_string(r.maxTokens) +
                         (r.probes.empty() ? "" : ", then " + std::to_string(r.probes.size()) + " prompts") +
                         change);
        m_inRound = 0;
        m_nextProbe = 0;
        m_probeOut = false;
        m_streamsStarted = m_run.requests.size();
        const bool pin = r.phase == "decode" || r.phase == "pace" || !r.probes.empty();
        const int stride = std::max(1, r.slotStride);
        for (int i = 0; i < r.concurrency; ++i)
            send(r.phase, !r.probes.empty(), r.concurrency, r.promptTokens, r.maxTokens,
                 pin && i * stride < m_o.pinSlots ? i * stride : -1);
    }

    // `slot`: the slot the request asks for (ServerDialect::slot).
    void send(const std::string &phase, bool stream, int concurrency, int prompt, int maxTokens,
              int slot = -1)
    {
        ProbeRequest p;
        p.phase = phase;
        p.round = int(m_round);
        p.stream = stream;
        p.concurrency = concurrency;
        p.promptTokens = prompt;
        p.maxTokens = maxTokens;
        p.slot = slot;
        const std::size_t index = m_run.requests.size();
        m_run.requests.push_back(p);
        ++m_inRound;

        Request req;
        std::uniform_int_distribution<int> id(0, std::max(1, m_o.remote.vocabSize) - 1);
        req.tokens.resize(std::size_t(std::max(1, prompt)));
        for (TokenId &t : req.tokens)
            t = TokenId(id(m_rng));
        req.maxNewTokens = maxTokens;
        HttpExchange ex;
        ex.method = "POST";
        ex.path = m_route;
        ServerDialect dialect = m_o.dialect;
        dialect.slot = slot;
        ex.body = requestBody(m_o.remote.protocol, req, m_o.remote.model, dialect);
        ex.headers = m_headers;
        ex.timeout = m_o.remote.timeout;
        auto sse = std::make_shared<SseReader>();
        // A streamed answer's body goes to onBodyPiece only: its first KiBs
        // are kept for the error's text when the status is not 200.
        auto head = std::make_shared<QByteArray>();
        if (m_streaming)
            ex.onBodyPiece = [this, index, sse, head](const QByteArray &piece, TimePoint at) {
                if (head->size() < kErrorBodyBytes)
                    *head += piece.left(kErrorBodyBytes - head->size());
                const int before = sse->tokenEvents();
                sse->feed(piece, at);
                if (sse->tokenEvents() != before && sse->firstToken())
                    onTokens(index, *sse);
            };
        m_run.requests[index].sentS = now();
        idleConnection()->start(std::move(ex), [this, index, sse, head](HttpResult &&r) {
            onAnswer(index, r, *sse, m_streaming ? *head : r.body);
        });
    }

    void onTokens(std::size_t index, const SseReader &sse)
    {
        ProbeRequest &p = m_run.requests[index];
        p.tokenTimesS.clear();
        TimePoint t = *sse.firstToken();
        p.tokenTimesS.push_back(toSeconds(t - m_epoch));
        for (Duration g : sse.gaps()) {
            t += g;
            p.tokenTimesS.push_back(toSeconds(t - m_epoch));
        }
        p.firstTokenS = p.tokenTimesS.front();
        maybeSendProbe();
    }

    // Mixed round: the next prompt once every stream decodes and no prompt is out.
    void maybeSendProbe()
    {
        if (m_stopped || m_round >= m_rounds.size())
            return;
        const ProbeRound &r = m_rounds[m_round];
        if (r.probes.empty() || m_probeOut || m_nextProbe >= r.probes.size())
            return;
        for (std::size_t i = m_streamsStarted; i < m_streamsStarted + std::size_t(r.concurrency); ++i) {
            const ProbeRequest &s = m_run.requests[i];
            if (s.endS > 0 || s.tokenTimesS.size() < 2)
                return; // a stream not decoding yet, or already over: the prompt would not meet it
        }
        m_probeOut = true;
        send(r.phase, false, r.concurrency, r.probes[m_nextProbe++], 1);
    }

    // `body`: the answer's body (a streamed one's first KiBs).
    void onAnswer(std::size_t index, const HttpResult &r, const SseReader &sse, const QByteArray &body)
    {
        ProbeRequest &p = m_run.requests[index];
        p.endS = toSeconds((r.finished == TimePoint{} ? SteadyClock::now() : r.finished) - m_epoch);
        if (!r.error.isEmpty()) {
            p.error = r.error.toStdString();
        } else if (r.status != 200) {
            p.error = "HTTP " + std::to_string(r.status) + ": " + errorText(body).toStdString();
        } else if (m_streaming) {
            if (!sse.error().isEmpty())
                p.error = sse.error().toStdString();
            else if (!sse.done())
                p.error = "the stream ended without data: [DONE]";
            p.outputTokens = sse.outputTokens();
            // one time per token, not per event (two tokens in one chunk
            // are two steps)
            p.tokenTimesS = perTokenTimes(p.tokenTimesS, sse.tokenCounts(), p.outputTokens);
            if (!p.tokenTimesS.empty())
                p.firstTokenS = p.tokenTimesS.front();
        } else {
            const OipAnswer a = parseOipAnswer(r.body);
            p.error = a.error.toStdString();
            p.outputTokens = a.outputTokens;
            if (r.firstByte != TimePoint{})
                p.firstTokenS = toSeconds(r.firstByte - m_epoch);
        }
        p.ok = p.error.empty();
        if (!p.stream && p.phase == "mixed")
            m_probeOut = false;
        --m_inRound;
        if (m_stopped)
            return;
        maybeSendProbe();
        if (m_inRound == 0) {
            ++m_round;
            QTimer::singleShot(0, this, [this] { nextRound(); });
        }
    }

    double tokensInFlight() const
    {
        double n = 0;
        for (const ProbeRequest &p : m_run.requests)
            if (p.endS == 0 && !p.tokenTimesS.empty())
                n += p.promptTokens + double(p.tokenTimesS.size());
        return n;
    }

    void scrape(bool last)
    {
        if (!m_scraper)
            m_scraper = std::make_unique<Http1Connection>(endpointOf(m_metricsUrl));
        if (m_scraper->busy()) {
            if (!last)
                return;
            // Abandoned, not failed (as in remote_scraper.cpp): the probe's
            // own end cut it short, and its answer would describe the same
            // moment as the closing scrape's.
            m_dropAborted = true;
            m_scraper->abort(QStringLiteral("superseded by the closing scrape"));
            m_dropAborted = false;
        }
        HttpExchange ex;
        ex.path = m_metricsUrl.path(QUrl::FullyEncoded).toUtf8();
        if (ex.path.isEmpty())
            ex.path = "/";
        ex.headers = {{"Accept", "text/plain;version=0.0.4"}};
        if (!m_o.remote.token.isEmpty())
            ex.headers.append({"Authorization", "Bearer " + m_o.remote.token.toUtf8()});
        ex.timeout = std::chrono::seconds(5);
        const double inFlight = tokensInFlight();
        m_scraper->start(std::move(ex), [this, last, inFlight](HttpResult &&r) {
            if (m_dropAborted)
                return; // superseded by the closing scrape (above): not a sample
            ProbeScrape s;
            s.atS = toSeconds((r.finished == TimePoint{} ? SteadyClock::now() : r.finished) - m_epoch);
            s.tokensInFlight = inFlight;
            if (!r.error.isEmpty() || r.status != 200) {
                s.sample.error =
                    r.error.isEmpty() ? "HTTP " + std::to_string(r.status) : r.error.toStdString();
            } else if (auto e = prom::parse(std::string_view(r.body.constData(), std::size_t(r.body.size())));
                       !e) {
                s.sample.error = "unreadable /metrics: " + e.status().message();
            } else {
                s.sample = m_mapper.map(*e, Duration::zero());
                if (!s.sample.server.empty())
                    m_run.server = s.sample.server;
                if (!m_run.first)
                    m_run.first = *e;
                m_run.last = std::move(*e);
            }
            m_run.scrapes.push_back(std::move(s));
            if (last)
                m_loop.quit();
        });
    }

    void finish()
    {
        if (m_finishing)
            return;
        m_finishing = true;
        scrape(true);
    }

    const ProbeRunOptions &m_o;
    std::vector<ProbeRound> m_rounds; // the plan's; a mixed round changes to fit a running cap
    const HttpEndpoint m_endpoint;
    const QByteArray m_route;
    const bool m_streaming;
    QList<QPair<QByteArray, QByteArray>> m_headers;
    QUrl m_metricsUrl;
    const std::uint64_t m_seed;
    std::mt19937_64 m_rng;
    TimePoint m_epoch{};
    QEventLoop m_loop;
    std::vector<std::unique_ptr<Http1Connection>> m_connections;
    std::unique_ptr<Http1Connection> m_scraper;
    TargetMetricsMapper m_mapper;
    ProbeRun m_run;
    std::size_t m_round = 0, m_streamsStarted = 0, m_nextProbe = 0;
    int m_inRound = 0;
    bool m_probeOut = false, m_stopped = false, m_finishing = false;
    bool m_dropAborted = false; // set while the closing scrape aborts a periodic one
};

} // namespace

ProbeRun runProbe(const ProbeRunOptions &options)
{
    ProbeDriver driver(options);
    return driver.run();
}

} // namespace bp::remote
