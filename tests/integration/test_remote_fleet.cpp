// A remote fleet: a replay driven into two real
// `batchpilot --headless` servers on loopback through the client-side
// router (`replay --target URL1,URL2 --router P`), which is the simulator's
// own Router (engine/sim/simulation/router.h).
//  - round-robin: requests alternate in submission order, each server
//    counts exactly its half (its own batchpilot_requests_total), every
//    stored row names its replica, replica_figures holds the split;
//  - prefix-affinity: requests that share a first prefix block stay on the
//    server the key hashes to until its load bound, then spill — the
//    servers hold every request (a 5 s queue delay, far longer than the
//    few ms it takes to send them all) so that the loads the router sees
//    are only the ones it made, and the split is exactly what a Router fed
//    the same loads decides;
//  - the CLI end to end, and its clear errors for a bad list or policy.
#include "headless_process.h"
#include "rest_test_util.h"

#include "tests/process_run.h"

#include "app/remote/http_remote_target.h"
#include "engine/replay/replayer.h"
#include "engine/sim/simulation/router.h"
#include "engine/store/fleet_store.h"
#include "engine/store/sqlite_db.h"
#include "engine/store/trace_store.h"
#include "engine/workload/prefix_tokens.h"

#include <QFile>
#include <QTest>

#include <future>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    QTemporaryDir dir;
    std::shared_ptr<TraceStore> store;
    std::int64_t traceId = 0;

    // `n` arrivals `gap` apart, 48 input tokens, 4 output tokens; with
    // `firstBlock` set, each prompt's first 16-token block is that hash id
    // and its second one its own.
    Fixture(int n, Duration gap, std::optional<std::int64_t> firstBlock = {})
    {
        store = *TraceStore::open(dir.filePath("client.sqlite").toStdString());
        std::vector<TraceRow> rows;
        std::vector<PrefixBlocks> blocks;
        for (int i = 0; i < n; ++i) {
            rows.push_back({toSeconds(gap * i), 48, 4});
            if (firstBlock)
                blocks.push_back({*firstBlock, 1000 + i});
        }
        traceId = store
                      ->addTrace("t", "", firstBlock ? TraceFormat::Mooncake : TraceFormat::Plain, rows, 0,
                                 blocks, 16)
                      ->id;
    }

    ReplayOptions options() const
    {
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        return o;
    }

    // The replicas of a session's requests, in arrival order ("0101...").
    std::string replicaSequence(std::int64_t sessionId) const
    {
        auto db = sqlite::Connection::open(store->path(), sqlite::Connection::Mode::ReadWrite).value();
        return db
            .queryText(
                "SELECT group_concat(replica, '') FROM (SELECT replica FROM requests WHERE session_id = " +
                std::to_string(sessionId) + " ORDER BY arrival_ns, request_id)")
            .value();
    }
};

QString urlOf(quint16 port)
{
    return QStringLiteral("http://127.0.0.1:%1").arg(port);
}

remote::RemoteOptions fleetOptions(quint16 a, quint16 b, const QString &router)
{
    remote::RemoteOptions o;
    const Status s = remote::setTargets(o, urlOf(a) + "," + urlOf(b), router);
    if (!s)
        qFatal("%s", s.toString().c_str());
    o.protocol = remote::Protocol::Oip;
    o.model = QStringLiteral("echo");
    o.scrapeInterval = Duration::zero();
    return o;
}

// Runs the replay on another thread while this one serves events.
Result<ReplayOutcome> replayTo(Fixture &f, remote::HttpRemoteTarget &target)
{
    Replayer replayer(f.store);
    const ReplayOptions o = f.options();
    auto future = std::async(std::launch::async, [&] { return replayer.runRemote(o, target); });
    while (future.wait_for(0s) != std::future_status::ready)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    return future.get();
}

double okCount(quint16 port)
{
    return metricValue(httpRequest(port, "GET", "/metrics").body, "batchpilot_requests_total{status=\"ok\"}");
}

} // namespace

class TestRemoteFleet : public QObject {
    Q_OBJECT

    std::unique_ptr<HeadlessProcess> m_a, m_b;

private slots:
    void initTestCase()
    {
        m_a = std::make_unique<HeadlessProcess>(QStringList{"--model", "builtin:echo"});
        m_b = std::make_unique<HeadlessProcess>(QStringList{"--model", "builtin:echo"});
        QVERIFY2(m_a->start(), qPrintable(m_a->output()));
        QVERIFY2(m_b->start(), qPrintable(m_b->output()));
    }

    void roundRobinSplitsEvenlyAndRecordsReplicas()
    {
        const double aBefore = okCount(m_a->port()), bBefore = okCount(m_b->port());
        const int n = 40;
        Fixture f(n, 2ms);
        auto target = remote::HttpRemoteTarget::create(fleetOptions(m_a->port(), m_b->port(), "round-robin"));
        QVERIFY2(target, target.status().toString().c_str());
        auto outcome = replayTo(f, **target);
        QVERIFY2(outcome, outcome.status().toString().c_str());
        QCOMPARE(outcome->completed, std::size_t(n));

        // Each server saw exactly its half: they count what they served.
        QCOMPARE(okCount(m_a->port()) - aBefore, double(n / 2));
        QCOMPARE(okCount(m_b->port()) - bBefore, double(n / 2));
        // In submission order, the replicas alternate; every row names one.
        std::string expected;
        for (int i = 0; i < n; ++i)
            expected += char('0' + i % 2);
        QCOMPARE(f.replicaSequence(outcome->sessionId), expected);

        const auto session = f.store->session(outcome->sessionId).value();
        QCOMPARE(session.targetUrl, (urlOf(m_a->port()) + "," + urlOf(m_b->port())).toStdString());
        QCOMPARE(session.replay["target"]["router"].get<std::string>(), std::string("round-robin"));
        QCOMPARE(session.replay["fleet"]["replicas"].get<int>(), 2);
        const auto figures = replicaFigures(*f.store, outcome->sessionId).value();
        QCOMPARE(figures.size(), std::size_t(2));
        for (const StoredReplica &r : figures) {
            QCOMPARE(r.routed, std::int64_t(n / 2));
            QCOMPARE(r.completed, std::int64_t(n / 2));
            QCOMPARE(r.failed, std::int64_t(0));
            QVERIFY(r.outputTokens > 0);
        }
    }

    void prefixAffinityKeepsAPrefixOnOneServerUntilItsBound()
    {
        // Servers that answer nothing for 5 s: while the 8 requests are
        // sent (8 ms apart) every one routed is still outstanding.
        QTemporaryDir dir;
        const QString config = dir.filePath("hold.json");
        {
            QFile file(config);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(R"({"policy": "dynamic", "max_batch_size": 64, "max_queue_delay_us": 5000000})");
        }
        HeadlessProcess a({"--model", "builtin:echo", "--config", config});
        HeadlessProcess b({"--model", "builtin:echo", "--config", config});
        QVERIFY2(a.start(), qPrintable(a.output()));
        QVERIFY2(b.start(), qPrintable(b.output()));

        const int n = 8;
        const std::int64_t block = 7;
        Fixture f(n, 1ms, block);
        const remote::RemoteOptions ro = fleetOptions(a.port(), b.port(), "prefix-affinity");

        // What the simulator's Router decides when nothing ends meanwhile:
        // every prompt begins with block 7's tokens, so they share one key.
        Router router(ro.router);
        const std::vector<TokenId> first = blockTokenIds(block, 16, ro.vocabSize);
        const std::uint64_t key = prefixKeyOfTokens(first);
        QVERIFY(key != 0);
        const int owner = router.owner(key);
        std::vector<ReplicaLoad> loads(2);
        std::string expected;
        for (int i = 0; i < n; ++i) {
            const int r = router.route(key, loads);
            ++loads[std::size_t(r)].outstanding;
            expected += char('0' + r);
        }
        // The shape: the owner first, until its bound; then the other
        // server takes what would pass it (ceil(1.25·(total+1)/2)).
        QCOMPARE(expected[0], char('0' + owner));
        QCOMPARE(expected[1], char('0' + owner));
        QVERIFY(expected[2] != char('0' + owner));
        const auto onOwner = std::count(expected.begin(), expected.end(), char('0' + owner));
        QVERIFY(onOwner > n / 2 && onOwner < n);

        auto target = remote::HttpRemoteTarget::create(ro);
        QVERIFY2(target, target.status().toString().c_str());
        auto outcome = replayTo(f, **target);
        QVERIFY2(outcome, outcome.status().toString().c_str());
        QCOMPARE(outcome->completed, std::size_t(n));
        QCOMPARE(f.replicaSequence(outcome->sessionId), expected);
        QCOMPARE(okCount(owner == 0 ? a.port() : b.port()), double(onOwner));
        QCOMPARE(okCount(owner == 0 ? b.port() : a.port()), double(n - onOwner));
        const auto session = f.store->session(outcome->sessionId).value();
        QCOMPARE(session.replay["fleet"]["affinity_routed"].get<std::int64_t>(), std::int64_t(onOwner));
        QCOMPARE(session.replay["fleet"]["affinity_spilled"].get<std::int64_t>(), std::int64_t(n - onOwner));
    }

    void cliDrivesAFleetAndRefusesBadLists()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath("cli.sqlite");
        auto import = test::runProcess(batchpilotExecutable(), {"import-trace", "--sample", "--db", db});
        QVERIFY2(import.code == 0, qPrintable(import.err));
        const QString a = urlOf(m_a->port()), b = urlOf(m_b->port());
        const double aBefore = okCount(m_a->port()), bBefore = okCount(m_b->port());
        auto run = test::runProcess(batchpilotExecutable(),
                                    {"replay", "1", "--trace", "--db", db, "--target", a + "," + b,
                                     "--router", "least-kv", "--model", "echo", "--limit", "30", "--speed",
                                     "50", "--scrape-interval", "0", "--json"});
        QVERIFY2(run.code == 0, qPrintable(run.err));
        const auto j = nlohmann::json::parse(run.out.toStdString(), nullptr, false);
        QVERIFY2(!j.is_discarded(), qPrintable(run.out));
        QVERIFY(j["completed"] == nlohmann::json(30));
        QVERIFY(j["target"]["url"] == nlohmann::json((a + "," + b).toStdString()));
        QVERIFY(j["client"]["fleet"]["router"] == nlohmann::json("least-kv"));
        std::int64_t routed = 0;
        for (const auto &r : j["client"]["fleet"]["replica_figures"])
            routed += r["routed"].get<std::int64_t>();
        QCOMPARE(routed, std::int64_t(30));
        QCOMPARE(okCount(m_a->port()) - aBefore + okCount(m_b->port()) - bBefore, 30.0);
        // One URL behaves as before: no router, no fleet.
        auto one = test::runProcess(batchpilotExecutable(),
                                    {"replay", "1", "--trace", "--db", db, "--target", a, "--model", "echo",
                                     "--limit", "5", "--speed", "50", "--scrape-interval", "0", "--json"});
        QVERIFY2(one.code == 0, qPrintable(one.err));
        const auto j1 = nlohmann::json::parse(one.out.toStdString(), nullptr, false);
        QVERIFY(!j1["client"].contains("fleet"));
        QVERIFY(!j1["target"].contains("router"));

        auto refused = [&](const QStringList &extra, const QString &message) {
            QStringList args{"replay", "1", "--trace", "--db", db, "--model", "echo"};
            args += extra;
            auto r = test::runProcess(batchpilotExecutable(), args);
            QVERIFY2(r.code == 2, qPrintable(args.join(' ') + ": " + r.err));
            QVERIFY2(r.err.contains(message), qPrintable(r.err));
        };
        refused({"--target", ","}, "empty entry");
        refused({"--target", " "}, "--target needs a URL");
        refused({"--target", a + ",," + b}, "empty entry");
        refused({"--target", a + ",ftp://x"}, "http:// or https://");
        refused({"--target", a + "," + a}, "twice");
        refused({"--target", a + "," + b, "--router", "nearest"}, "--router must be");
        refused({"--target", a + "," + b, "--replicas", "2"}, "--replicas needs --simulate");
        refused({"--router", "round-robin"}, "--router needs --simulate or --target");
    }
};

QTEST_GUILESS_MAIN(TestRemoteFleet)
#include "test_remote_fleet.moc"
