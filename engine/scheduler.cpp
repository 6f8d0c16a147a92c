#include "scheduler.h"

#include "batcher.h"

namespace bp {

std::unique_ptr<Scheduler> makeScheduler(const BatchingConfig &config, ModelLimits limits)
{
    return std::make_unique<Batcher>(config, limits);
}

} // namespace bp
