// `calibrate --session` joins a session's request rows to its batch rows.
// Batch ids are unique in a session now; a session
// recorded by an older version repeats them after a switch of policy kind, and the
// join must still give each batch its own members: the request-level row
// of that id dispatched when the request left the queue.
#include "engine/sim/calibration/calibration.h"
#include "engine/store/sqlite_db.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace bp;

class TestCalibrationJoin : public QObject {
    Q_OBJECT
private slots:
    void repeatedBatchIdsJoinByDispatchTime()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("old.sqlite").toStdString();
        std::int64_t session = 0;
        {
            auto store = TraceStore::open(path);
            QVERIFY2(store, store.status().toString().c_str());
            session = *(*store)->startSession({});
        }
        {
            auto db = sqlite::Connection::open(path, sqlite::Connection::Mode::ReadWrite);
            QVERIFY(db);
            const std::string s = std::to_string(session);
            // Two batches with id 1: one before a policy switch (2 members,
            // 4 and 6 tokens) and one after it (1 member, 30 tokens), as the
            // engine numbered them before ids were unique per session.
            const std::string sql =
                "INSERT INTO batches (session_id, batch_id, dispatched_ns, intended_ns, size, padded_length, "
                "real_tokens, padded_tokens, compute_ns, reason, policy, bucket, executor, config_version, "
                "status) "
                "VALUES (" +
                s +
                ", 1, 1000000, 1000000, 2, 8, 16, 16, 10000000, 'single', 'dynamic', 0, 0, 1, 'ok'),"
                "(" +
                s +
                ", 1, 500000000, 500000000, 1, 8, 8, 8, 20000000, 'single', 'dynamic', 0, 0, 3, 'ok');"
                "INSERT INTO requests (session_id, request_id, arrival_ns, queue_wait_ns, compute_ns, "
                "total_ns, "
                "ttft_ns, input_tokens, output_tokens, bucket, batch_id, status) VALUES "
                "(" +
                s +
                ", 1, 0, 1000000, 10000000, 11500000, 0, 8, 4, 0, 1, 'ok'),"
                "(" +
                s +
                ", 2, 0, 1000000, 10000000, 11500000, 0, 8, 6, 0, 1, 'ok'),"
                "(" +
                s + ", 3, 490000000, 10000000, 20000000, 32000000, 0, 8, 30, 0, 1, 'ok');";
            QVERIFY(db->exec(sql, "write an old session"));
        }
        auto store = TraceStore::open(path, TraceStore::OpenMode::MustExist);
        QVERIFY(store);
        auto observed = sessionObservations(**store, session, true);
        QVERIFY2(observed, observed.status().toString().c_str());
        QCOMPARE(observed->batches.size(), std::size_t(2));
        const std::vector<int> first = {4, 6}, second = {30};
        const auto termsA = CostModel::batchTerms(true, 2, 8, first);
        const auto termsB = CostModel::batchTerms(true, 1, 8, second);
        for (const CostObservation &o : observed->batches) {
            const bool isA = o.seconds == 0.010;
            QVERIFY(isA || o.seconds == 0.020);
            QVERIFY(o.terms == (isA ? termsA : termsB));
        }
        // Each batch's own hand-off, 0.5 ms and 2 ms (not one of them twice):
        // their median; no executor gap qualifies.
        QCOMPARE(observed->overheadSamples, std::size_t(2));
        QVERIFY2(std::abs(observed->overheadS - 0.00125) < 1e-9, std::to_string(observed->overheadS).c_str());
    }
};

QTEST_APPLESS_MAIN(TestCalibrationJoin)
#include "test_calibration_join.moc"
