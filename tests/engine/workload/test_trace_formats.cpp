// The trace formats of the field (engine/workload/trace_csv.h): Azure 2024 timestamps
// beside 2023's, BurstGPT (failed requests kept or dropped), Mooncake JSONL
// (hash ids kept, sorted with their rows, stored and read back, prefix reuse),
// genai-perf payloads (lengths from input_length, text or hash_ids), detection
// by content and the --format override, bad rows reported with their line
// numbers, and the Mooncake export read back unchanged (directly and through
// the store). Fixtures: tests/engine/workload/traces/.
#include "engine/store/trace_store.h"
#include "engine/workload/trace_export.h"

#include <QtTest>

#include <cstring>
#include <fstream>
#include <sstream>

using namespace bp;

namespace {

std::string fixture(const char *name)
{
    return std::string(TRACE_FIXTURES) + "/" + name;
}

std::vector<std::size_t> errorLines(const ParsedTrace &t)
{
    std::vector<std::size_t> lines;
    for (const TraceParseError &e : t.errors)
        lines.push_back(e.line);
    return lines;
}

TraceParseOptions rejecting()
{
    TraceParseOptions o;
    o.badRows = BadRowPolicy::RejectFile;
    return o;
}

TraceParseOptions skippingFailed()
{
    TraceParseOptions o;
    o.skipFailed = true;
    return o;
}

TraceParseOptions asFormat(TraceFormat f)
{
    TraceParseOptions o;
    o.format = f;
    return o;
}

ImportOptions importSkippingFailed()
{
    ImportOptions o;
    o.skipFailed = true;
    return o;
}

ImportOptions importRejecting()
{
    ImportOptions o;
    o.badRows = BadRowPolicy::RejectFile;
    return o;
}

bool near(double a, double b)
{
    return std::abs(a - b) < 1e-6;
}

} // namespace

class TestTraceFormats : public QObject {
    Q_OBJECT
private slots:
    void azure2024()
    {
        auto t = parseTraceFile(fixture("azure_2024.csv"));
        QVERIFY2(t, t.status().toString().c_str());
        QCOMPARE(t->format, TraceFormat::Azure);
        // line 5: a bad token count; line 7: an offset of +99:00
        QCOMPARE(errorLines(*t), (std::vector<std::size_t>{5, 7}));
        QVERIFY(t->errors[1].message.find("bad arrival time") != std::string::npos);
        QCOMPARE(t->rows.size(), std::size_t(5));
        // "+00:00", whole seconds without a fraction, and 02:00:04+02:00 = 00:00:04 UTC
        QVERIFY(near(t->rows[0].arrivalS, 0));
        QVERIFY(near(t->rows[1].arrivalS, 0.007405));
        QVERIFY(near(t->rows[2].arrivalS, 1 - 0.009930));
        QVERIFY(near(t->rows[3].arrivalS, 2.25 - 0.009930));
        QVERIFY(near(t->rows[4].arrivalS, 4 - 0.009930));
        QCOMPARE(t->rows[4].inputTokens, 584);
        QVERIFY(t->hashIds.empty());
    }

    void azureTimestampForms_data()
    {
        QTest::addColumn<QString>("second");
        QTest::addColumn<double>("offset");
        QTest::newRow("2023, 7 digits") << "2023-11-16 18:15:47.6805900" << 1.0;
        QTest::newRow("2024, +00:00") << "2023-11-16 18:15:47.680590+00:00" << 1.0;
        QTest::newRow("whole second") << "2023-11-16 18:15:48+00:00" << 1.31941;
        QTest::newRow("Z") << "2023-11-16T18:15:47.68059Z" << 1.0;
        QTest::newRow("-0130") << "2023-11-16 16:45:47.68059-0130" << 1.0;
    }
    void azureTimestampForms()
    {
        QFETCH(QString, second);
        QFETCH(double, offset);
        const std::string text =
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10,1\n" +
            second.toStdString() + ",20,2\n";
        auto t = parseTraceText(text, rejecting());
        QVERIFY2(t, t.status().toString().c_str());
        QVERIFY2(near(t->rows[1].arrivalS, offset), std::to_string(t->rows[1].arrivalS).c_str());
    }

    void azureTimestampRejects_data()
    {
        QTest::addColumn<QString>("stamp");
        QTest::newRow("dot, no digits") << "2023-11-16 18:15:46.";
        QTest::newRow("offset hour 24") << "2023-11-16 18:15:46+24:00";
        QTest::newRow("trailing text") << "2023-11-16 18:15:46.5 UTC";
        QTest::newRow("short offset") << "2023-11-16 18:15:46+01";
    }
    void azureTimestampRejects()
    {
        QFETCH(QString, stamp);
        auto t = parseTraceText("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n" +
                                stamp.toStdString() + ",2,2\n");
        QVERIFY(t);
        QCOMPARE(errorLines(*t), std::vector<std::size_t>{3});
    }

    void burstGpt()
    {
        auto t = parseTraceFile(fixture("burstgpt.csv"));
        QVERIFY2(t, t.status().toString().c_str());
        QCOMPARE(t->format, TraceFormat::BurstGpt);
        QCOMPARE(errorLines(*t), (std::vector<std::size_t>{5, 6}));
        QVERIFY(t->errors[0].message.find("bad input token count '-3'") != std::string::npos);
        QVERIFY(t->errors[1].message.find("expected 6") != std::string::npos);
        // failed requests (0 response tokens) stay, as prefill-only arrivals
        QCOMPARE(t->failedRows, std::size_t(2));
        QCOMPARE(t->rows.size(), std::size_t(5));
        QCOMPARE(t->rows[1].inputTokens, 1087);
        QCOMPARE(t->rows[1].outputTokens, 0);
        QVERIFY(near(t->rows[4].arrivalS, 225));

        auto dropped = parseTraceFile(fixture("burstgpt.csv"), skippingFailed());
        QVERIFY(dropped);
        QCOMPARE(dropped->failedRows, std::size_t(2));
        QCOMPARE(dropped->rows.size(), std::size_t(3));
        for (const TraceRow &r : dropped->rows)
            QVERIFY(r.outputTokens > 0);
    }

    void mooncake()
    {
        auto t = parseTraceFile(fixture("mooncake.jsonl"));
        QVERIFY2(t, t.status().toString().c_str());
        QCOMPARE(t->format, TraceFormat::Mooncake);
        // 4: three hash ids for 600 tokens; 5: no hash_ids; 7: not JSON; 8: negative timestamp
        QCOMPARE(errorLines(*t), (std::vector<std::size_t>{4, 5, 7, 8}));
        QVERIFY(t->errors[0].message.find("3 hash ids for 600 input tokens") != std::string::npos);
        QVERIFY(t->errors[1].message.find("hash_ids") != std::string::npos);
        QCOMPARE(t->errors[2].message, std::string("not valid JSON"));
        QCOMPARE(t->rows.size(), std::size_t(5));
        QCOMPARE(t->hashIds.size(), std::size_t(5));
        // line 6 (1.5 s) is earlier than line 3 (3 s): sorted, its hash ids moved with it
        QVERIFY(near(t->rows[2].arrivalS, 1.5));
        QCOMPARE(t->rows[2].inputTokens, 1024);
        QCOMPARE(t->hashIds[2], (PrefixBlocks{0, 6}));
        QCOMPARE(t->hashIds[3], (PrefixBlocks{0, 1, 4, 5}));
        QCOMPARE(t->rows[3].outputTokens, 300);

        const PrefixReuse reuse = prefixReuse(t->hashIds);
        QCOMPARE(reuse.blocks, std::uint64_t(13));
        QCOMPARE(reuse.reusedBlocks, std::uint64_t(6));
        QCOMPARE(reuse.uniqueBlocks, std::uint64_t(7));
    }

    void genAiPerf()
    {
        auto t = parseTraceFile(fixture("genai_perf.jsonl"));
        QVERIFY2(t, t.status().toString().c_str());
        QCOMPARE(t->format, TraceFormat::GenAiPerf);
        // 4: text and text_input; 5: no timestamp (delay only); 7: no length at all
        QCOMPARE(errorLines(*t), (std::vector<std::size_t>{4, 5, 7}));
        QCOMPARE(t->rows.size(), std::size_t(4));
        QCOMPARE(t->rows[0].inputTokens, 128);
        // text: one token per byte, the engine's tokenizer
        QCOMPARE(t->rows[1].inputTokens, int(std::strlen("What breed is the dog in the image?")));
        // hash ids only: 512 tokens per block
        QCOMPARE(t->rows[2].inputTokens, 3 * kPrefixBlockTokens);
        QCOMPARE(t->hashIds[2], (PrefixBlocks{0, 1, 2}));
        QVERIFY(t->hashIds[0].empty());
        // no output_length: 0
        QCOMPARE(t->rows[3].outputTokens, 0);
        QVERIFY(near(t->rows[3].arrivalS, 1.0));
    }

    void rejectFileNamesTheLine()
    {
        auto t = parseTraceFile(fixture("mooncake.jsonl"), rejecting());
        QVERIFY(!t);
        QVERIFY2(t.status().message().find("line 4:") != std::string::npos, t.status().message().c_str());
    }

    void detection_data()
    {
        QTest::addColumn<QString>("firstLine");
        QTest::addColumn<int>("format");
        QTest::newRow("azure") << "TIMESTAMP,ContextTokens,GeneratedTokens" << int(TraceFormat::Azure);
        QTest::newRow("plain") << "arrival_s,input_tokens,output_tokens" << int(TraceFormat::Plain);
        QTest::newRow("burstgpt") << "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
                                  << int(TraceFormat::BurstGpt);
        QTest::newRow("mooncake")
            << R"({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]})"
            << int(TraceFormat::Mooncake);
        QTest::newRow("mooncake + extra keys")
            << R"({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0], "session_id": "x"})"
            << int(TraceFormat::Mooncake);
        QTest::newRow("genai-perf: text")
            << R"({"timestamp": 0, "text": "hi"})" << int(TraceFormat::GenAiPerf);
        QTest::newRow("genai-perf: no hash ids")
            << R"({"timestamp": 0, "input_length": 1, "output_length": 1})" << int(TraceFormat::GenAiPerf);
    }
    void detection()
    {
        QFETCH(QString, firstLine);
        QFETCH(int, format);
        auto f = detectTraceFormat(firstLine.toStdString());
        QVERIFY2(f, f.status().toString().c_str());
        QCOMPARE(int(*f), format);
    }

    void unknownContentIsAClearError()
    {
        auto t = parseTraceText("time,in,out\n1,2,3\n");
        QVERIFY(!t);
        QVERIFY(t.status().message().find("line 1: unknown header 'time,in,out'") != std::string::npos);
        QVERIFY(t.status().message().find("Mooncake") != std::string::npos);
        auto j = parseTraceText("[1, 2, 3]\n");
        QVERIFY(!j);
        QVERIFY(j.status().message().find("not a JSON object") != std::string::npos);
    }

    void formatOverride()
    {
        // A Mooncake file read as genai-perf: the same rows (its fields mean the same there).
        auto asGenai = parseTraceFile(fixture("mooncake.jsonl"), asFormat(TraceFormat::GenAiPerf));
        QVERIFY(asGenai);
        QCOMPARE(asGenai->format, TraceFormat::GenAiPerf);
        // line 5 (no hash_ids) is a valid genai-perf row
        QCOMPARE(errorLines(*asGenai), (std::vector<std::size_t>{4, 7, 8}));
        // A CSV forced to another CSV format names the header it expected.
        auto wrong = parseTraceFile(fixture("burstgpt.csv"), asFormat(TraceFormat::Azure));
        QVERIFY(!wrong);
        QVERIFY2(wrong.status().message().find(
                     "expected the azure header 'TIMESTAMP,ContextTokens,GeneratedTokens'") !=
                     std::string::npos,
                 wrong.status().message().c_str());
        QCOMPARE(parseTraceFormat("genai-perf"), std::optional<TraceFormat>(TraceFormat::GenAiPerf));
        QCOMPARE(parseTraceFormat("csv"), std::optional<TraceFormat>());
    }

    void mooncakeExportRoundTrip()
    {
        auto t = parseTraceFile(fixture("mooncake.jsonl"));
        QVERIFY(t);
        std::ostringstream out;
        const auto stats = writeMooncakeJsonl(out, t->rows, t->hashIds);
        QCOMPARE(stats.rows, std::size_t(5));
        QVERIFY(!stats.syntheticHashIds);
        auto back = parseTraceText(out.str(), rejecting());
        QVERIFY2(back, back.status().toString().c_str());
        QCOMPARE(back->format, TraceFormat::Mooncake);
        QCOMPARE(back->hashIds, t->hashIds);
        QCOMPARE(back->rows.size(), t->rows.size());
        for (std::size_t i = 0; i < t->rows.size(); ++i) {
            QVERIFY(near(back->rows[i].arrivalS, t->rows[i].arrivalS));
            QCOMPARE(back->rows[i].inputTokens, t->rows[i].inputTokens);
            QCOMPARE(back->rows[i].outputTokens, t->rows[i].outputTokens);
        }
    }

    void mooncakeExportWithoutHashIds()
    {
        // Rows with no ids (a session, a CSV trace): fresh ids, one per
        // 512-token block, none shared, and the file still reads back.
        const std::vector<TraceRow> rows{{0, 1, 3}, {0.0004, 513, 0}, {1.25, 1024, 9}};
        std::ostringstream out;
        QVERIFY(writeMooncakeJsonl(out, rows).syntheticHashIds);
        auto back = parseTraceText(out.str(), rejecting());
        QVERIFY2(back, back.status().toString().c_str());
        QCOMPARE(back->hashIds, (std::vector<PrefixBlocks>{{0}, {1, 2}, {3, 4}}));
        QCOMPARE(prefixReuse(back->hashIds).reusedBlocks, std::uint64_t(0));
        // milliseconds: 0.4 ms rounds to 0
        QCOMPARE(back->rows[1].arrivalS, 0.0);
        QVERIFY(near(back->rows[2].arrivalS, 1.25));
    }

    void storeKeepsHashIds()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        auto r = store->importTrace(fixture("mooncake.jsonl"));
        QVERIFY2(r, r.status().toString().c_str());
        QCOMPARE(r->trace.format, TraceFormat::Mooncake);
        QCOMPARE(r->trace.blockTokens, kPrefixBlockTokens);
        QCOMPARE(r->trace.skippedRows, std::uint64_t(4));
        QCOMPARE(r->errors.size(), std::size_t(4));
        QCOMPARE(r->errors[0].line, std::size_t(4));
        QCOMPARE(r->prefix.reusedBlocks, std::uint64_t(6));
        auto ids = store->traceHashIds(r->trace.id);
        QVERIFY(ids);
        const auto parsed = parseTraceFile(fixture("mooncake.jsonl"));
        QCOMPARE(*ids, parsed->hashIds);
        // listed with its format after a reopen
        store.reset();
        store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        auto t = store->trace(r->trace.id);
        QCOMPARE(t->format, TraceFormat::Mooncake);
        QCOMPARE(t->blockTokens, kPrefixBlockTokens);

        // A trace without ids has none to give.
        auto burst = store->importTrace(fixture("burstgpt.csv"), importSkippingFailed());
        QVERIFY(burst);
        QCOMPARE(burst->trace.format, TraceFormat::BurstGpt);
        QCOMPARE(burst->failedRows, std::uint64_t(2));
        QCOMPARE(burst->trace.rows, std::uint64_t(3));
        QCOMPARE(burst->trace.blockTokens, 0);
        QVERIFY(store->traceHashIds(burst->trace.id)->empty());
        QVERIFY(!store->traceHashIds(9999));
    }

    void storeExportReimport()
    {
        // import -> export (rows and ids from the store) -> import: the same trace
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        const auto first = store->importTrace(fixture("mooncake.jsonl")).value().trace;
        std::ostringstream out;
        writeMooncakeJsonl(out, store->traceRows(first.id).value(), store->traceHashIds(first.id).value());
        const std::string path = dir.filePath("export.jsonl").toStdString();
        std::ofstream(path) << out.str();
        auto second = store->importTrace(path, importRejecting());
        QVERIFY2(second, second.status().toString().c_str());
        QCOMPARE(second->trace.rows, first.rows);
        QCOMPARE(store->traceHashIds(second->trace.id).value(), store->traceHashIds(first.id).value());
        const auto a = store->traceRows(first.id).value(), b = store->traceRows(second->trace.id).value();
        for (std::size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(b[i].arrivalS, a[i].arrivalS);
            QCOMPARE(b[i].inputTokens, a[i].inputTokens);
            QCOMPARE(b[i].outputTokens, a[i].outputTokens);
        }
        QVERIFY(!store->addTrace("mismatch", "", TraceFormat::Mooncake, a, 0, {{1}}));
    }
};

QTEST_GUILESS_MAIN(TestTraceFormats)
#include "test_trace_formats.moc"
