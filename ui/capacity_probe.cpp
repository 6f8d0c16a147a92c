#include "capacity_probe.h"

#include "engine/sim/calibration/backend_timing.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace bp::ui {

Result<CapacityEstimate> measureCapacity(Backend &backend, int length, int maxNewTokens, int batchLimit)
{
    const ModelInfo &model = backend.info();
    CapacityEstimate best;
    best.length = std::clamp(length, 1, std::max(1, model.maxSequenceLength));
    best.newTokens = model.generative ? std::max(1, maxNewTokens) : 0;
    TimingGrid grid; // the one backend timing (engine/sim/calibration/backend_timing.h)
    grid.lengths = {best.length};
    grid.newTokens = {best.newTokens};
    grid.batchSizes.clear();
    for (int b = 1; b < batchLimit; b *= 2)
        grid.batchSizes.push_back(b);
    grid.batchSizes.push_back(std::max(1, batchLimit));
    grid.warmup = 1;
    grid.repeats = 3;
    best.batchLimit = grid.batchSizes.back();
    auto timed = timeBackend(backend, grid);
    if (!timed)
        return timed.status();
    if (timed->cells.empty())
        return Status(StatusCode::OutOfRange,
                      "capacity probe: the model refused every batch size at length " +
                          std::to_string(best.length));
    for (const TimedCell &cell : timed->cells) {
        const double rate = cell.batch / std::max(cell.medianWall(), 1e-7);
        if (rate > best.requestsPerS) {
            best.requestsPerS = rate;
            best.batch = cell.batch;
        }
    }
    return best;
}

double defaultRateFor(double capacity)
{
    if (!(capacity > 0))
        return 0;
    const double rate = std::min(capacity * 7 / 10, 10'000.0);
    const double magnitude = std::pow(10.0, std::floor(std::log10(rate)) - 1); // two significant figures
    return std::max(0.1, std::round(rate / magnitude) * magnitude);
}

LoadLevel loadLevel(double offered, double capacity)
{
    if (!(capacity > 0))
        return LoadLevel::Unknown;
    const double fraction = offered / capacity;
    return fraction >= 1.0 ? LoadLevel::Over : fraction >= 0.85 ? LoadLevel::Near : LoadLevel::Comfortable;
}

void QueueTrend::add(std::size_t depth)
{
    m_rises = m_any && depth > m_last ? m_rises + 1 : 0;
    m_any = true;
    m_last = depth;
}

void QueueTrend::reset()
{
    m_rises = 0;
    m_any = false;
    m_last = 0;
}

bool QueueTrend::growing(std::size_t threshold) const
{
    return m_rises >= m_window && m_last > threshold;
}

} // namespace bp::ui
