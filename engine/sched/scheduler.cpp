#include "scheduler.h"

#include "batcher.h"
#include "continuous_scheduler.h"
#include "server_models/llamacpp_scheduler.h"
#include "server_models/sglang_scheduler.h"
#include "server_models/tgi_scheduler.h"
#include "server_models/vllm_scheduler.h"

namespace bp {

Status schedulerSupports(const BatchingConfig &config, StepModel *steps, const std::string &modelName)
{
    if (config.policy != PolicyKind::Continuous)
        return Status::ok();
    if (!steps)
        return {StatusCode::InvalidArgument,
                "policy continuous needs a model with step-level generation; " + modelName + " has none"};
    // A paged model's KV pool was sized when the engine started: the budget
    // may shrink inside it, never grow past it; a cached prefix block is a
    // whole number of its blocks.
    const KvPoolInfo pool = steps->kvPool();
    if (pool.capacityTokens > 0) {
        const std::int64_t kv = config.continuous.kvCacheTokens;
        if (kv / pool.blockTokens * pool.blockTokens > pool.capacityTokens)
            return {StatusCode::InvalidArgument,
                    "continuous.kv_cache_tokens " + std::to_string(kv) + " exceeds the KV pool of " +
                        std::to_string(pool.capacityTokens) + " tokens " + modelName +
                        " holds; the pool is sized when an engine starts (restart with the larger budget)"};
        if (config.prefixCache.enabled && config.prefixCache.blockTokens % pool.blockTokens != 0)
            return {StatusCode::InvalidArgument,
                    "prefix_cache.block_tokens " + std::to_string(config.prefixCache.blockTokens) +
                        " is not a multiple of the KV pool's block of " + std::to_string(pool.blockTokens) +
                        " tokens (" + modelName + " shares cached prefixes block by block)"};
    }
    return Status::ok();
}

bool sameSchedulerKind(const BatchingConfig &a, const BatchingConfig &b)
{
    return (a.policy == PolicyKind::Continuous) == (b.policy == PolicyKind::Continuous) &&
           a.server.kind == b.server.kind;
}

std::unique_ptr<Scheduler> makeScheduler(const BatchingConfig &config, ModelLimits limits, StepModel *steps,
                                         std::shared_ptr<UnitIds> ids)
{
    if (config.policy == PolicyKind::Continuous && steps) {
        switch (config.server.kind) {
        case ServerKind::Vllm: return std::make_unique<VllmScheduler>(config, limits, *steps, std::move(ids));
        case ServerKind::Tgi: return std::make_unique<TgiScheduler>(config, limits, *steps, std::move(ids));
        case ServerKind::Sglang:
            return std::make_unique<SglangScheduler>(config, limits, *steps, std::move(ids));
        case ServerKind::LlamaCpp:
            return std::make_unique<LlamaCppScheduler>(config, limits, *steps, std::move(ids));
        case ServerKind::BatchPilot:
        case ServerKind::Triton: break;
        }
    }
    if (config.policy == PolicyKind::Continuous && steps)
        return std::make_unique<ContinuousScheduler>(config, limits, *steps, std::move(ids));
    return std::make_unique<Batcher>(config, limits, std::move(ids));
}

std::uint64_t WorkUnit::id() const
{
    return batch() ? batch()->id : step()->id;
}

std::size_t WorkUnit::size() const
{
    return batch() ? batch()->items.size() : step()->items.size();
}

TimePoint WorkUnit::dispatchedAt() const
{
    return batch() ? batch()->dispatchedAt : step()->dispatchedAt;
}

void WorkUnit::delayDispatch(Duration by)
{
    if (Batch *b = batch())
        b->dispatchedAt += by;
    else
        step()->dispatchedAt += by;
}

} // namespace bp
