// The CPU step's fused kernels (engine/torch/cpu_kernels.h) against
// the ATen formulation they replace (transformers' LlamaRMSNorm, rotate_half
// RoPE, silu(gate) * up, at::linear), in float32 and bfloat16, on shapes with
// odd widths (vector tails), strided rows and every row count the few-rows
// product takes, bp::linear on both sides of its few-rows threshold, and the
// rows' greedy argmax against at::argmax (ties, NaN).
// torch before Qt: Qt's `slots` keyword macro breaks torch's headers.
#include "engine/torch/cpu_blas.h"
#include "engine/torch/cpu_kernels.h"
#include "engine/torch/kernels/vec_math.h"

#include <QtTest>

using namespace bp;

namespace {

double maxError(const at::Tensor &a, const at::Tensor &b)
{
    return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

at::Tensor rmsReference(const at::Tensor &x, const at::Tensor &w, double eps)
{
    const at::Tensor xf = x.to(at::kFloat);
    return w * (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps)).to(x.scalar_type());
}

at::Tensor ropeReference(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin)
{
    const std::int64_t half = x.size(-1) / 2;
    const at::Tensor rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

// Tolerances: float32 sums in another order; bfloat16 rounds once where the
// reference rounds after each op (a few units of its 2^-8 epsilon).
double tolerance(at::ScalarType t, double scale)
{
    return (t == at::kFloat ? 1e-5 : 3e-2) * scale;
}

} // namespace

class TestCpuKernels : public QObject {
    Q_OBJECT
private slots:
    void rmsNormMatchesTransformers()
    {
        at::manual_seed(1);
        for (auto dtype : {at::kFloat, at::kBFloat16}) {
            const at::Tensor x = (at::randn({7, 67}) * 3).to(dtype);
            const at::Tensor w = (at::rand({67}) + 0.5).to(dtype);
            const double err = maxError(rmsNormCpu(x, w, 1e-6), rmsReference(x, w, 1e-6));
            QVERIFY2(err <= tolerance(dtype, 2), qPrintable(QString::number(err)));
        }
    }

    void ropeInPlaceMatchesRotateHalf()
    {
        at::manual_seed(2);
        const std::int64_t T = 5, H = 3, Hkv = 1, D = 16, P = 40;
        const at::Tensor freqs = at::outer(at::arange(P, at::kFloat), at::rand({D / 2}));
        const at::Tensor emb = at::cat({freqs, freqs}, -1);
        for (auto dtype : {at::kFloat, at::kBFloat16}) {
            const at::Tensor cos = emb.cos().to(dtype), sin = emb.sin().to(dtype);
            // a QKV row: q heads, k heads, then v (not rotated)
            const at::Tensor qkv = at::randn({T, (H + 2 * Hkv) * D}).to(dtype);
            const at::Tensor positions = at::tensor({0, 7, 8, 39, 3}, at::kInt);
            const at::Tensor c = cos.index_select(0, positions).unsqueeze(1),
                             s = sin.index_select(0, positions).unsqueeze(1);
            const at::Tensor qRef = ropeReference(qkv.narrow(1, 0, H * D).view({T, H, D}), c, s);
            const at::Tensor kRef = ropeReference(qkv.narrow(1, H * D, Hkv * D).view({T, Hkv, D}), c, s);
            const at::Tensor vBefore = qkv.narrow(1, (H + Hkv) * D, Hkv * D).clone();
            at::Tensor rotated = qkv.clone();
            ropeInPlaceCpu(rotated, H + Hkv, D, cos, sin, positions);
            QVERIFY(maxError(rotated.narrow(1, 0, H * D).view({T, H, D}), qRef) <= tolerance(dtype, 4));
            QVERIFY(maxError(rotated.narrow(1, H * D, Hkv * D).view({T, Hkv, D}), kRef) <=
                    tolerance(dtype, 4));
            QCOMPARE(maxError(rotated.narrow(1, (H + Hkv) * D, Hkv * D), vBefore), 0.0);
            // a position outside the table is refused, nothing written
            at::Tensor again = qkv.clone();
            QVERIFY_THROWS_EXCEPTION(c10::Error, ropeInPlaceCpu(again, H + Hkv, D, cos, sin,
                                                                at::tensor({0, 1, 2, 40, 4}, at::kInt)));
            QCOMPARE(maxError(again, qkv), 0.0);
        }
    }

    void swigluMatchesSiluTimesUp()
    {
        at::manual_seed(3);
        for (auto dtype : {at::kFloat, at::kBFloat16}) {
            const at::Tensor gu = (at::randn({6, 2 * 45}) * 4).to(dtype);
            const at::Tensor ref = at::silu(gu.narrow(1, 0, 45)) * gu.narrow(1, 45, 45);
            const double err = maxError(swigluCpu(gu), ref), largest = ref.abs().max().item<double>();
            QVERIFY2(err <= tolerance(dtype, largest), qPrintable(QString::number(err)));
        }
    }

    void fewRowsProductsMatchLinear()
    {
        at::manual_seed(4);
        for (auto dtype : {at::kFloat, at::kBFloat16})
            for (std::int64_t m : {1, 2, 3, 4, 5, 7, 16})
                for (std::int64_t k : {37, 256}) {
                    const std::int64_t n = 301;
                    const at::Tensor x = at::randn({m, k}).to(dtype), w = (at::randn({n, k}) * 0.1).to(dtype);
                    const at::Tensor b = at::randn({n}).to(dtype);
                    const at::Tensor ref = at::linear(x.to(at::kFloat), w.to(at::kFloat), b.to(at::kFloat));
                    const double scale = std::sqrt(double(k));
                    QVERIFY2(maxError(smallLinearCpu(x, w, b), ref) <= tolerance(dtype, 4 * scale),
                             qPrintable(QStringLiteral("m %1 k %2").arg(m).arg(k)));
                    QVERIFY(maxError(smallLinearCpu(x, w), ref - b.to(at::kFloat)) <=
                            tolerance(dtype, 4 * scale));
                    at::Tensor acc = at::randn({m, n}).to(dtype);
                    const at::Tensor accRef =
                        acc.to(at::kFloat) + at::linear(x.to(at::kFloat), w.to(at::kFloat));
                    addSmallLinearCpu(acc, x, w);
                    QVERIFY(maxError(acc, accRef) <= tolerance(dtype, 8 * scale));
                }
    }

    void expVecIsExpf()
    {
        double worst = 0;
        for (float x = -86.5f; x <= 88.7f; x += 0.0137f) {
            const double ref = std::exp(double(x));
            worst = std::max(worst, std::abs(double(expVec(x)) - ref) / ref);
        }
        QVERIFY2(worst < 3.6e-7, qPrintable(QString::number(worst))); // 3 units of float's 2^-23
        QCOMPARE(expVec(0.f), 1.f);
        QCOMPARE(expVec(-INFINITY), 0.f);
        QCOMPARE(expVec(-1000.f), 0.f);
        QCOMPARE(expVec(INFINITY), INFINITY);
        QVERIFY(std::isnan(expVec(NAN)));
    }

    void argmaxRowsIsAtensArgmax()
    {
        at::manual_seed(6);
        for (auto dtype : {at::kFloat, at::kBFloat16}) {
            // a vocabulary-wide row, odd widths (vector tails), rounded values (ties)
            for (std::int64_t n : {1, 7, 37, 151936}) {
                const at::Tensor logits = (at::randn({5, n}) * 4).round().to(dtype);
                QVERIFY(at::equal(argmaxRowsCpu(logits), logits.argmax(-1)));
            }
            // ties take the first; a NaN counts as the largest; all -inf gives 0
            at::Tensor rows = at::zeros({4, 9}).to(dtype);
            rows[0][3] = 2;
            rows[0][6] = 2;
            rows[1][2] = 5;
            rows[1][5] = NAN;
            rows[1][7] = NAN;
            rows[2].fill_(-INFINITY);
            rows[3][8] = INFINITY;
            const at::Tensor got = argmaxRowsCpu(rows);
            QVERIFY(at::equal(got, rows.argmax(-1)));
            QCOMPARE(got[0].item<std::int64_t>(), 3);
            QCOMPARE(got[1].item<std::int64_t>(), 5);
            QCOMPARE(got[2].item<std::int64_t>(), 0);
            QCOMPARE(got[3].item<std::int64_t>(), 8);
        }
        QVERIFY_THROWS_EXCEPTION(c10::Error, argmaxRowsCpu(at::zeros({2, 0})));
    }

    void linearIsTheSameOnBothSidesOfTheThreshold()
    {
        at::manual_seed(5);
        const at::Tensor w = at::randn({129, 64}), b = at::randn({129});
        const at::Tensor x = at::randn({kSmallLinearRows + 1, 64});
        const at::Tensor all = bp::linear(x, w, b); // a GEMM
        const at::Tensor few = bp::linear(x.narrow(0, 0, kSmallLinearRows).contiguous(), w, b);
        QVERIFY(maxError(few, all.narrow(0, 0, kSmallLinearRows)) <= 1e-4);
        QVERIFY(maxError(all, at::linear(x, w, b)) <= 1e-4);
        at::Tensor acc = at::randn({3, 129});
        const at::Tensor expected = acc + at::linear(x.narrow(0, 0, 3), w, b);
        addLinear(acc, x.narrow(0, 0, 3).contiguous(), w, b);
        QVERIFY(maxError(acc, expected) <= 1e-4);
        at::Tensor big = at::randn({kSmallLinearRows + 1, 129});
        const at::Tensor bigExpected = big + at::linear(x, w, b);
        addLinear(big, x, w, b);
        QVERIFY(maxError(big, bigExpected) <= 1e-4);
    }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"
