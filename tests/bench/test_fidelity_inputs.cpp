// `batchpilot-bench fidelity --prefix`: its shared-prompt
// trace has exactly the reuse it says (every request after the first finds
// the system prompt's blocks; its own blocks are new), and its configs are
// continuous with the prefix cache off, on, and on under a KV budget.
#include "bench/fidelity_inputs.h"
#include "engine/config/config_rules.h"

#include "engine/workload/prefix_tokens.h"

#include <QtTest>

using namespace bp;
using namespace bp::bench;

class TestFidelityInputs : public QObject {
    Q_OBJECT
private slots:
    void sharedPromptTraceReuseIsKnown()
    {
        const PrefixTrace t = sharedPromptTrace(50, 100, 128, 7);
        QCOMPARE(t.rows.size(), std::size_t(50));
        QCOMPARE(t.ids.size(), t.rows.size());
        std::uint64_t prompt = 0;
        for (std::size_t i = 0; i < t.rows.size(); ++i) {
            const int own = t.rows[i].inputTokens - 128;
            QVERIFY(own >= 16 && own <= 48);
            QCOMPARE(t.ids[i].size(), std::size_t(8 + (own + 15) / 16));
            for (int k = 0; k < 8; ++k)
                QCOMPARE(t.ids[i][std::size_t(k)], std::int64_t(k + 1));
            QVERIFY(t.rows[i].outputTokens >= 8 && t.rows[i].outputTokens <= 24);
            if (i > 0)
                QVERIFY(t.rows[i].arrivalS >= t.rows[i - 1].arrivalS);
            prompt += std::uint64_t(t.rows[i].inputTokens);
        }
        const PrefixShare s = prefixShare(t.rows, t.ids, t.blockTokens);
        QCOMPARE(s.promptTokens, prompt);
        QCOMPARE(s.reusableTokens, std::uint64_t(49 * 128)); // the system prompt, from the second request on
    }

    void prefixConfigsToggleTheCache()
    {
        const auto c = prefixConfigs();
        QCOMPARE(c.size(), std::size_t(3));
        QVERIFY(!c[0].config.prefixCache.enabled);
        QVERIFY(c[1].config.prefixCache.enabled && c[2].config.prefixCache.enabled);
        QCOMPARE(c[2].config.continuous.kvCacheTokens, 1024);
        for (const NamedConfig &n : c) {
            QCOMPARE(n.config.policy, PolicyKind::Continuous);
            QVERIFY2(validate(n.config), n.name.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestFidelityInputs)
#include "test_fidelity_inputs.moc"
