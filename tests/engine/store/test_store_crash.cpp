// A process killed with SIGKILL while logging leaves a database that opens,
// passes PRAGMA integrity_check, and holds every transaction it reported as
// committed: at most the transaction in flight (and what was still queued)
// is missing, and no batch is stored without all its requests.
#include "engine/store/sqlite_db.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <set>

using namespace bp;

class TestStoreCrash : public QObject {
    Q_OBJECT
private slots:
    void sigkillWhileLogging()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath("crash.sqlite");
        QProcess helper;
        helper.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        helper.start(QStringLiteral(STORE_KILL_HELPER), {db});
        QVERIFY2(helper.waitForStarted(), qPrintable(helper.errorString()));

        // Wait (on output, not on time) for several committed transactions.
        std::set<std::uint64_t> committed;
        QByteArray pending;
        auto readLines = [&] {
            pending += helper.readAllStandardOutput();
            int nl;
            while ((nl = pending.indexOf('\n')) >= 0) {
                const QByteArray line = pending.left(nl);
                pending.remove(0, nl + 1);
                if (line.startsWith("committed "))
                    committed.insert(line.mid(10).toULongLong());
            }
        };
        while (committed.size() < 5) {
            QVERIFY2(helper.waitForReadyRead(30000), "the helper stopped reporting commits");
            readLines();
        }
        helper.kill(); // SIGKILL
        QVERIFY(helper.waitForFinished(30000));
        QCOMPARE(helper.exitStatus(), QProcess::CrashExit);
        readLines(); // lines written before the kill
        const std::uint64_t lastReported = *committed.rbegin();

        // Integrity first, on a plain connection (it also recovers the WAL).
        {
            auto raw = sqlite::Connection::open(db.toStdString(), sqlite::Connection::Mode::ReadWrite);
            QVERIFY(raw);
            auto check = raw->queryText("PRAGMA integrity_check");
            QVERIFY2(check, check.status().toString().c_str());
            QCOMPARE(*check, std::string("ok"));
        }
        auto store = TraceStore::open(db.toStdString(), TraceStore::OpenMode::MustExist);
        QVERIFY2(store, store.status().toString().c_str());
        auto sessions = (*store)->sessions().value();
        QCOMPARE(sessions.size(), std::size_t(1));
        const SessionInfo &s = sessions.front();
        QVERIFY(!s.endedAtUs); // it never ended
        const std::uint64_t stored = s.requestCount + s.batchCount;
        // Every reported commit survived; a transaction that committed
        // without its report is whole (the stored count is a commit total
        // or beyond the last reported one).
        QVERIFY2(stored >= lastReported,
                 qPrintable(QString("stored %1 < reported %2").arg(stored).arg(lastReported)));
        QVERIFY(committed.count(stored) == 1 || stored > lastReported);
        // No half batches.
        auto batches = (*store)->batches(s.id).value();
        auto requests = (*store)->requests(s.id).value();
        std::map<std::uint64_t, int> members;
        for (const StoredRequest &r : requests)
            ++members[r.batchId];
        QCOMPARE(members.size(), batches.size());
        for (const StoredBatch &b : batches)
            QCOMPARE(members[b.batchId], b.size);
    }
};

QTEST_GUILESS_MAIN(TestStoreCrash)
#include "test_store_crash.moc"
