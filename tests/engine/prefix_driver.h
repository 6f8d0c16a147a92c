// Drives a ContinuousScheduler over any StepModel like the engine's executor
// step (books_driver.h's executorStep) on a fake clock, for the prefix-cache
// tests of every model (test_prefix_cache, test_tiny_decoder, test_torchscript).
#pragma once

#include "books_driver.h"
#include "engine/sched/continuous_scheduler.h"

#include <QString>

#include <map>
#include <memory>

namespace bp::testing {

inline BatchingConfig prefixConfig(bool prefix, int block = 4, int kv = 0, int seqs = 4, int budget = 64,
                                   int chunk = 16)
{
    BatchingConfig c = continuousConfig(seqs, budget, true, chunk, kv);
    c.prefixCache.enabled = prefix;
    c.prefixCache.blockTokens = block;
    return c;
}

struct PrefixDriver {
    FakeClock clock;
    StepModel &model;
    std::unique_ptr<ContinuousScheduler> scheduler;
    std::map<std::uint64_t, Response> responses;
    std::vector<StepWork> steps;
    QString error; // the first thing that went wrong

    PrefixDriver(const BatchingConfig &c, ModelLimits limits, StepModel &m)
        : model(m), scheduler(std::make_unique<ContinuousScheduler>(c, limits, m))
    {
    }
    Status submit(std::uint64_t id, std::vector<TokenId> tokens, int maxNew)
    {
        Pending p = pendingFor(id, std::move(tokens), maxNew, clock.now(), responses);
        return scheduler->admit(p, clock.now());
    }
    bool stepOnce()
    {
        UnitRun run;
        std::optional<StepWork> step = executorStep(*scheduler, model, clock, &run, [this](const auto &f) {
            if (error.isEmpty())
                error = QString::fromStdString("failed: " + f.status.toString());
        });
        if (!step)
            return false;
        if (!run.guard.status && error.isEmpty())
            error = QString::fromStdString("step: " + run.guard.status.toString());
        for (const StepOutcome &o : run.outcomes)
            if (!o.status && error.isEmpty())
                error = QString::fromStdString("item: " + o.status.toString());
        steps.push_back(std::move(*step));
        const int kv = scheduler->config().continuous.kvCacheTokens;
        if (kv > 0 && scheduler->kvTokens() > kv && error.isEmpty())
            error = QStringLiteral("KV books %1 over the budget %2").arg(scheduler->kvTokens()).arg(kv);
        // A model with a KV pool: the scheduler's books are the pool's blocks.
        if (model.kvPool().capacityTokens > 0 && scheduler->kvTokens() != model.cachedTokens() &&
            error.isEmpty())
            error = QStringLiteral("step %1: the scheduler books %2 KV tokens, the pool holds %3")
                        .arg(steps.size())
                        .arg(scheduler->kvTokens())
                        .arg(model.cachedTokens());
        return true;
    }
    void runAll(int maxSteps = 100000)
    {
        for (int i = 0; i < maxSteps && scheduler->size() > 0; ++i)
            if (!stepOnce())
                break;
    }
    std::int64_t prefillTokens() const
    {
        std::int64_t n = 0;
        for (const StepWork &s : steps)
            n += s.prefillTokens;
        return n;
    }
    std::int64_t queries() const
    {
        std::int64_t n = 0;
        for (const StepWork &s : steps)
            n += s.prefixQueryTokens;
        return n;
    }
    std::int64_t hits() const
    {
        std::int64_t n = 0;
        for (const StepWork &s : steps)
            n += s.prefixHitTokens;
        return n;
    }
};

} // namespace bp::testing
