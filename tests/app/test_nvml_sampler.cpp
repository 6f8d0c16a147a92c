// NvmlSampler: the dlopen path against a fake NVML library built by the
// tests (fake_nvml.c, same symbols and struct layouts), so it runs without
// a GPU: samples, device selection, NVML errors with their text, missing
// libraries and symbols, and init/shutdown balance. Also the process CPU
// sampler and the HostSampler that combines them.
#include "app/host_sampler.h"
#include "app/nvml_sampler.h"
#include "app/process_cpu_sampler.h"

#include <QtTest>

#include <dlfcn.h>

using namespace bp;
using namespace bp::app;

namespace {

constexpr unsigned long long kGiB = 1ull << 30;

// The fake's controls, from the same (reference-counted) handle the sampler uses.
struct FakeNvml {
    using Configure = void (*)(unsigned, int, int, unsigned, unsigned, unsigned long long,
                               unsigned long long);
    using Calls = void (*)(int *, int *);

    FakeNvml()
    {
        handle = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
        if (handle) {
            configure = reinterpret_cast<Configure>(dlsym(handle, "fake_nvml_configure"));
            calls = reinterpret_cast<Calls>(dlsym(handle, "fake_nvml_calls"));
        }
    }
    ~FakeNvml()
    {
        if (handle)
            dlclose(handle);
    }
    std::pair<int, int> initsAndShutdowns() const
    {
        int i = 0, s = 0;
        calls(&i, &s);
        return {i, s};
    }

    void *handle = nullptr;
    Configure configure = nullptr;
    Calls calls = nullptr;
};

} // namespace

class TestNvmlSampler : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.handle, dlerror());
        QVERIFY(m_fake.configure && m_fake.calls);
    }

    void samplesThroughTheLibrary()
    {
        m_fake.configure(2, 0, 0, 73, 41, 3 * kGiB, 80 * kGiB);
        NvmlSampler sampler(FAKE_NVML_PATH);
        QVERIFY2(sampler.available(), sampler.error().c_str());
        QCOMPARE(sampler.deviceCount(), 2u);
        QCOMPARE(QString::fromStdString(sampler.deviceName()), QStringLiteral("Fake GPU 0"));
        auto s = sampler.sample();
        QVERIFY(s.isOk());
        QCOMPARE(s->gpuUtilPercent, 73u);
        QCOMPARE(s->memoryUtilPercent, 41u);
        QCOMPARE(s->memoryUsedBytes, 3 * kGiB);
        QCOMPARE(s->memoryTotalBytes, 80 * kGiB);

        m_fake.configure(2, 0, 0, 10, 90, 5 * kGiB, 80 * kGiB); // values move between samples
        s = sampler.sample();
        QVERIFY(s.isOk());
        QCOMPARE(s->gpuUtilPercent, 10u);
        QCOMPARE(s->memoryUtilPercent, 90u);
        QCOMPARE(s->memoryUsedBytes, 5 * kGiB);
    }

    void opensTheRequestedDevice()
    {
        m_fake.configure(3, 0, 0, 50, 0, 0, kGiB);
        NvmlSampler sampler(FAKE_NVML_PATH, NvmlSampler::deviceIndexFor("cuda:2"));
        QVERIFY(sampler.available());
        QCOMPARE(QString::fromStdString(sampler.deviceName()), QStringLiteral("Fake GPU 2"));
        QCOMPARE(sampler.sample()->gpuUtilPercent, 52u); // the fake adds the device index

        NvmlSampler missing(FAKE_NVML_PATH, 5);
        QVERIFY(!missing.available());
        QCOMPARE(QString::fromStdString(missing.error()), QStringLiteral("GPU 5 does not exist (3 found)"));
    }

    void deviceIndexFromTheEngineDevice_data()
    {
        QTest::addColumn<QString>("device");
        QTest::addColumn<unsigned>("index");
        QTest::newRow("cuda") << "cuda" << 0u;
        QTest::newRow("cuda:0") << "cuda:0" << 0u;
        QTest::newRow("cuda:3") << "cuda:3" << 3u;
        QTest::newRow("auto") << "auto" << 0u;
        QTest::newRow("cpu") << "cpu" << 0u;
        QTest::newRow("garbage suffix") << "cuda:1x" << 0u;
    }
    void deviceIndexFromTheEngineDevice()
    {
        QFETCH(QString, device);
        QFETCH(unsigned, index);
        QCOMPARE(NvmlSampler::deviceIndexFor(device.toStdString()), index);
    }

    void noGpuIsReported()
    {
        m_fake.configure(0, 0, 0, 0, 0, 0, 0);
        NvmlSampler sampler(FAKE_NVML_PATH);
        QVERIFY(!sampler.available());
        QCOMPARE(QString::fromStdString(sampler.error()), QStringLiteral("no NVIDIA GPU found"));
        auto s = sampler.sample();
        QCOMPARE(s.status().code(), StatusCode::Unavailable);
    }

    void nvmlErrorsCarryTheirText()
    {
        m_fake.configure(1, 9, 0, 0, 0, 0, 0); // NVML_ERROR_DRIVER_NOT_LOADED
        {
            NvmlSampler sampler(FAKE_NVML_PATH);
            QVERIFY(!sampler.available());
            QCOMPARE(QString::fromStdString(sampler.error()),
                     QStringLiteral("nvmlInit_v2 failed with NVML error 9 (Driver Not Loaded)"));
        }
        m_fake.configure(1, 0, 15, 0, 0, 0, kGiB); // sampling fails later: NVML_ERROR_GPU_IS_LOST
        NvmlSampler sampler(FAKE_NVML_PATH);
        QVERIFY(sampler.available());
        auto s = sampler.sample();
        QCOMPARE(s.status().code(), StatusCode::Unavailable);
        QCOMPARE(QString::fromStdString(s.status().message()),
                 QStringLiteral("nvmlDeviceGetUtilizationRates failed with NVML error 15 (GPU is lost)"));
    }

    void initAndShutdownBalance()
    {
        m_fake.configure(1, 0, 0, 1, 1, 1, 2);
        const auto [inits, shutdowns] = m_fake.initsAndShutdowns();
        {
            NvmlSampler sampler(FAKE_NVML_PATH);
            QVERIFY(sampler.available());
            QCOMPARE(m_fake.initsAndShutdowns(), std::make_pair(inits + 1, shutdowns));
        }
        QCOMPARE(m_fake.initsAndShutdowns(), std::make_pair(inits + 1, shutdowns + 1));
        m_fake.configure(1, 9, 0, 0, 0, 0, 0);
        {
            NvmlSampler failed(FAKE_NVML_PATH);
        } // init failed: no shutdown owed
        QCOMPARE(m_fake.initsAndShutdowns(), std::make_pair(inits + 2, shutdowns + 1));
    }

    void missingLibraryIsNotAnError()
    {
        NvmlSampler sampler("/nonexistent/libnvidia-ml.so.1");
        QVERIFY(!sampler.available());
        QVERIFY2(QString::fromStdString(sampler.error()).contains("/nonexistent/libnvidia-ml.so.1"),
                 sampler.error().c_str());
    }

    void foreignLibraryIsRefused()
    {
        // A real shared library without NVML's symbols.
        NvmlSampler sampler("libm.so.6");
        QVERIFY(!sampler.available());
        QCOMPARE(QString::fromStdString(sampler.error()),
                 QStringLiteral("libm.so.6 has no symbol nvmlInit_v2 (not an NVML library?)"));
    }

    void hostSamplerPrefersTheGpu()
    {
        m_fake.configure(1, 0, 0, 64, 32, 2 * kGiB, 16 * kGiB);
        HostSampler withGpu(FAKE_NVML_PATH, 0);
        QVERIFY(withGpu.hasGpu());
        HostSample s = withGpu.sample();
        QVERIFY(s.gpu.has_value());
        QCOMPARE(s.gpu->gpuUtilPercent, 64u);
        QCOMPARE(QString::fromStdString(s.gpuName), QStringLiteral("Fake GPU 0"));
        QVERIFY(s.gpuUnavailable.empty());

        HostSampler cpuOnly(std::string(), 0);
        QVERIFY(!cpuOnly.hasGpu());
        s = cpuOnly.sample();
        QVERIFY(!s.gpu.has_value());
        QVERIFY(!s.gpuUnavailable.empty());
        QVERIFY(s.cores >= 1);
    }

    void processCpuIsAShareOfAllCores()
    {
        ProcessCpuSampler cpu;
        // Burn CPU until the process clock has visibly moved (no sleeping,
        // no timing assertions: only the sign and the bounds are checked).
        const Duration start = ProcessCpuSampler::processCpuTime();
        volatile double sink = 0;
        while (ProcessCpuSampler::processCpuTime() - start < std::chrono::milliseconds(20))
            for (int i = 0; i < 10000; ++i)
                sink = sink + i * 0.5;
        const double percent = cpu.sample();
        QVERIFY2(percent > 0 && percent <= 100, qPrintable(QString::number(percent)));
    }

private:
    FakeNvml m_fake;
};

QTEST_GUILESS_MAIN(TestNvmlSampler)
#include "test_nvml_sampler.moc"
