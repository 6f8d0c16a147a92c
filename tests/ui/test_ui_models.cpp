// Every item model of the console under QAbstractItemModelTester, driven
// through resets, in-place updates, inserts, moves and removals — with real
// store data where the model shows store values.
#include "gui_test_support.h"

#include "ui/bucket_edges_model.h"
#include "ui/comparison_model.h"
#include "ui/session_list_model.h"
#include "ui/trace_list_model.h"

#include "engine/store/session_summary.h"

#include <QAbstractItemModelTester>
#include <QBrush>
#include <QFont>
#include <QSignalSpy>

using namespace bp;
using namespace bp::ui;

namespace {
constexpr auto kFatal = QAbstractItemModelTester::FailureReportingMode::QtTest;

std::vector<TraceRow> rows(int n)
{
    std::vector<TraceRow> out;
    for (int i = 0; i < n; ++i)
        out.push_back({i * 0.01, 10 + i, i % 3});
    return out;
}
} // namespace

class TestUiModels : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { test::isolateSettings(); }

    void bucketEdges()
    {
        BucketEdgesModel model;
        QAbstractItemModelTester tester(&model, kFatal);
        QSignalSpy edited(&model, &BucketEdgesModel::edgesEdited);
        model.setEdges({512, 64, 128, 64, -1}); // sorted, deduplicated, non-positive dropped
        QCOMPARE(model.edges(), (std::vector<int>{64, 128, 512}));
        QCOMPARE(edited.count(), 0); // not a user edit
        QCOMPARE(model.index(1).data(Qt::EditRole).toInt(), 128);
        QCOMPARE(model.index(1).data().toString(), QStringLiteral("≤ 128 tokens"));

        QVERIFY(model.setData(model.index(0), 1000)); // moves down to the end
        QCOMPARE(model.edges(), (std::vector<int>{128, 512, 1000}));
        QVERIFY(model.setData(model.index(2), 100)); // moves up to the front
        QCOMPARE(model.edges(), (std::vector<int>{100, 128, 512}));
        QVERIFY(model.setData(model.index(1), 200)); // stays in place
        QCOMPARE(model.edges(), (std::vector<int>{100, 200, 512}));
        QVERIFY(model.setData(model.index(1), QStringLiteral(" 300 "))); // text from an editor
        QCOMPARE(model.edges(), (std::vector<int>{100, 300, 512}));

        QSignalSpy rejected(&model, &BucketEdgesModel::editRejected);
        QVERIFY(!model.setData(model.index(0), 512));
        QVERIFY(!model.setData(model.index(0), 0));
        QVERIFY(!model.setData(model.index(0), QStringLiteral("lots")));
        QCOMPARE(rejected.count(), 3);
        QCOMPARE(model.edges(), (std::vector<int>{100, 300, 512}));

        QCOMPARE(model.addEdge(), 3); // 1024 at the end
        QVERIFY(model.addEdge(200));
        QVERIFY(!model.addEdge(300));
        QCOMPARE(model.edges(), (std::vector<int>{100, 200, 300, 512, 1024}));
        QVERIFY(model.removeRows(1, 2));
        QVERIFY(!model.removeRows(3, 5));
        QCOMPARE(model.edges(), (std::vector<int>{100, 512, 1024}));
        QCOMPARE(edited.count(), 7);
        model.setEdges({});
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(model.addEdge(), 0);
        QCOMPARE(model.edges(), (std::vector<int>{64}));
    }

    void traceList()
    {
        test::TempStore store;
        TraceListModel model;
        QAbstractItemModelTester tester(&model, kFatal);
        QVERIFY(store.store->addTrace("first", "/tmp/first.csv", TraceFormat::Plain, rows(10)).isOk());
        QVERIFY(store.store->addTrace("second", "", TraceFormat::Azure, rows(3), 2).isOk());
        model.setTraces(store.store->traces().value());
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0, TraceListModel::Name).data().toString(),
                 QStringLiteral("second")); // newest first
        QCOMPARE(model.index(0, TraceListModel::Skipped).data().toULongLong(), 2ull);
        QCOMPARE(model.index(1, TraceListModel::Rows).data().toULongLong(), 10ull);
        QCOMPARE(model.index(1, TraceListModel::Source).data().toString(), QStringLiteral("first.csv"));
        const qlonglong id = model.index(1, TraceListModel::Format).data(TraceListModel::IdRole).toLongLong();
        QCOMPARE(model.rowOf(id), 1);

        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.setTraces(store.store->traces().value()); // same rows: in place
        QCOMPARE(reset.count(), 0);
        QCOMPARE(changed.count(), 1);
        QVERIFY(store.store->deleteTrace(id).isOk());
        model.setTraces(store.store->traces().value());
        QCOMPARE(reset.count(), 1);
        QCOMPARE(model.rowCount(), 1);
        model.setTraces({});
        QCOMPARE(model.rowCount(), 0);
    }

    void sessionList()
    {
        test::TempStore store;
        SessionListModel model;
        QAbstractItemModelTester tester(&model, kFatal);
        SessionStart live;
        live.model = "builtin:echo";
        live.device = "cpu";
        const std::int64_t a = store.store->startSession(live).value();
        SessionStart replay = live;
        replay.kind = "replay";
        replay.sourceSessionId = a;
        replay.replay = {{"speed", 2.0}};
        const std::int64_t b = store.store->startSession(replay).value();
        QVERIFY(store.store->endSession(b, {}).isOk());
        model.setLiveSessionId(a);
        model.setSessions(store.store->sessions().value());
        QCOMPARE(model.rowCount(), 2);
        const int rowB = model.rowOf(b), rowA = model.rowOf(a);
        QCOMPARE(model.index(rowB, SessionListModel::Kind).data().toString(),
                 QStringLiteral("replay of session %1 (×2)").arg(a));
        QVERIFY(model.index(rowA, SessionListModel::Kind).data().toString().contains("this console"));
        QCOMPARE(model.index(rowA, SessionListModel::Duration).data().toString(), QStringLiteral("running"));
        QVERIFY(model.index(rowA, SessionListModel::Id).data(Qt::FontRole).value<QFont>().bold());
        QCOMPARE(model.index(rowB, SessionListModel::Model).data().toString(),
                 QStringLiteral("builtin:echo (cpu)"));

        model.setSessions(store.store->sessions().value()); // in place
        QVERIFY(store.store->deleteSession(b).isOk());
        model.setSessions(store.store->sessions().value()); // reset
        QCOMPARE(model.rowCount(), 1);
    }

    void comparison()
    {
        ComparisonModel model;
        QAbstractItemModelTester tester(&model, kFatal);
        SessionSummary a, b;
        a.sessionId = 3;
        b.sessionId = 7;
        a.throughputRps = 100;
        b.throughputRps = 150;
        a.latencyP99Ms = 10;
        b.latencyP99Ms = 20;
        a.kind = b.kind = "live";
        model.setSessions(a, b);
        QCOMPARE(std::size_t(model.rowCount()), comparisonRows(a, b).size());
        QCOMPARE(model.headerData(ComparisonModel::A, Qt::Horizontal).toString(),
                 QStringLiteral("session 3 (A)"));
        int throughput = -1, p99 = -1;
        for (int r = 0; r < model.rowCount(); ++r) {
            const QString label = model.index(r, ComparisonModel::Metric).data().toString();
            if (label == "throughput (req/s)")
                throughput = r;
            if (label == "latency p99 (ms)")
                p99 = r;
        }
        QVERIFY(throughput >= 0 && p99 >= 0);
        QCOMPARE(model.index(throughput, ComparisonModel::Change).data().toString(),
                 QStringLiteral("+50.0%"));
        // More throughput is better (green), more latency is worse (red).
        const QColor better =
            model.index(throughput, ComparisonModel::Change).data(Qt::ForegroundRole).value<QBrush>().color();
        const QColor worse =
            model.index(p99, ComparisonModel::Change).data(Qt::ForegroundRole).value<QBrush>().color();
        QVERIFY(better.green() > better.red());
        QVERIFY(worse.red() > worse.green());
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }
};

QTEST_MAIN(TestUiModels)
#include "test_ui_models.moc"
