// The one length rule (engine/core/length_rule.h): scaling raises an output
// below one token to 1, and a request longer than the model is clamped so
// that prompt + output fit, the input giving way first.
#include "engine/core/length_rule.h"

#include <QtTest>

using namespace bp;

class TestLengthRule : public QObject {
    Q_OBJECT
private slots:
    void scalesAndRaisesTheOutput()
    {
        const LengthLimits none{};
        ScaledLengths s = scaleLengths(100, 10, 0.02, none); // 2 and 0.2
        QCOMPARE(s.input, 2);
        QCOMPARE(s.output, 1);
        QVERIFY(s.raised);
        QVERIFY(!s.clamped);
        s = scaleLengths(10, 0, 0.5, none); // the source asked for none: stays 0
        QCOMPARE(s.output, 0);
        QVERIFY(!s.raised);
        s = scaleLengths(1, 1, 0.01, none); // the input too is at least 1
        QCOMPARE(s.input, 1);
        QCOMPARE(s.output, 1);
    }

    void clampsInputFirstSoThatTheOutputFits()
    {
        const LengthLimits small{.maxLength = 127};
        ScaledLengths s = scaleLengths(300, 40, 1.0, small);
        QCOMPARE(s.input, 87);
        QCOMPARE(s.output, 40);
        QVERIFY(s.clamped);
        QCOMPARE(s.input + s.output, 127);
        s = scaleLengths(100, 27, 1.0, small); // exactly the length: untouched
        QCOMPARE(s.input, 100);
        QVERIFY(!s.clamped);
        s = scaleLengths(50, 500, 1.0, small); // the output alone is too long
        QCOMPARE(s.output, 126);
        QCOMPARE(s.input, 1);
        QVERIFY(s.clamped);
    }

    void capsTheOutputBeforeClamping()
    {
        const LengthLimits capped{.maxLength = 100, .maxNewTokens = 8};
        const ScaledLengths s = scaleLengths(95, 64, 1.0, capped);
        QCOMPARE(s.output, 8);
        QCOMPARE(s.input, 92);
    }

    void anEncoderKeepsItsInputWithinTheLength()
    {
        const LengthLimits encoder{.maxLength = 64, .generative = false};
        const ScaledLengths s = scaleLengths(500, 30, 1.0, encoder);
        QCOMPARE(s.input, 64);
        QCOMPARE(s.output, 0);
        QVERIFY(s.clamped);
        QVERIFY(!s.raised);
    }

    void countsWhatChanged()
    {
        LengthCounts c;
        QCOMPARE(c.describe(127), std::string());
        const LengthLimits small{.maxLength = 127};
        for (int in : {10, 300, 400})
            c.add(scaleLengths(in, 2, 0.2, small)); // outputs 0.4: raised; 300·0.2 = 60 fits
        QCOMPARE(c.raised, std::size_t(3));
        QCOMPARE(c.clamped, std::size_t(0));
        c.add(scaleLengths(1000, 10, 1.0, small));
        QCOMPARE(c.describe(127),
                 std::string("3 outputs raised to 1 token, 1 request clamped to the model's 127 tokens "
                             "(prompt + output)"));
    }
};

QTEST_GUILESS_MAIN(TestLengthRule)
#include "test_length_rule.moc"
