#include "scheduler.h"

#include "batcher.h"
#include "continuous_scheduler.h"
#include "server_models/sglang_scheduler.h"
#include "server_models/tgi_scheduler.h"
#include "server_models/vllm_scheduler.h"

namespace bp {

Status schedulerSupports(const BatchingConfig &config, const StepModel *steps, const std::string &modelName)
{
    if (config.policy == PolicyKind::Continuous && !steps)
        return {StatusCode::InvalidArgument,
                "policy continuous needs a model with step-level generation; " + modelName + " has none"};
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
