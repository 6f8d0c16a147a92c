// NVTX ranges as Nsight Systems would see them: CTest starts this suite with
// NVTX_INJECTION64_PATH pointing at nvtx_injection (a small injection library
// built beside it), so NVTX loads it exactly as it loads nsys's. A virtual
// replay of N requests must then leave, in the "BatchPilot" domain, one
// "batch" range per stored batch with its policy, size, padded length, bucket
// and reason, scheduling ranges in the engine category, backend ranges inside
// the batches, and every push matched by a pop. No GPU is involved.
#include "engine/core/nvtx.h"
#include "engine/model/model_registry.h"
#include "engine/replay/replayer.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <dlfcn.h>

#include <map>

using namespace bp;

namespace {

struct Event {
    bool push;
    std::string domain, category, message;
};

using VisitFn = void (*)(int, const char *, const char *, const char *, void *);
using EventsFn = void (*)(VisitFn, void *);

std::vector<Event> recordedEvents()
{
    std::vector<Event> out;
    void *lib = dlopen(std::getenv("NVTX_INJECTION64_PATH"), RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return out;
    auto events = reinterpret_cast<EventsFn>(dlsym(lib, "bpNvtxEvents"));
    if (events)
        events(
            [](int push, const char *d, const char *c, const char *m, void *ctx) {
                static_cast<std::vector<Event> *>(ctx)->push_back({push != 0, d, c, m});
            },
            &out);
    dlclose(lib);
    return out;
}

} // namespace

class TestNvtx : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (!nvtx::compiledIn())
            QSKIP("built without NVTX (no nvtx3 headers found, or BATCHPILOT_NVTX=OFF)");
        QVERIFY2(std::getenv("NVTX_INJECTION64_PATH"), "CTest sets NVTX_INJECTION64_PATH");
        QVERIFY(nvtx::enabled());
    }

    void replayMarksEveryBatch()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        std::vector<TraceRow> rows;
        const int n = 200;
        for (int i = 0; i < n; ++i)
            rows.push_back({0.001 * i, 1 + (i * 37) % 300, 0});
        const auto traceId = store->addTrace("nvtx", "", TraceFormat::Plain, rows).value().id;

        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, traceId};
        o.clock = ReplayClock::Virtual;
        BatchingConfig c;
        c.policy = PolicyKind::Bucketed;
        c.maxBatchSize = 8;
        c.bucketEdges = {64, 128, 512};
        o.config = c;
        auto out = Replayer(store, makeEchoBackend(256, 2048)).run(o);
        QVERIFY2(out, out.status().toString().c_str());
        QCOMPARE(out->completed, std::size_t(n));
        const auto batches = store->batches(out->sessionId).value();

        const std::vector<Event> events = recordedEvents();
        QVERIFY2(!events.empty(), "the injection library recorded nothing");
        std::map<std::string, int> byCategory;
        int depth = 0, batchRanges = 0, backendInBatch = 0, maxDepth = 0;
        std::vector<std::string> open;
        for (const Event &e : events) {
            QCOMPARE(e.domain, std::string("BatchPilot"));
            if (!e.push) {
                QVERIFY2(!open.empty(), "a pop without a push");
                open.pop_back();
                --depth;
                continue;
            }
            ++byCategory[e.category];
            open.push_back(e.message);
            maxDepth = std::max(maxDepth, ++depth);
            if (e.message.starts_with("batch ")) {
                ++batchRanges;
                QCOMPARE(e.category, std::string("engine"));
                QVERIFY2(e.message.find("bucketed") != std::string::npos, e.message.c_str());
                QVERIFY2(e.message.find(" n=") != std::string::npos, e.message.c_str());
                QVERIFY2(e.message.find(" L=") != std::string::npos, e.message.c_str());
                QVERIFY2(e.message.find(" bucket=") != std::string::npos, e.message.c_str());
            }
            if (e.category == "backend" && open.size() >= 2 && open[open.size() - 2].starts_with("batch "))
                ++backendInBatch;
        }
        QVERIFY2(open.empty(), "every push is popped");
        QCOMPARE(std::size_t(batchRanges), batches.size());
        QCOMPARE(backendInBatch, batchRanges);       // the model's run, inside its batch
        QVERIFY(byCategory["engine"] > batchRanges); // scheduling decisions too
        QVERIFY(maxDepth >= 2);
    }

    void decoderMarksPrefillAndDecodeSteps()
    {
        if (!torchAvailable())
            QSKIP("built without libtorch");
        auto backend = createBackend({"builtin:tiny-decoder", "cpu", "test", 1, 7});
        QVERIFY2(backend, backend.status().toString().c_str());
        auto clear = reinterpret_cast<void (*)()>(
            dlsym(dlopen(std::getenv("NVTX_INJECTION64_PATH"), RTLD_NOW | RTLD_NOLOAD), "bpNvtxReset"));
        QVERIFY(clear);
        clear();

        Request a, b;
        a.tokens = {1, 2, 3};
        a.maxNewTokens = 4;
        b.tokens = {4, 5};
        b.maxNewTokens = 2;
        BatchInput input;
        input.paddedLength = 3;
        input.requests = {&a, &b};
        std::vector<SequenceResult> out(2);
        QVERIFY((*backend)->run(input, out).isOk());

        int prefills = 0, decodes = 0;
        for (const Event &e : recordedEvents()) {
            if (!e.push)
                continue;
            QCOMPARE(e.category, std::string("backend"));
            prefills += e.message.starts_with("prefill b=2 L=3");
            decodes += e.message.starts_with("decode step=");
        }
        QCOMPARE(prefills, 1);
        QCOMPARE(decodes, 3); // 4 tokens: the prefill's and three decode steps
    }
};

QTEST_GUILESS_MAIN(TestNvtx)
#include "test_nvtx.moc"
