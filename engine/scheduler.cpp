#include "scheduler.h"

#include "batcher.h"
#include "continuous_scheduler.h"

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
    return (a.policy == PolicyKind::Continuous) == (b.policy == PolicyKind::Continuous);
}

std::unique_ptr<Scheduler> makeScheduler(const BatchingConfig &config, ModelLimits limits, StepModel *steps)
{
    if (config.policy == PolicyKind::Continuous && steps)
        return std::make_unique<ContinuousScheduler>(config, limits, *steps);
    return std::make_unique<Batcher>(config, limits);
}

} // namespace bp
