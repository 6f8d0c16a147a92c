// The paged step's own checks: the KV-write and
// paged-attention ops against a dense float64 reference on the CPU (and on
// CUDA where there is a device), and the invariant that makes a step's cost
// flat in its company: a step over 32 sequences of different lengths, one of
// them mid-prefill, dispatches exactly the ATen ops a step over 1 sequence
// does (counted with a RecordFunction callback) — no loop over sequences.
// torch before Qt: Qt's `slots` keyword macro breaks torch's headers.
#include <ATen/record_function.h>

#include "engine/model/backend.h"
#include "engine/model/device_check.h"
#include "engine/model/model_registry.h"
#include "engine/torch/cuda_plugin.h"
#include "engine/torch/paged_runner.h"
#include "engine/torch/torch_device.h"
#include "model_test_util.h"

#include <QtTest>

#include <map>
#include <mutex>

using namespace bp;
using namespace bp::testing;

namespace {

// Every op RecordFunction sees while `work` runs, by name.
template <class Work> std::map<std::string, int> opsDuring(Work &&work)
{
    static std::mutex mutex;
    static std::map<std::string, int> *sink = nullptr;
    std::map<std::string, int> ops;
    {
        std::lock_guard lock(mutex);
        sink = &ops;
    }
    const at::CallbackHandle handle = at::addGlobalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction &fn) -> std::unique_ptr<at::ObserverContext> {
            std::lock_guard lock(mutex);
            if (sink)
                ++(*sink)[fn.name()];
            return nullptr;
        }).scopes({at::RecordScope::FUNCTION}));
    work();
    at::removeCallback(handle);
    std::lock_guard lock(mutex);
    sink = nullptr;
    return ops;
}

int total(const std::map<std::string, int> &ops)
{
    int n = 0;
    for (const auto &[name, count] : ops)
        n += count;
    return n;
}

QString diff(const std::map<std::string, int> &a, const std::map<std::string, int> &b)
{
    QStringList out;
    std::map<std::string, int> all = a;
    for (const auto &[name, count] : b)
        all.try_emplace(name, 0);
    for (const auto &[name, unused] : all) {
        const int x = a.count(name) ? a.at(name) : 0, y = b.count(name) ? b.at(name) : 0;
        if (x != y)
            out << QStringLiteral("%1: %2 vs %3").arg(QString::fromStdString(name)).arg(x).arg(y);
    }
    return out.join(QStringLiteral("; "));
}

} // namespace

class TestPagedAttention : public QObject {
    Q_OBJECT
private slots:
    void opsMatchTheDenseReferenceOnTheCpu()
    {
        auto report = checkDevice("cpu", false);
        QVERIFY2(report.isOk(), report.status().toString().c_str());
        QVERIFY(report->lines.size() >= 9); // 3 dtypes x 3 shapes
        for (const DeviceCheckLine &l : report->lines)
            QVERIFY2(l.passed, qPrintable(QStringLiteral("%1: error %2 (limit %3) %4")
                                              .arg(QString::fromStdString(l.name))
                                              .arg(l.error)
                                              .arg(l.limit)
                                              .arg(QString::fromStdString(l.detail))));
    }

    void opsAndTokensMatchOnCuda()
    {
        if (torchCudaDeviceCount() == 0)
            QSKIP("no CUDA device here: bench/gpu/check.sh runs this on a GPU machine");
        auto report = checkDevice("cuda", true);
        QVERIFY2(report.isOk(), report.status().toString().c_str());
        for (const DeviceCheckLine &l : report->lines)
            QVERIFY2(l.passed, qPrintable(QString::fromStdString(l.name + ": " + l.detail)));
    }

    // Only the block-table columns a step's sequences use are uploaded,
    // on the eager path and a graph replay alike (PagedRunner::tableColumns),
    // not the graph table's maxPositions / blockTokens columns.
    void aStepUploadsOnlyTheTableColumnsItUses()
    {
        std::vector<PagedSequence> seqs(3);
        seqs[0].blocks = {1};
        seqs[1].blocks = {2, 3, 4};
        seqs[2].blocks = {5, 6, 7, 8, 9, 10, 11};
        const TokenId token = 1;
        std::vector<PagedItem> items;
        for (const PagedSequence &seq : seqs)
            items.push_back({&seq, std::span<const TokenId>(&token, 1), true});
        QCOMPARE(PagedRunner::tableColumns(items), std::int64_t(7));
        QCOMPARE(PagedRunner::tableColumns(std::span<const PagedItem>(items).first(2)), std::int64_t(3));
        QCOMPARE(PagedRunner::tableColumns({}), std::int64_t(1));
    }

    // A capture that fails once it has begun (the test hook) is ended, the
    // graphs are dropped and every step runs eagerly; the model serves on.
    // Only a GPU can run it: on the CPU no graph is ever captured.
    void aFailedCaptureFallsBackToEagerOnCuda()
    {
        if (torchCudaDeviceCount() == 0)
            QSKIP("no CUDA device here: the capture fallback needs one (bench/gpu/check.sh runs this)");
        ModelSpec spec = testSpec("builtin:tiny-decoder");
        spec.device = "cuda";
        auto backend = createOrFail(spec);
        QVERIFY(backend);
        failNextGraphCapture();
        QVERIFY(backend->prepareKv({4096, 0.9, 16}).isOk());
        std::string notes;
        for (const std::string &line : backend->notes())
            notes += line + "\n";
        QVERIFY2(notes.find("CUDA graphs: capture failed, every step runs eagerly") != std::string::npos &&
                     notes.find("test hook") != std::string::npos,
                 notes.c_str());
        std::vector<StepOutcome> out;
        QVERIFY(backend->steps()->step({{1, {1, 2, 3}, true}}, out).isOk());
        QVERIFY(out[0].status.isOk());
        QVERIFY(backend->steps()->step({{1, {out[0].next}, true}}, out).isOk()); // a decode, eagerly
        QVERIFY(out[0].status.isOk());
    }

    void aStepOf32SequencesDispatchesTheOpsOfOne()
    {
        ModelSpec spec = testSpec("builtin:tiny-decoder");
        spec.preset = "small";
        auto backend = createOrFail(spec);
        QVERIFY(backend);
        QVERIFY(backend->prepareKv({8192, 0.9, 16}).isOk());
        StepModel &steps = *backend->steps();
        std::mt19937 rng(33);
        std::vector<StepOutcome> out;
        // 32 sequences of 1..63 prompt tokens, each prefilled and one token decoded
        std::vector<StepItem> items;
        for (std::uint64_t s = 1; s <= 32; ++s)
            items.push_back({s, randomTokens(rng, int(1 + (s * 37) % 63)), true});
        QVERIFY(steps.step(items, out).isOk());
        // the measured step: 31 decodes and sequence 33's second prompt chunk
        std::vector<StepItem> mixed;
        for (std::size_t i = 0; i < 31; ++i)
            mixed.push_back({items[i].sequence, {out[i].next}, true});
        QVERIFY(steps.step({{33, randomTokens(rng, 40), false}}, out).isOk()); // its first chunk
        mixed.push_back({33, randomTokens(rng, 24), false});                   // mid-prefill: no sample
        QCOMPARE(mixed.size(), std::size_t(32));
        std::vector<StepOutcome> mixedOut;
        const auto many = opsDuring([&] { QVERIFY(steps.step(mixed, mixedOut).isOk()); });
        for (const StepOutcome &o : mixedOut)
            QVERIFY(o.status.isOk());
        // a step over one sequence: a decode of sequence 32 (not in the mixed step)
        std::vector<StepOutcome> oneOut;
        const auto one = opsDuring([&] { QVERIFY(steps.step({{32, {1}, true}}, oneOut).isOk()); });
        QVERIFY(total(one) > 0);
        QVERIFY2(one == many, qPrintable(QStringLiteral("32 sequences: %1 ops, 1 sequence: %2 ops; %3")
                                             .arg(total(many))
                                             .arg(total(one))
                                             .arg(diff(many, one))));
        // one attention call and one KV write per layer, whatever the step holds
        QCOMPARE(one.at("batchpilot::paged_attention"), 4);
        QCOMPARE(one.at("batchpilot::write_kv"), 4);
        for (std::uint64_t s = 1; s <= 33; ++s)
            steps.release(s);
        QCOMPARE(steps.cachedTokens(), std::int64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestPagedAttention)
#include "test_paged_attention.moc"
