// Importing CSV traces into the store: both formats told apart by the
// header, malformed rows reported with their line numbers (skipped and
// counted, or the whole file rejected with nothing stored), cancellation,
// and the shared 19k-row Azure trace. Also the trace_csv extensions the
// import relies on (exact skipped count, progress on bad lines too).
#include "engine/store/trace_store.h"

#include <QtTest>

#include <fstream>

using namespace bp;

namespace {

std::string write(const QTemporaryDir &dir, const char *name, const std::string &text)
{
    const std::string path = dir.filePath(name).toStdString();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

std::shared_ptr<TraceStore> openStore(const QTemporaryDir &dir)
{
    auto s = TraceStore::open(dir.filePath("t.sqlite").toStdString());
    Q_ASSERT(s);
    return s.value();
}

const char *kMalformed = "arrival_s,input_tokens,output_tokens\n" // line 1
                         "0.0,10,5\n"                             // 2
                         "0.5,abc,5\n"                            // 3: bad input
                         "1.0,20,6\n"                             // 4
                         "\n"                                     // 5: blank, ignored
                         "1.5,30\n"                               // 6: two fields
                         "-2,30,1\n"                              // 7: negative time
                         "2.0,40,-1\n"                            // 8: negative output
                         "2.5,50,7\n";                            // 9

} // namespace

class TestStoreImport : public QObject {
    Q_OBJECT
private slots:
    void azureFormat()
    {
        QTemporaryDir dir;
        auto store = openStore(dir);
        const auto path = write(dir, "azure.csv",
                                "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                                "2023-11-16 18:15:46.6805900,374,44\r\n"
                                "2023-11-16 18:15:50.9951690,396,109\r\n"
                                "2023-11-16 18:15:46.1805900,91,16\r\n");
        auto r = store->importTrace(path);
        QVERIFY2(r, r.status().toString().c_str());
        QCOMPARE(r->trace.format, TraceFormat::Azure);
        QCOMPARE(r->trace.name, std::string("azure"));
        QCOMPARE(r->trace.rows, std::uint64_t(3));
        QCOMPARE(r->trace.skippedRows, std::uint64_t(0));
        auto rows = store->traceRows(r->trace.id);
        QVERIFY(rows);
        // sorted by arrival, offsets from the earliest
        QCOMPARE(rows->at(0).inputTokens, 91);
        QCOMPARE(rows->at(0).arrivalS, 0.0);
        QVERIFY(std::abs(rows->at(1).arrivalS - 0.5) < 1e-6);
        QVERIFY(std::abs(rows->at(2).arrivalS - 4.814579) < 1e-6);
        QVERIFY(std::abs(r->trace.durationS - 4.814579) < 1e-6);
    }

    void plainFormatSkipsBadRowsWithLineNumbers()
    {
        QTemporaryDir dir;
        auto store = openStore(dir);
        const auto path = write(dir, "plain.csv", kMalformed);
        ImportOptions options;
        options.name = "mixed";
        auto r = store->importTrace(path, options);
        QVERIFY2(r, r.status().toString().c_str());
        QCOMPARE(r->trace.format, TraceFormat::Plain);
        QCOMPARE(r->trace.name, std::string("mixed"));
        QCOMPARE(r->trace.rows, std::uint64_t(3));
        QCOMPARE(r->trace.skippedRows, std::uint64_t(4));
        QCOMPARE(r->errors.size(), std::size_t(4));
        const std::size_t lines[] = {3, 6, 7, 8};
        for (std::size_t i = 0; i < 4; ++i)
            QCOMPARE(r->errors[i].line, lines[i]);
        QVERIFY(r->errors[0].message.find("abc") != std::string::npos);
        auto rows = store->traceRows(r->trace.id);
        QCOMPARE(rows->size(), std::size_t(3));
        QCOMPARE(rows->at(2).inputTokens, 50);
        QCOMPARE(rows->at(2).arrivalS, 2.5);
        QCOMPARE(store->trace(r->trace.id)->skippedRows, std::uint64_t(4));
    }

    void rejectFileStoresNothing()
    {
        QTemporaryDir dir;
        auto store = openStore(dir);
        const auto path = write(dir, "plain.csv", kMalformed);
        ImportOptions options;
        options.badRows = BadRowPolicy::RejectFile;
        auto r = store->importTrace(path, options);
        QVERIFY(!r);
        QCOMPARE(r.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(r.status().message().find("line 3") != std::string::npos, r.status().message().c_str());
        QVERIFY(r.status().message().find("plain.csv") != std::string::npos);
        QCOMPARE(store->traces()->size(), std::size_t(0));
    }

    void unusableFiles()
    {
        QTemporaryDir dir;
        auto store = openStore(dir);
        auto missing = store->importTrace(dir.filePath("nope.csv").toStdString());
        QCOMPARE(missing.status().code(), StatusCode::NotFound);
        auto header = store->importTrace(write(dir, "h.csv", "time,in,out\n1,2,3\n"));
        QCOMPARE(header.status().code(), StatusCode::InvalidArgument);
        QVERIFY(header.status().message().find("line 1") != std::string::npos);
        auto empty = store->importTrace(write(dir, "e.csv", ""));
        QCOMPARE(empty.status().code(), StatusCode::InvalidArgument);
        auto allBad = store->importTrace(write(dir, "b.csv", "arrival_s,input_tokens,output_tokens\nx,y,z\n"));
        QCOMPARE(allBad.status().code(), StatusCode::InvalidArgument);
        QVERIFY(allBad.status().message().find("no valid rows") != std::string::npos);
        QCOMPARE(store->traces()->size(), std::size_t(0));
    }

    void cancelStoresNothing()
    {
        QTemporaryDir dir;
        auto store = openStore(dir);
        std::string text = "arrival_s,input_tokens,output_tokens\n";
        for (int i = 0; i < 20000; ++i)
            text += std::to_string(i * 0.01) + ",16,4\n";
        const auto path = write(dir, "big.csv", text);
        // Cancel during parsing.
        ImportOptions early;
        int calls = 0;
        early.progress = [&](double) { return ++calls < 2; };
        auto r = store->importTrace(path, early);
        QVERIFY(!r);
        QVERIFY(r.status().message().find("cancelled") != std::string::npos);
        // Cancel during inserting: the transaction is rolled back.
        ImportOptions late;
        late.progress = [](double fraction) { return fraction < 0.85; };
        r = store->importTrace(path, late);
        QVERIFY(!r);
        QCOMPARE(store->traces()->size(), std::size_t(0));
        // Progress runs to 1 and is monotonic.
        ImportOptions watched;
        double last = -1;
        bool monotonic = true;
        watched.progress = [&](double fraction) {
            monotonic = monotonic && fraction >= last;
            last = fraction;
            return true;
        };
        r = store->importTrace(path, watched);
        QVERIFY(r);
        QVERIFY(monotonic);
        QCOMPARE(last, 1.0);
        QCOMPARE(r->trace.rows, std::uint64_t(20000));
    }

    // trace_csv: every malformed row is counted even past maxErrorsKept, and
    // progress (hence cancel) also runs through a stretch of bad lines.
    void parserCountsAndProgressOnBadLines()
    {
        std::string text = "arrival_s,input_tokens,output_tokens\n0,1,1\n";
        for (int i = 0; i < 9000; ++i)
            text += "bad,row,here\n";
        TraceParseOptions options;
        std::size_t calls = 0;
        options.progress = [&](std::size_t, std::size_t) { return ++calls > 0; };
        auto parsed = parseTraceText(text, options);
        QVERIFY(parsed);
        QCOMPARE(parsed->skippedRows, std::size_t(9000));
        QCOMPARE(parsed->errors.size(), options.maxErrorsKept + 1); // + the "N more" summary
        QCOMPARE(parsed->errors.back().line, std::size_t(0));
        QVERIFY(calls >= 3); // two 4096-line marks + the final call
        options.progress = [](std::size_t, std::size_t) { return false; };
        auto cancelled = parseTraceText(text, options);
        QVERIFY(!cancelled);
        QVERIFY(cancelled.status().message().find("cancelled") != std::string::npos);
    }

    void sharedAzureTrace()
    {
        // The repository ships the sample trace (resources/traces/, CC-BY 4.0).
        const QString shared =
            qEnvironmentVariable("BATCHPILOT_SOURCE_DIR") + "/resources/traces/azure_llm_conv_2023.csv";
        QVERIFY2(QFile::exists(shared), qPrintable(shared + " is missing from the checkout"));
        QTemporaryDir dir;
        auto store = openStore(dir);
        auto r = store->importTrace(shared.toStdString());
        QVERIFY2(r, r.status().toString().c_str());
        QCOMPARE(r->trace.format, TraceFormat::Azure);
        QCOMPARE(r->trace.rows, std::uint64_t(19366));
        QCOMPARE(r->trace.skippedRows, std::uint64_t(0));
        QVERIFY(r->trace.durationS > 3000 && r->trace.durationS < 3700); // about an hour
        auto rows = store->traceRows(r->trace.id);
        QCOMPARE(rows->size(), std::size_t(19366));
        for (std::size_t i = 1; i < rows->size(); ++i)
            QVERIFY(rows->at(i).arrivalS >= rows->at(i - 1).arrivalS);
    }
};

QTEST_GUILESS_MAIN(TestStoreImport)
#include "test_store_import.moc"
