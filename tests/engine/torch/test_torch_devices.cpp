// Devices: `cpu` and `auto` work everywhere (auto picks CUDA only when
// libtorch sees it), `cuda` / `cuda:N` without such a device is a clear
// Unavailable, malformed strings are InvalidArgument; ModelInfo reports the
// device chosen.
#include "engine/torch/torch_device.h"
#include "model_test_util.h"

using namespace bp;
using namespace bp::testing;

class TestTorchDevices : public QObject {
    Q_OBJECT
private slots:
    void autoFallsBackToCpu()
    {
        const int gpus = torchCudaDeviceCount();
        auto dev = resolveTorchDevice("auto");
        QVERIFY(dev.isOk());
        QCOMPARE(dev->name, std::string(gpus > 0 ? "cuda:0" : "cpu"));

        ModelSpec spec = testSpec("builtin:tiny-encoder");
        spec.device = "auto";
        auto backend = createOrFail(spec);
        QVERIFY(backend);
        QCOMPARE(backend->info().device, dev->name);
        std::vector<Request> reqs{makeRequest({1, 2, 3})};
        QVERIFY(runBatch(*backend, reqs)[0].values.size() > 0);
    }

    void cudaWithoutCudaIsClearError_data()
    {
        QTest::addColumn<QString>("device");
        QTest::newRow("cuda") << "cuda";
        QTest::newRow("cuda:0") << "cuda:0";
        QTest::newRow("cuda:7") << "cuda:7";
    }
    void cudaWithoutCudaIsClearError()
    {
        QFETCH(QString, device);
        const int gpus = torchCudaDeviceCount();
        const int index = device.contains(':') ? device.section(':', 1).toInt() : 0;
        if (index < gpus)
            QSKIP("libtorch sees this CUDA device; the error path needs it absent");
        for (const char *model : {"builtin:tiny-encoder", "builtin:tiny-decoder"}) {
            ModelSpec spec = testSpec(model);
            spec.device = device.toStdString();
            auto created = createBackend(spec);
            QVERIFY(!created.isOk());
            QCOMPARE(created.status().code(), StatusCode::Unavailable);
            QVERIFY2(created.status().message().find(spec.device) != std::string::npos,
                     created.status().message().c_str());
            QVERIFY(created.status().message().find("CUDA") != std::string::npos);
        }
    }

    void malformedDevice_data()
    {
        QTest::addColumn<QString>("device");
        QTest::newRow("tpu") << "tpu";
        QTest::newRow("cuda:") << "cuda:";
        QTest::newRow("cuda:x") << "cuda:x";
        QTest::newRow("cuda:-1") << "cuda:-1";
        QTest::newRow("CPU") << "CPU";
    }
    void malformedDevice()
    {
        QFETCH(QString, device);
        auto dev = resolveTorchDevice(device.toStdString());
        QVERIFY(!dev.isOk());
        QCOMPARE(dev.status().code(), StatusCode::InvalidArgument);
        QVERIFY(dev.status().message().find(device.toStdString()) != std::string::npos);
    }

    // The search behind probeMaxBatch on CUDA, driven by a backend whose
    // "device" holds at most `capacity` sequences (no GPU here to fill).
    void probeFindsLargestFittingBatch_data()
    {
        QTest::addColumn<int>("capacity");
        QTest::addColumn<int>("upTo");
        QTest::addColumn<int>("expected");
        QTest::newRow("limit inside the range") << 37 << 64 << 37;
        QTest::newRow("power of two") << 16 << 64 << 16;
        QTest::newRow("everything fits") << 1000 << 48 << 48;
        QTest::newRow("nothing fits") << 0 << 64 << 0;
    }
    void probeFindsLargestFittingBatch()
    {
        QFETCH(int, capacity);
        QFETCH(int, upTo);
        QFETCH(int, expected);
        class LimitedMemory final : public Backend {
        public:
            explicit LimitedMemory(int capacity) : m_capacity(capacity) {}
            const ModelInfo &info() const override { return m_info; }
            Status run(const BatchInput &in, std::vector<SequenceResult> &) override
            {
                ++calls;
                if (int(in.requests.size()) > m_capacity)
                    return Status(StatusCode::ResourceExhausted, "out of memory");
                return Status::ok();
            }
            int calls = 0;

        private:
            int m_capacity;
            ModelInfo m_info;
        } backend(capacity);
        const auto fits = probeLargestBatch(backend, 128, upTo);
        QVERIFY(fits.has_value());
        QCOMPARE(*fits, expected);
        QVERIFY(backend.calls <= 16); // doubling + bisection, not a scan
        // the CPU backends have no memory limit to report
        auto cpu = createOrFail(testSpec("builtin:tiny-decoder"));
        QVERIFY(cpu);
        QVERIFY(!cpu->probeMaxBatch(64, 32).has_value());
    }

    void threadCount()
    {
        QVERIFY(resolveTorchThreads(0) >= 1);
        QCOMPARE(resolveTorchThreads(3), 3);
    }
};

QTEST_GUILESS_MAIN(TestTorchDevices)
#include "test_torch_devices.moc"
