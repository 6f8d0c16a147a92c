// The cost model and its calibration: the fit recovers a known synthetic
// cost surface (exactly without noise, within a stated tolerance with it),
// the decode-step sum in closed form equals the step-by-step sum, the
// coefficients stay non-negative, calibrations round-trip through JSON and
// the trace database (including a file of the previous schema version),
// and a fit to a session's batch rows recovers the model that produced them.
#include "engine/sim/calibration/calibration.h"
#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <random>

using namespace bp;

namespace {

CostModel knownEncoder()
{
    CostModel m;
    m.coef = {2e-4, 5e-5, 2e-7, 1e-10, 0, 0, 0};
    return m;
}

CostModel knownDecoder()
{
    CostModel m;
    m.generative = true;
    m.coef = {5e-4, 1e-4, 3e-7, 2e-10, 1e-3, 4e-5, 2e-8};
    return m;
}

// `n` Poisson arrivals at `rate` per second, uniform input and output
// lengths in [lo, hi] and [outLo, outHi], seeded.
std::vector<TraceRow> poissonRows(std::uint64_t seed, int n, double rate, int lo, int hi, int outLo,
                                  int outHi)
{
    std::vector<TraceRow> rows;
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(rate);
    std::uniform_int_distribution<int> len(lo, hi), out(outLo, outHi);
    double t = 0;
    for (int i = 0; i < n; ++i) {
        rows.push_back({t, len(rng), out(rng)});
        t += gap(rng);
    }
    return rows;
}

// A builtin:tiny-decoder calibration whose cost is `cost`.
Calibration decoderCalibration(const CostModel &cost)
{
    Calibration c;
    c.model = "builtin:tiny-decoder";
    c.device = "cpu";
    c.generative = true;
    c.maxNewTokensLimit = 1023;
    c.cost = cost;
    return c;
}

// A profile-like grid of observations of `m`, each measured value
// multiplied by (1 + noise·u), u uniform in [-1, 1].
std::vector<CostObservation> grid(const CostModel &m, double noise, std::uint64_t seed = 7)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<CostObservation> obs;
    auto add = [&](CostObservation::Kind kind, const std::array<double, CostModel::kTerms> &terms) {
        obs.push_back({kind, terms, m.predict(terms) * (1 + noise * u(rng))});
    };
    for (int L : {16, 64, 128, 256, 512})
        for (int b : {1, 2, 4, 8, 16, 32}) {
            if (!m.generative) {
                add(CostObservation::Kind::Batch, CostModel::passTerms(b, L));
                continue;
            }
            for (int want : {4, 16}) {
                std::vector<int> wants(static_cast<std::size_t>(b), want);
                add(CostObservation::Kind::Batch, CostModel::batchTerms(true, b, L, wants));
                add(CostObservation::Kind::Prefill, CostModel::passTerms(b, L));
                add(CostObservation::Kind::Step, CostModel::stepTerms(b, L + want / 2));
            }
        }
    return obs;
}

double maxRelativeGap(const CostModel &a, const CostModel &b)
{
    double worst = 0;
    for (int L : {8, 100, 300, 700})
        for (int n : {1, 3, 12, 48}) {
            std::vector<int> wants(static_cast<std::size_t>(n), 10);
            wants.front() = 30;
            const double x = toSeconds(a.batchCost(n, L, wants).run);
            const double y = toSeconds(b.batchCost(n, L, wants).run);
            worst = std::max(worst, std::abs(x - y) / y);
        }
    return worst;
}

} // namespace

class TestCostModel : public QObject {
    Q_OBJECT
private slots:
    void fitRecoversAnExactSurface_data()
    {
        QTest::addColumn<bool>("generative");
        QTest::newRow("encoder") << false;
        QTest::newRow("decoder") << true;
    }
    void fitRecoversAnExactSurface()
    {
        QFETCH(bool, generative);
        const CostModel truth = generative ? knownDecoder() : knownEncoder();
        auto fit = fitCostModel(grid(truth, 0), generative);
        QVERIFY2(fit, fit.status().toString().c_str());
        for (std::size_t i = 0; i < truth.coef.size(); ++i)
            QVERIFY2(std::abs(fit->model.coef[i] - truth.coef[i]) <= 1e-6 * std::max(truth.coef[i], 1e-12),
                     qPrintable(QStringLiteral("coefficient %1: %2 vs %3")
                                    .arg(i)
                                    .arg(fit->model.coef[i])
                                    .arg(truth.coef[i])));
        QVERIFY(fit->error.maxRel < 1e-6);
        QCOMPARE(fit->model.generative, generative);
    }

    // ±5% noise on every measurement: predictions stay within 4% of the
    // true surface everywhere in the grid and past it (length 700 > 512;
    // the errors average out).
    void fitToleratesNoise_data() { fitRecoversAnExactSurface_data(); }
    void fitToleratesNoise()
    {
        QFETCH(bool, generative);
        const CostModel truth = generative ? knownDecoder() : knownEncoder();
        auto fit = fitCostModel(grid(truth, 0.05), generative);
        QVERIFY(fit);
        QVERIFY2(maxRelativeGap(fit->model, truth) < 0.04,
                 qPrintable(QString::number(maxRelativeGap(fit->model, truth))));
        // the stored residual reflects the noise: about 5% / sqrt(3) rms
        QVERIFY(fit->error.rmsRel > 0.01 && fit->error.rmsRel < 0.05);
        QVERIFY(fit->error.maxRel <= 0.06);
    }

    void decodeStepsSumInClosedForm()
    {
        std::mt19937_64 rng(3);
        std::uniform_int_distribution<int> want(0, 40), size(1, 20), len(1, 300);
        for (int round = 0; round < 200; ++round) {
            const int b = size(rng), L = len(rng);
            std::vector<int> wants(static_cast<std::size_t>(b));
            for (int &w : wants)
                w = want(rng);
            // Step by step, as the decoder runs: step k over the rows whose want > k.
            std::array<double, CostModel::kTerms> brute = CostModel::passTerms(b, L);
            int maxWant = 1;
            for (int w : wants)
                maxWant = std::max(maxWant, std::max(1, w));
            for (int k = 1; k < maxWant; ++k) {
                int rows = 0;
                for (int w : wants)
                    rows += std::max(1, w) > k;
                const auto step = CostModel::stepTerms(rows, L + k);
                for (std::size_t i = 0; i < brute.size(); ++i)
                    brute[i] += step[i];
            }
            const auto closed = CostModel::batchTerms(true, b, L, wants);
            for (std::size_t i = 0; i < brute.size(); ++i)
                QVERIFY2(std::abs(closed[i] - brute[i]) <= 1e-9 * std::max(1.0, brute[i]),
                         qPrintable(QStringLiteral("term %1: %2 vs %3").arg(i).arg(closed[i]).arg(brute[i])));
        }
    }

    void coefficientsStayNonNegative()
    {
        // Cost that falls with length (a surface no physical model has):
        // the fit must not answer with negative coefficients.
        std::vector<CostObservation> obs;
        for (int L : {16, 64, 256})
            for (int b : {1, 8})
                obs.push_back({CostObservation::Kind::Batch, CostModel::passTerms(b, L),
                               1e-3 * b / std::sqrt(double(L))});
        auto fit = fitCostModel(obs, false);
        QVERIFY(fit);
        for (double c : fit->model.coef)
            QVERIFY(c >= 0);
        QVERIFY(fit->model.passSeconds(8, 16) >= fit->model.passSeconds(1, 16));
    }

    void noObservationsIsAnError()
    {
        QVERIFY(!fitCostModel({}, false));
        std::vector<CostObservation> zero{{CostObservation::Kind::Batch, CostModel::passTerms(1, 1), 0}};
        auto fit = fitCostModel(zero, false);
        QVERIFY(!fit);
        QCOMPARE(fit.status().code(), StatusCode::InvalidArgument);
    }

    void calibrationJsonRoundTrip()
    {
        Calibration c;
        c.model = "builtin:tiny-decoder";
        c.preset = "small";
        c.device = "cpu";
        c.threads = 2;
        c.generative = true;
        c.maxNewTokensLimit = 1023;
        c.positions = 1024;
        c.maxSequenceLength = 1023;
        c.cost = knownDecoder();
        c.cost.overheadS = 3e-5;
        c.error = {12, 0.01, 0.02, 0.05};
        c.batchError = {4, 0.02, 0.03, 0.04};
        c.source = "profile";
        auto back = calibrationFromJson(toJson(c));
        QVERIFY2(back, back.status().toString().c_str());
        QCOMPARE(toJson(*back), toJson(c));
        QVERIFY(back->cost == c.cost);

        nlohmann::json bad = toJson(c);
        bad["cost_model"]["pass"] = {1, 2};
        QVERIFY(!calibrationFromJson(bad));
        bad = toJson(c);
        bad["cost_model"]["step"][0] = -1;
        QVERIFY(!calibrationFromJson(bad));
        QVERIFY(!calibrationFromJson(nlohmann::json{{"model", "x"}})); // no format marker
    }

    // A GPU's step: flat in its tokens up to a knee, then
    // growing, and a step with a prompt chunk (eager, no CUDA graph) dearer
    // than a pure decode step. The fit finds the knee and the eager term and
    // predicts every step within 3%.
    void gpuStepsHaveAKneeAndAnEagerTerm()
    {
        const auto gpu = [](const StepShape &s) {
            const double T = double(s.tokens());
            return 4e-4 + 1e-6 * T + 4e-6 * std::max(0.0, T - 256) + (s.prefills > 0 ? 1.2e-3 : 0.0);
        };
        std::vector<CostObservation> obs;
        for (int n : {1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512})
            for (int chunk : {0, 64, 512}) {
                StepShape shape;
                for (int i = 0; i < n; ++i)
                    shape.add(200, 1);
                if (chunk)
                    shape.add(0, chunk);
                obs.push_back(
                    {CostObservation::Kind::Iteration, CostModel::iterationTerms(shape), gpu(shape)});
            }
        auto fit = fitCostModel(obs, true);
        QVERIFY(fit);
        QVERIFY2(fit->model.kneeTokens >= 192 && fit->model.kneeTokens <= 320,
                 qPrintable(QString::number(fit->model.kneeTokens)));
        QVERIFY(fit->model.coef[std::size_t(CostModel::kIterationStart) + 5] > 1e-3); // the eager step
        QVERIFY2(fit->iterationError.maxRel < 0.03, qPrintable(QString::number(fit->iterationError.maxRel)));
        // the knee survives JSON
        auto back = costModelFromJson(toJson(fit->model));
        QVERIFY(back);
        QCOMPARE(back->kneeTokens, fit->model.kneeTokens);
    }

    // Iterations of step-level generation (policy continuous): the fit
    // recovers s0 + s1·n + s2·T + s3·A exactly from decode, prefill and
    // mixed steps; the residuals are kept (sorted) and survive JSON; a cost
    // model without iteration terms prices a step from pass() and step().
    void iterationTermsFitAndRoundTrip()
    {
        CostModel truth = knownDecoder();
        truth.coef[7] = 3e-4;
        truth.coef[8] = 2e-5;
        truth.coef[9] = 4e-6;
        truth.coef[10] = 1e-9;
        std::vector<CostObservation> obs = grid(truth, 0);
        std::mt19937_64 rng(3);
        std::uniform_real_distribution<double> u(0.9, 1.3);
        for (int ctx : {16, 128, 512})
            for (int n : {1, 8, 32})
                for (int chunk : {0, 64}) {
                    StepShape shape;
                    for (int i = 0; i < n; ++i)
                        shape.add(ctx, 1);
                    if (chunk)
                        shape.add(0, chunk);
                    const auto terms = CostModel::iterationTerms(shape);
                    obs.push_back({CostObservation::Kind::Iteration, terms, truth.predict(terms)});
                }
        auto fit = fitCostModel(obs, true);
        QVERIFY(fit);
        for (std::size_t i = 7; i < truth.coef.size(); ++i)
            QVERIFY2(std::abs(fit->model.coef[i] - truth.coef[i]) <= 1e-6 * truth.coef[i],
                     qPrintable(QString::number(i)));
        QCOMPARE(fit->iterationError.observations, std::size_t(18));
        QCOMPARE(fit->model.iterationResiduals.size(), std::size_t(18));
        QVERIFY(std::abs(fit->model.residualAt(0.5, true) - 1) < 1e-6);
        StepShape mixed;
        mixed.add(100, 1);
        mixed.add(100, 1);
        mixed.add(0, 64);
        QCOMPARE(mixed.items(), 3);
        QCOMPARE(mixed.tokens(), std::int64_t(66));
        QCOMPARE(mixed.attention(), std::int64_t(2 * 101 + 64 * 64));
        QVERIFY(std::abs(fit->model.iterationSeconds(mixed) -
                         (3e-4 + 3 * 2e-5 + 66 * 4e-6 + (2 * 101 + 64 * 64) * 1e-9)) < 1e-12);

        CostModel noisy = fit->model;
        noisy.iterationResiduals = {0.8, 1.0, 1.6};
        // each of the 3 stands for a third, at its middle (Hazen): 0.8 at
        // 1/6, 1.0 at 1/2, 1.6 at 5/6, flat beyond
        QCOMPARE(noisy.residualAt(0.0, true), 0.8);
        QCOMPARE(noisy.residualAt(1.0 / 6, true), 0.8);
        QVERIFY(std::abs(noisy.residualAt(0.25, true) - 0.85) < 1e-12);
        QCOMPARE(noisy.residualAt(0.5, true), 1.0);
        QCOMPARE(noisy.residualAt(1.0, true), 1.6);
        // Of 10,000 measurements with one stall 1000x the rest, the stored
        // quantiles keep the shares' middles, not the stall: a draw cannot
        // charge it to 1% of the units.
        std::vector<double> many(10000);
        for (std::size_t i = 0; i < many.size(); ++i)
            many[i] = 1 + double(i) / 10000;
        many.back() = 2000;
        const std::vector<double> q = sampleQuantiles(many);
        QCOMPARE(q.size(), CostModel::kResidualSamples);
        QVERIFY2(q.back() < 2, qPrintable(QString::number(q.back())));
        QVERIFY(std::abs(q[50] - 1.5) < 1e-3);
        QVERIFY(std::abs(noisy.meanResidual(true) - 3.4 / 3) < 1e-12);
        QCOMPARE(noisy.meanResidual(false), 1.0); // no batch residuals
        auto back = costModelFromJson(toJson(noisy));
        QVERIFY(back);
        QVERIFY(*back == noisy);
        nlohmann::json unsorted = toJson(noisy);
        unsorted["iteration_residuals"] = {1.2, 0.8};
        QVERIFY(!costModelFromJson(unsorted));

        // an older calibration: no iteration terms
        nlohmann::json old = toJson(truth);
        old.erase("iteration");
        auto older = costModelFromJson(old);
        QVERIFY(older && !older->hasIterationTerms());
        const double expected =
            (truth.coef[4] + 2 * truth.coef[5] + 202 * truth.coef[6]) +
            (truth.coef[0] + truth.coef[1] + 64 * truth.coef[2] + 64 * 64 * truth.coef[3]);
        QVERIFY(std::abs(older->iterationSeconds(mixed) - expected) < 1e-12);
    }

    // A mixture-of-experts model's active-experts term: the closed form
    // uniform routing gives; the fit recovers s6 from iterations whose X was
    // measured (here: uniform routing's own counts, perturbed, as a profile
    // would see them); a prediction uses the closed form; the routing and the
    // measured counts survive JSON; a calibration of 6 iteration
    // coefficients (before the term) still loads.
    void activeExpertsTerm()
    {
        QCOMPARE(CostModel::expectedActiveExperts(1, 128, 8), 8.0);
        QVERIFY(std::abs(CostModel::expectedActiveExperts(64, 128, 8) -
                         128 * (1 - std::pow(1 - 8.0 / 128, 64))) < 1e-12);
        QVERIFY(CostModel::expectedActiveExperts(10000, 8, 2) <= 8.0);
        QCOMPARE(CostModel::expectedActiveExperts(16, 0, 0), 0.0);
        QCOMPARE(CostModel::expectedActiveExperts(4, 8, 8), 8.0); // every expert for every token
        CostModel truth = knownDecoder();
        truth.coef[7] = 3e-4;
        truth.coef[8] = 2e-5;
        truth.coef[9] = 4e-6;
        truth.coef[10] = 1e-9;
        truth.coef[13] = 5e-5; // per active expert
        truth.experts = 64;
        truth.expertsPerToken = 4;
        std::vector<CostObservation> obs = grid(truth, 0);
        const std::size_t X = std::size_t(CostModel::kIterationStart) + 6;
        int i = 0;
        for (int ctx : {16, 128, 512})
            for (int n : {1, 2, 4, 8, 16, 32, 64})
                for (int chunk : {0, 64}) {
                    StepShape shape;
                    for (int s = 0; s < n; ++s)
                        shape.add(ctx, 1);
                    if (chunk)
                        shape.add(0, chunk);
                    auto terms = CostModel::iterationTerms(shape, 64, 4);
                    QVERIFY(terms[X] > 0);
                    // what a profile measures: near uniform routing's count, not on it
                    terms[X] = std::min(64.0, terms[X] * (1 + 0.05 * ((i++ % 3) - 1)));
                    CostObservation o{CostObservation::Kind::Iteration, terms, truth.predict(terms)};
                    o.activeExperts = terms[X];
                    obs.push_back(o);
                }
        auto fit = fitCostModel(obs, true);
        QVERIFY(fit);
        QVERIFY2(std::abs(fit->model.coef[13] - 5e-5) <= 1e-6 * 5e-5,
                 qPrintable(QString::number(fit->model.coef[13])));
        CostModel model = fit->model;
        model.experts = 64;
        model.expertsPerToken = 4;
        StepShape one, many;
        one.add(100, 1);
        for (int s = 0; s < 64; ++s)
            many.add(100, 1);
        // one decode reads 4 experts per layer, 64 decodes about 63 of 64
        const double oneCost = model.iterationSeconds(one), manyCost = model.iterationSeconds(many);
        QVERIFY(std::abs(oneCost - (3e-4 + 2e-5 + 4e-6 + 101 * 1e-9 + 4 * 5e-5)) < 1e-12);
        QVERIFY(std::abs(manyCost - (3e-4 + 64 * 2e-5 + 64 * 4e-6 + 64 * 101 * 1e-9 +
                                     CostModel::expectedActiveExperts(64, 64, 4) * 5e-5)) < 1e-12);
        // a dense model's X is 0: the same shape costs no experts
        CostModel dense = model;
        dense.experts = dense.expertsPerToken = 0;
        QVERIFY(std::abs(model.iterationSeconds(many) - dense.iterationSeconds(many) -
                         CostModel::expectedActiveExperts(64, 64, 4) * 5e-5) < 1e-12);

        model.activeExperts = {{1, 3.9, 4}, {64, 62.5, 63.2}};
        const nlohmann::json j = toJson(model);
        QCOMPARE(j["iteration"].size(), std::size_t(9));
        QCOMPARE(j["moe"]["experts"].get<int>(), 64);
        auto back = costModelFromJson(j);
        QVERIFY(back);
        QVERIFY(*back == model);
        nlohmann::json bad = j;
        bad["moe"]["experts_per_token"] = 65;
        QVERIFY(!costModelFromJson(bad));
        // A calibration stored before the decodes' context was a term (7
        // coefficients) reads with s7 = 0.
        // Before the copied cells (8 coefficients): s8 = 0.
        nlohmann::json eight = toJson(model);
        eight["iteration"].erase(8);
        auto beforeC = costModelFromJson(eight);
        QVERIFY(beforeC);
        QVERIFY(*beforeC == model);
        nlohmann::json seven = toJson(model);
        seven["iteration"].erase(8);
        seven["iteration"].erase(7);
        auto beforeD = costModelFromJson(seven);
        QVERIFY(beforeD);
        QVERIFY(*beforeD == model);
        nlohmann::json six = toJson(dense);
        six["iteration"].erase(8);
        six["iteration"].erase(7);
        six["iteration"].erase(6);
        auto older = costModelFromJson(six);
        QVERIFY(older);
        QCOMPARE(older->coef[13], 0.0);
        QCOMPARE(older->iterationSeconds(many), dense.iterationSeconds(many));
    }

    void storeKeepsCalibrations()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("c.sqlite").toStdString();
        {
            // A file of schema version 2 (before calibrations) is migrated.
            auto db = sqlite::Connection::open(path, sqlite::Connection::Mode::ReadWriteCreate);
            QVERIFY(db);
            QVERIFY(store::migrate(*db, 2));
            QVERIFY(!db->exec("SELECT * FROM calibrations", "probe"));
        }
        auto store = TraceStore::open(path).value();
        QCOMPARE(store->schemaVersion(), store::kSchemaVersion);
        Calibration c;
        c.model = "builtin:tiny-encoder";
        c.preset = "small";
        c.device = "cpu";
        c.threads = 2;
        c.cost = knownEncoder();
        auto first = saveCalibration(*store, c);
        QVERIFY2(first, first.status().toString().c_str());
        c.threads = 1;
        auto second = saveCalibration(*store, c);
        QVERIFY(second);
        auto list = listCalibrations(*store);
        QVERIFY(list);
        QCOMPARE(list->size(), std::size_t(2));
        QCOMPARE(list->front().id, *second); // newest first
        auto loaded = loadCalibration(*store, *first);
        QVERIFY(loaded);
        QCOMPARE(loaded->threads, 2);
        QVERIFY(loaded->cost == c.cost);
        QCOMPARE(latestCalibration(*store, c.model, "small", "cpu", 2)->id, *first);
        QCOMPARE(latestCalibration(*store, c.model, "", "cpu", std::nullopt)->id, *second);
        QCOMPARE(latestCalibration(*store, c.model, "", "cuda", std::nullopt).status().code(),
                 StatusCode::NotFound);
        QCOMPARE(loadCalibration(*store, 99).status().code(), StatusCode::NotFound);
        QCOMPARE(resolveCalibration(*store, std::to_string(*first))->threads, 2);
        QCOMPARE(resolveCalibration(*store, dir.filePath("missing.json").toStdString()).status().code(),
                 StatusCode::NotFound);
    }

    // A session simulated with a known cost model stores batch rows whose
    // compute times follow that model; fitting those rows gives it back.
    void sessionRowsRecoverTheModel()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("s.sqlite").toStdString()).value();
        const auto trace =
            store->addTrace("t", "", TraceFormat::Plain, poissonRows(5, 3000, 400, 1, 400, 1, 30)).value().id;
        Calibration truth = decoderCalibration(knownDecoder());
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        BatchingConfig config;
        config.policy = PolicyKind::Bucketed;
        config.maxBatchSize = 32;
        config.maxQueueDelay = std::chrono::milliseconds(20);
        o.config = config;
        auto session = SimulatedReplay(store, truth).run(o);
        QVERIFY2(session, session.status().toString().c_str());
        auto observed = sessionObservations(*store, session->sessionId, true);
        QVERIFY(observed);
        QVERIFY(observed->batches.size() > 100);
        Calibration key = truth;
        key.cost = {};
        auto fitted = calibrate(key, observed->batches);
        QVERIFY(fitted);
        // Stored compute times are whole nanoseconds: recovery to 0.1%.
        QVERIFY2(maxRelativeGap(fitted->cost, truth.cost) < 1e-3,
                 qPrintable(QString::number(maxRelativeGap(fitted->cost, truth.cost))));
        QVERIFY(fitted->batchError.maxRel < 1e-3);

        // Two instances whose batches run 1.5x slower beside each other:
        // the rows that overlapped another executor's are left out, so the
        // fit still recovers the model (it would not with them in).
        config.instances = 2;
        o.config = config;
        o.speed = 0.1; // a tenth of the rate: many batches run alone
        truth.cost.concurrency = {1.5};
        auto twoInstances = SimulatedReplay(store, truth).run(o);
        QVERIFY(twoInstances);
        auto observed2 = sessionObservations(*store, twoInstances->sessionId, true);
        QVERIFY(observed2);
        QVERIFY2(observed2->overlapped > 20 && observed2->batches.size() > 50,
                 qPrintable(QStringLiteral("%1 overlapped, %2 kept")
                                .arg(observed2->overlapped)
                                .arg(observed2->batches.size())));
        auto fitted2 = calibrate(key, observed2->batches);
        QVERIFY(fitted2);
        QVERIFY2(maxRelativeGap(fitted2->cost, truth.cost) < 1e-3,
                 qPrintable(QString::number(maxRelativeGap(fitted2->cost, truth.cost))));
    }

    // Scheduler lateness: a session simulated with a known wake-up of idle
    // executors (0.2 ms: every batch at a tenth of the rate finds its
    // executor idle) stores batches dispatched that late; their rows give it
    // back, and a simulation charges it (each request's latency is the
    // lateness plus its batch's cost).
    void schedulerLatenessRoundTrips()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("s.sqlite").toStdString()).value();
        std::vector<TraceRow> rows;
        for (int i = 0; i < 200; ++i)
            rows.push_back({0.05 * i, 64, 1}); // one every 50 ms: the executor is idle each time
        const auto trace = store->addTrace("t", "", TraceFormat::Plain, rows).value().id;
        Calibration truth;
        truth.model = "builtin:tiny-encoder";
        truth.device = "cpu";
        truth.cost = knownEncoder();
        truth.cost.dispatchLateness = {2e-4};
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        BatchingConfig config;
        config.policy = PolicyKind::None;
        o.config = config;
        auto session = SimulatedReplay(store, truth).run(o);
        QVERIFY2(session, session.status().toString().c_str());
        auto observed = sessionObservations(*store, session->sessionId, false);
        QVERIFY(observed);
        QCOMPARE(observed->lateness.size(), std::size_t(200));
        for (double l : observed->lateness)
            QVERIFY2(std::abs(l - 2e-4) < 1e-8, qPrintable(QString::number(l * 1e6)));
        const double cost = truth.cost.passSeconds(1, 64);
        const std::vector<StoredRequest> requests = store->requests(session->sessionId).value();
        QCOMPARE(requests.size(), std::size_t(200));
        for (const StoredRequest &r : requests)
            QVERIFY2(std::abs(toSeconds(r.total) - (2e-4 + cost)) < 1e-8,
                     qPrintable(QString::number(toSeconds(r.total) * 1e6)));

        // Without it the same session is that much faster, and its rows
        // show none.
        truth.cost.dispatchLateness.clear();
        auto prompt = SimulatedReplay(store, truth).run(o);
        QVERIFY(prompt);
        auto observedPrompt = sessionObservations(*store, prompt->sessionId, false);
        QVERIFY(observedPrompt);
        QCOMPARE(observedPrompt->lateness.size(), std::size_t(200));
        QCOMPARE(*std::max_element(observedPrompt->lateness.begin(), observedPrompt->lateness.end()), 0.0);

        // the JSON document keeps it, and refuses a bad one
        truth.cost.dispatchLateness = sampleQuantiles({3e-4, 1e-4, 2e-4});
        QCOMPARE(truth.cost.dispatchLateness, (std::vector<double>{1e-4, 2e-4, 3e-4}));
        QCOMPARE(truth.cost.latenessAt(0.5), 2e-4);
        auto back = costModelFromJson(toJson(truth.cost));
        QVERIFY(back);
        QCOMPARE(back->dispatchLateness, truth.cost.dispatchLateness);
        auto bad = toJson(truth.cost);
        bad["dispatch_lateness_s"] = {3e-4, 1e-4};
        QCOMPARE(costModelFromJson(bad).status().code(), StatusCode::InvalidArgument);
    }

    // A continuous session simulated with a known per-step serving overhead
    // (different from the per-batch one): its step rows give that overhead
    // back, the session reports no per-batch overhead (it has no batches to
    // measure one from), every step is an iteration observation, and a
    // simulation charges steps the step overhead once it is known.
    void continuousSessionGivesItsStepOverhead()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("s.sqlite").toStdString()).value();
        const auto trace =
            store->addTrace("t", "", TraceFormat::Plain, poissonRows(9, 400, 60, 4, 200, 2, 24)).value().id;
        Calibration truth = decoderCalibration(knownDecoder());
        truth.cost.coef[7] = 3e-4; // iteration: s0 .. s3
        truth.cost.coef[8] = 2e-5;
        truth.cost.coef[9] = 1e-6;
        truth.cost.coef[10] = 1e-9;
        truth.cost.overheadS = 4e-5;
        truth.cost.stepOverheadS = 1.5e-4;
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        BatchingConfig config;
        config.policy = PolicyKind::Continuous;
        config.continuous.maxNumSeqs = 8;
        config.continuous.maxNumBatchedTokens = 128;
        config.continuous.prefillChunk = 32;
        o.config = config;
        auto session = SimulatedReplay(store, truth).run(o);
        QVERIFY2(session, session.status().toString().c_str());
        auto observed = sessionObservations(*store, session->sessionId, true);
        QVERIFY2(observed, observed.status().toString().c_str());
        QCOMPARE(observed->overlapped, std::size_t(0));
        QCOMPARE(observed->overheadSamples, std::size_t(0));
        QVERIFY(observed->stepOverheadSamples > 100);
        // stored times are whole nanoseconds
        QVERIFY2(std::abs(observed->stepOverheadS - 1.5e-4) < 1e-8,
                 qPrintable(QString::number(observed->stepOverheadS * 1e6)));
        QCOMPARE(std::size_t(store->batches(session->sessionId)->size()), observed->batches.size());
        for (const CostObservation &c : observed->batches)
            QCOMPARE(c.kind, CostObservation::Kind::Iteration);

        // Charged: with the step overhead unmeasured, a simulation charges
        // steps the per-batch overhead, and its rows show that one.
        Calibration unmeasured = truth;
        unmeasured.cost.stepOverheadS = 0;
        auto fallback = SimulatedReplay(store, unmeasured).run(o);
        QVERIFY(fallback);
        auto observedFallback = sessionObservations(*store, fallback->sessionId, true);
        QVERIFY(observedFallback);
        QVERIFY2(std::abs(observedFallback->stepOverheadS - 4e-5) < 1e-8,
                 qPrintable(QString::number(observedFallback->stepOverheadS * 1e6)));

        // and it survives the JSON document
        auto back = costModelFromJson(toJson(truth.cost));
        QVERIFY(back);
        QCOMPARE(back->stepOverheadS, 1.5e-4);
        auto bad = toJson(truth.cost);
        bad["step_overhead_s"] = -1;
        QCOMPARE(costModelFromJson(bad).status().code(), StatusCode::InvalidArgument);
    }
};

QTEST_GUILESS_MAIN(TestCostModel)
#include "test_cost_model.moc"
