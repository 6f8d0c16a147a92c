// Tuning a remote server's own knobs, without the server: a
// remote calibration of kind vllm fitted from synthetic observations and
// stored, its current settings from a `vllm serve` command line, the
// tuner's search over vLLM's knob space on the vLLM scheduler model, and the
// pick printed as `vllm serve` flags that import-config reads back to the
// picked values. The TGI and Triton forms read back too.
#include "engine/config/config_import.h"
#include "engine/config/server_command.h"
#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/calibration/remote_calibrate.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/calibration/remote_settings.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/store/trace_store.h"

#include <QtTest>

using namespace bp;
using namespace std::chrono_literals;

namespace {

// iter(n, T, A) = s0 + s1·n + s2·T + s3·A, and o per request.
constexpr double kO = 4e-3, kS0 = 3e-3, kS1 = 2e-4, kS2 = 3e-5, kS3 = 1e-8;

double seconds(const std::array<double, ProbeObservation::kTerms> &t)
{
    return kO * t[0] + kS0 * t[1] + kS1 * t[2] + kS2 * t[3] + kS3 * t[4];
}

// Rows as a probe of an unchunked server would give them: prefills at
// concurrency 1 over prompt lengths, decode blocks of 8 steps at 1..32
// sequences and two contexts.
std::vector<ProbeObservation> syntheticRows()
{
    std::vector<ProbeObservation> rows;
    for (int len : {16, 64, 128, 256, 512, 1024})
        for (int rep = 0; rep < 2; ++rep) {
            ProbeObservation o;
            o.phase = "prefill";
            o.terms = prefillTerms(len, 0);
            o.seconds = seconds(o.terms);
            rows.push_back(o);
        }
    for (int n : {1, 2, 4, 8, 16, 32})
        for (int context : {64, 512}) {
            ProbeObservation o;
            o.phase = "decode";
            const int steps = 8;
            o.terms = {0, double(steps), double(steps * n), double(steps * n), 0};
            for (int k = 0; k < steps; ++k)
                o.terms[4] += double(n) * double(context + k + 1);
            o.seconds = seconds(o.terms);
            rows.push_back(o);
        }
    return rows;
}

const char *kCurrent =
    "vllm serve llama --max-num-seqs 1 --max-num-batched-tokens 512 --no-enable-chunked-prefill";

Result<ServerSettings> settingsOf(std::string_view text, ServerFormat format)
{
    auto imported = importConfig(text, format);
    if (!imported)
        return imported.status();
    return settingsFromImport(*imported, "test");
}

} // namespace

class TestServerTune : public QObject {
    Q_OBJECT
private slots:
    void tunesVllmKnobsOnAStoredRemoteCalibrationAndPrintsFlagsThatReadBack()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString());
        QVERIFY(store);
        RemoteCalibration r;
        r.url = "http://gpu:8000";
        r.server = "vllm";
        r.protocol = "openai";
        r.observations = syntheticRows();
        auto current = settingsOf(kCurrent, ServerFormat::Vllm);
        QVERIFY2(current, current.status().message().c_str());
        r.settings = *current;
        r.limits.kvCapacityTokens = 65536;
        auto fitted = remoteCalibration("llama", 32000, 4096, r, "probe");
        QVERIFY2(fitted, fitted.status().message().c_str());
        QVERIFY(std::abs(fitted->remote->requestOverheadS - kO) < 1e-6 * kO + 1e-9);
        auto id = saveCalibration(**store, *fitted);
        QVERIFY2(id, id.status().message().c_str());
        auto calibration = latestRemoteCalibration(**store, r.url, "llama", "vllm");
        QVERIFY2(calibration, calibration.status().message().c_str());

        // The server now, as its model: vLLM's scheduler with its own knobs.
        auto base = serverCurrentConfig(calibration->remote->server, calibration->remote->settings,
                                        calibration->remote->limits.kvCapacityTokens);
        QVERIFY2(base, base.status().message().c_str());
        QCOMPARE(base->server.kind, ServerKind::Vllm);
        QCOMPARE(base->server.vllm.maxNumSeqs, 1);
        QCOMPARE(base->server.vllm.maxNumBatchedTokens, 512);
        QCOMPARE(base->server.vllm.chunkedPrefill, false);
        QCOMPARE(base->server.vllm.kvCacheTokens, std::int64_t(65536));

        // 240 requests at 10/s: prompts 100..400, 32 tokens out.
        TuneWorkload w;
        for (int i = 0; i < 240; ++i) {
            PlannedArrival a;
            a.offset = std::chrono::microseconds(i * 100000);
            a.inputTokens = 100 + (i * 37) % 300;
            a.maxNewTokens = 32;
            w.arrivals.push_back(a);
        }
        w.model = simulatorOptionsFor(*calibration, CostNoise::None);
        w.requestOverhead = std::chrono::duration_cast<Duration>(
            std::chrono::duration<double>(calibration->remote->requestOverheadS));
        TuneOptions o;
        auto slo = parseTuneSlo("ttft_p99<=500ms,tpot_p99<=100ms");
        QVERIFY(slo);
        o.slo = *slo;
        o.base = *base;
        o.generative = true;
        o.maxLength = calibration->maxSequenceLength;
        o.budget = 80;
        o.capacity = false;
        const TuneEvaluator evaluate = simulationEvaluator(w, o.slo);
        auto result = tune(evaluate, o);
        QVERIFY2(result, result.status().message().c_str());
        QVERIFY(result->recommended);
        // The whole grid was searched (its points differ only in vLLM's knobs,
        // which the config's JSON, the tuner's key, once left out: 1 config ran).
        QVERIFY2(result->candidates.size() >= 30, qPrintable(QString::number(result->candidates.size())));
        // Only vLLM's knobs were searched: every candidate is the vLLM model.
        for (const TuneCandidate &c : result->candidates) {
            QCOMPARE(c.config.server.kind, ServerKind::Vllm);
            QVERIFY2(c.label.rfind("vllm max_num_seqs=", 0) == 0, c.label.c_str());
            QCOMPARE(c.config.instances, 1);
        }
        const BatchingConfig &pick = result->candidates[*result->recommended].config;
        // One sequence at a time (about 110 ms a request) cannot serve 10/s; the pick does.
        const TuneFigures now = evaluate(*base, 1.0);
        const TuneFigures picked = result->candidates[*result->recommended].figures;
        QVERIFY2(picked.goodputPerS > now.goodputPerS,
                 qPrintable(QString("pick %1/s, current %2/s").arg(picked.goodputPerS).arg(now.goodputPerS)));
        QVERIFY(picked.sloMet);

        // Printed as vllm serve flags; import-config reads them back to the pick.
        const std::string flags = serverLaunchText(pick, "llama");
        QVERIFY2(flags.rfind("vllm serve llama", 0) == 0, flags.c_str());
        auto back = settingsOf(flags, ServerFormat::Vllm);
        QVERIFY2(back, back.status().message().c_str());
        auto reread = serverCurrentConfig("vllm", *back, calibration->remote->limits.kvCapacityTokens);
        QVERIFY2(reread, reread.status().message().c_str());
        QCOMPARE(reread->server, pick.server);
        QCOMPARE(reread->policy, pick.policy);
    }

    void tgiAndTritonLaunchTextReadsBack()
    {
        BatchingConfig tgi = serverConfigFromSettings(ServerKind::Tgi, nlohmann::json::object(), 30000);
        tgi.server.tgi.maxBatchPrefillTokens = 3000;
        tgi.server.tgi.waitingServedRatio = 0.6;
        tgi.server.tgi.maxWaitingTokens = 7;
        tgi.server.tgi.maxBatchSize = 48;
        QVERIFY(validate(tgi).isOk());
        auto tgiBack = settingsOf(serverLaunchText(tgi, "m"), ServerFormat::Tgi);
        QVERIFY2(tgiBack, tgiBack.status().message().c_str());
        QCOMPARE(serverConfigFromSettings(ServerKind::Tgi, tgiBack->settings, std::nullopt).server,
                 tgi.server);

        BatchingConfig triton =
            serverConfigFromSettings(ServerKind::Triton, nlohmann::json::object(), std::nullopt);
        triton.maxBatchSize = 16;
        triton.maxQueueDelay = 500us;
        triton.server.triton.preferredBatchSize = {8, 16};
        QVERIFY(validate(triton).isOk());
        auto tritonBack = settingsOf(serverLaunchText(triton, "m"), ServerFormat::Triton);
        QVERIFY2(tritonBack, tritonBack.status().message().c_str());
        const BatchingConfig t2 =
            serverConfigFromSettings(ServerKind::Triton, tritonBack->settings, std::nullopt);
        QCOMPARE(t2.server, triton.server);
        QCOMPARE(t2.maxBatchSize, 16);
        QCOMPARE(t2.maxQueueDelay, Duration(500us));
    }

    // The settings of a remote server's model come from what
    // is given, then what was read, then the probe where it saw a cap, then
    // the server's defaults; each says where it came from.
    void theServerModelTakesTheProbesCapsOnlyWhereTheyActed()
    {
        RemoteCalibration r;
        r.server = "vllm";
        r.settings.server = "vllm";
        r.settings.source = "GET /metrics";
        r.settings.settings = {{"block_size", 16}}; // vLLM publishes no scheduler limits
        r.limits.maxRunning = 16;
        r.limits.runningIsCap = true;
        r.limits.tokensPerStepBound = 1024;
        r.limits.longestPrompt = 2048;
        auto m = remoteServerModel(r, nullptr);
        QVERIFY2(m, m.status().toString().c_str());
        QCOMPARE(m->config.server.kind, ServerKind::Vllm);
        QCOMPARE(m->config.server.vllm.maxNumSeqs, 16);
        QCOMPARE(m->config.server.vllm.maxNumBatchedTokens, 1024);
        QVERIFY(m->config.server.vllm.chunkedPrefill);
        QCOMPARE(m->origins[0].name, std::string("max_num_seqs"));
        QVERIFY2(m->origins[0].origin.starts_with("probe: 16 ran while requests waited"),
                 m->origins[0].origin.c_str());
        QVERIFY2(m->origins[1].origin.starts_with("probe: no step had more than 1024 tokens"),
                 m->origins[1].origin.c_str());
        QCOMPARE(m->origins[2].origin, std::string("vllm's default"));
        QCOMPARE(serverPrefillChunk(m->config), 1024);

        // Not a cap (nothing waited; no prompt longer than the bound): the defaults stay.
        RemoteCalibration loose = r;
        loose.limits.runningIsCap = false;
        loose.limits.longestPrompt = 512;
        m = remoteServerModel(loose, nullptr);
        QVERIFY(m);
        QCOMPARE(m->config.server.vllm.maxNumSeqs, 256);
        QCOMPARE(m->config.server.vllm.maxNumBatchedTokens, 2048);
        QCOMPARE(m->origins[0].origin, std::string("vllm's default"));

        // Given settings come first, then what was read.
        r.settings.settings["max_num_batched_tokens"] = 4096;
        ServerSettings given;
        given.source = "--server-config vllm.sh";
        given.settings = {{"max_num_seqs", 32}};
        m = remoteServerModel(r, &given);
        QVERIFY(m);
        QCOMPARE(m->config.server.vllm.maxNumSeqs, 32);
        QCOMPARE(m->config.server.vllm.maxNumBatchedTokens, 4096);
        QCOMPARE(m->origins[0].origin, std::string("--server-config vllm.sh"));
        QCOMPARE(m->origins[1].origin, std::string("read: GET /metrics"));
        QVERIFY2(m->describe().starts_with(
                     "max_num_seqs=32 (--server-config vllm.sh), max_num_batched_tokens=4096 "
                     "(read: GET /metrics)"),
                 m->describe().c_str());
    }

    // "changes from the current config" names a server model's own knobs.
    void aChangeOfServerKnobsIsDescribed()
    {
        BatchingConfig a;
        a.policy = PolicyKind::Continuous;
        a.server.kind = ServerKind::Vllm;
        a.server.vllm.maxNumSeqs = 16;
        BatchingConfig b = a;
        QCOMPARE(describeChange(a, b), std::string());
        b.server.vllm.maxNumSeqs = 8;
        b.server.vllm.maxNumBatchedTokens = 256;
        QCOMPARE(describeChange(a, b), std::string("max_num_seqs 16→8, max_num_batched_tokens 2048→256"));
    }

    // A change only when it is better by more than the fit can tell.
    void theCurrentSettingsStayUnlessThePickIsClearlyBetter()
    {
        TuneFigures current, pick;
        current.sloMet = true;
        current.goodputPerS = 30;
        pick.sloMet = true;
        pick.goodputPerS = 31.5; // +5%
        CurrentVerdict v = judgeAgainstCurrent(current, pick, 0.10);
        QVERIFY(v.currentMeets);
        QVERIFY(v.keep);
        QCOMPARE(v.margin, 0.10);
        QVERIFY(std::abs(v.gain - 0.05) < 1e-9);
        v = judgeAgainstCurrent(current, pick, 0.02); // beyond a 2% spread
        QVERIFY(!v.keep);
        QCOMPARE(judgeAgainstCurrent(current, pick, 0).margin, 0.01); // at least 1%
        pick.sloMet = false; // more goodput but misses the SLO: keep the one that meets it
        QVERIFY(judgeAgainstCurrent(current, pick, 0.02).keep);
        current.sloMet = false; // the current misses: a pick that meets it is a change
        pick.sloMet = true;
        pick.goodputPerS = 29;
        QVERIFY(!judgeAgainstCurrent(current, pick, 0.10).keep);
        pick.sloMet = false; // neither meets it, the pick is not clearly better: keep
        QVERIFY(judgeAgainstCurrent(current, pick, 0.10).keep);
    }
};

QTEST_GUILESS_MAIN(TestServerTune)
#include "test_server_tune.moc"
