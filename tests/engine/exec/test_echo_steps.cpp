// builtin:echo's step-level generation (the fake decoder the continuous
// scheduler is tested with): stepping gives the tokens Backend::run gives
// for a batch of one, whatever the prefill chunking, the company and a
// recompute after a release; sequences join and leave between steps; release
// frees the cache; bad items fail alone.
#include "tests/engine/step_driver.h"

#include <QtTest>

using namespace bp;
using namespace bp::testing;

namespace {

std::vector<TokenId> runOne(Backend &backend, std::vector<TokenId> prompt, int maxNew)
{
    Request r;
    r.tokens = std::move(prompt);
    r.maxNewTokens = maxNew;
    BatchInput input;
    input.requests.push_back(&r);
    input.paddedLength = int(r.tokens.size());
    std::vector<SequenceResult> out(1);
    if (Status s = backend.run(input, out); !s)
        qWarning("run failed: %s", s.toString().c_str());
    return out[0].tokens;
}

} // namespace

class TestEchoSteps : public QObject {
    Q_OBJECT

private slots:
    void runWithoutNewTokensEchoes()
    {
        auto echo = makeEchoBackend();
        QCOMPARE(runOne(*echo, {1, 2, 3}, 0), std::vector<TokenId>({1, 2, 3}));
        const std::vector<TokenId> gen = runOne(*echo, {1, 2, 3}, 5);
        QCOMPARE(gen.size(), std::size_t(5));
        for (TokenId t : gen)
            QVERIFY(t >= 'a' && t <= 'z');
        QVERIFY(runOne(*echo, {1, 2, 4}, 5) != gen); // the output depends on the prompt

        // Every generated token is reported through Request::onToken, in order.
        Request r;
        r.id = 7;
        r.tokens = {1, 2, 3};
        r.maxNewTokens = 5;
        std::vector<TokenEvent> events;
        r.onToken = [&events](const TokenEvent &e) { events.push_back(e); };
        BatchInput input;
        input.requests = {&r};
        std::vector<SequenceResult> out(1);
        QVERIFY(echo->run(input, out).isOk());
        QCOMPARE(events.size(), std::size_t(5));
        for (std::size_t k = 0; k < events.size(); ++k) {
            QCOMPARE(events[k].requestId, std::uint64_t(7));
            QCOMPARE(events[k].index, int(k));
            QCOMPARE(events[k].token, gen[k]);
        }
    }

    // Several sequences with different prompts, chunk sizes and lengths join
    // at different steps and leave when done; each one's tokens equal its
    // one-at-a-time generation, and the cache holds exactly the live tokens.
    void steppingEqualsRunJoinAndLeave()
    {
        auto echo = makeEchoBackend();
        StepModel *steps = echo->steps();
        QVERIFY(steps);
        const std::vector<Driven> all = {driven(1, {5, 6, 7, 8, 9, 10, 11}, 6, 3, 0),
                                         driven(2, {42}, 3, 8, 0), driven(3, {1, 2, 3, 4}, 9, 1, 2),
                                         driven(4, {7, 7, 7, 7, 7}, 2, 5, 5)};
        std::vector<Driven> finished;
        const QString error = driveSteps(*steps, all, finished);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (const Driven &d : finished)
            QCOMPARE(d.generated, runOne(*echo, d.prompt, d.maxNew));
    }

    // Preemption by recompute: release a sequence mid-generation and start
    // it again with prompt + generated tokens as its prompt; the rest of the
    // output is unchanged.
    void recomputeAfterReleaseContinuesTheSameOutput()
    {
        auto echo = makeEchoBackend();
        StepModel *steps = echo->steps();
        const std::vector<TokenId> prompt = {9, 8, 7, 6};
        const std::vector<TokenId> expected = runOne(*echo, prompt, 8);
        std::vector<StepOutcome> out;
        QVERIFY(steps->step({{1, prompt, true}}, out).isOk());
        std::vector<TokenId> got = {out[0].next};
        for (int i = 0; i < 2; ++i) {
            QVERIFY(steps->step({{1, {got.back()}, true}}, out).isOk());
            got.push_back(out[0].next);
        }
        steps->release(1);
        QCOMPARE(steps->cachedTokens(), std::int64_t(0));
        std::vector<TokenId> again = prompt;
        again.insert(again.end(), got.begin(), got.end());
        QVERIFY(steps->step({{2, again, true}}, out).isOk());
        got.push_back(out[0].next);
        while (got.size() < expected.size()) {
            QVERIFY(steps->step({{2, {got.back()}, true}}, out).isOk());
            got.push_back(out[0].next);
        }
        QCOMPARE(got, expected);
    }

    void badItemsFailAloneAndStartNothing()
    {
        auto echo = makeEchoBackend(256, 16);
        StepModel *steps = echo->steps();
        std::vector<StepOutcome> out;
        QVERIFY(steps->step({{1, {1, 2}, true}, {2, {}, true}, {3, {300}, true}}, out).isOk());
        QVERIFY(out[0].status.isOk());
        QCOMPARE(out[1].status.code(), StatusCode::InvalidArgument);
        QCOMPARE(out[2].status.code(), StatusCode::OutOfRange);
        QCOMPARE(steps->cachedTokens(), std::int64_t(2));
        // Past the model's length (16 input + 16 new): that item alone fails.
        QVERIFY(steps->step({{1, std::vector<TokenId>(31, 1), true}, {4, {5}, true}}, out).isOk());
        QCOMPARE(out[0].status.code(), StatusCode::OutOfRange);
        QVERIFY(out[1].status.isOk());
        QCOMPARE(steps->cachedTokens(), std::int64_t(3));
        // The same sequence twice in one step fails the step.
        QCOMPARE(steps->step({{1, {1}, true}, {1, {2}, true}}, out).code(), StatusCode::InvalidArgument);
        // So it does in a large step (checked by sorting), the last item the second.
        std::vector<StepItem> wide;
        for (std::uint64_t id = 100; id < 140; ++id)
            wide.push_back({id, {1}, true});
        wide.push_back({117, {2}, true});
        const Status twice = steps->step(wide, out);
        QCOMPARE(twice.code(), StatusCode::InvalidArgument);
        QVERIFY2(twice.message().find("sequence 117") != std::string::npos, twice.message().c_str());
        steps->release(99); // unknown: ignored
        steps->release(1);
        steps->release(4);
        QCOMPARE(steps->cachedTokens(), std::int64_t(0));
    }
};

QTEST_APPLESS_MAIN(TestEchoSteps)
#include "test_echo_steps.moc"
