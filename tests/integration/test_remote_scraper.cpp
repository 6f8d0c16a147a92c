// The remote target's /metrics scraper (app/remote/remote_scraper.*) against
// an in-test server that answers on command, so that the order of scrapes is
// set by the test, not by timing.
#include "app/remote/remote_scraper.h"

#include "engine/store/trace_sink.h"
#include "engine/store/trace_store.h"

#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QtTest>

using namespace bp;

namespace {

// Accepts connections and keeps every GET it reads; answer() sends a valid
// exposition to the oldest one still waiting.
class HeldMetricsServer : public QObject {
public:
    HeldMetricsServer()
    {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_server.nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, this, [this, s] {
                    m_buffer[s] += s->readAll();
                    while (m_buffer[s].contains("\r\n\r\n")) {
                        m_buffer[s].remove(0, m_buffer[s].indexOf("\r\n\r\n") + 4);
                        m_waiting.append(s);
                    }
                });
            }
        });
        QVERIFY(m_server.listen(QHostAddress::LocalHost));
    }
    quint16 port() const { return m_server.serverPort(); }
    int waiting() const { return int(m_waiting.size()); }
    void answer()
    {
        QTcpSocket *s = m_waiting.takeFirst();
        const QByteArray body = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n";
        s->write("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                 QByteArray::number(body.size()) + "\r\n\r\n" + body);
    }

private:
    QTcpServer m_server;
    QHash<QTcpSocket *, QByteArray> m_buffer;
    QList<QTcpSocket *> m_waiting;
};

} // namespace

class TestRemoteScraper : public QObject {
    Q_OBJECT
private slots:
    // A periodic scrape still out when the replay ends is superseded by the
    // closing scrape. It did not fail: it was abandoned, and storing it as an
    // error sample made every run whose last tick was in flight look like a
    // server that failed a scrape (test_remote_replay flaked on it).
    void aScrapeSupersededByTheClosingOneIsNotAnError()
    {
        QTemporaryDir dir;
        const std::string dbPath = dir.filePath("s.sqlite").toStdString();
        auto store = TraceStore::open(dbPath);
        QVERIFY(store);
        auto sessionId = (*store)->startSession({});
        QVERIFY(sessionId);
        const TimePoint epoch = SteadyClock::now();
        auto sink = TraceSink::create(dbPath, *sessionId, epoch);
        QVERIFY(sink);
        (*sink)->start();

        HeldMetricsServer server;
        QObject owner;
        // An hour between ticks: only the first scrape and the closing one run.
        remote::MetricsScraper scraper(QUrl(QStringLiteral("http://127.0.0.1:%1/metrics").arg(server.port())),
                                       {}, std::chrono::hours(1), &owner);
        scraper.begin(*sink, epoch);
        QTRY_COMPARE(server.waiting(), 1); // the first scrape is out, unanswered

        bool done = false;
        QVERIFY(scraper.finalScrape([&] { done = true; }));
        QTRY_COMPARE(server.waiting(), 2); // the closing one came on a new connection
        server.answer();                   // (the first's socket is gone: written to nobody)
        server.answer();
        QTRY_VERIFY(done);
        scraper.shutdown();
        (*sink)->stop();

        auto samples = (*store)->targetSamples(*sessionId);
        QVERIFY(samples);
        QCOMPARE(samples->size(), std::size_t(1));
        QVERIFY2(samples->front().error.empty(), samples->front().error.c_str());
        QCOMPARE(scraper.errors(), std::uint64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestRemoteScraper)
#include "test_remote_scraper.moc"
