#include "capacity_probe.h"

#include "engine/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace bp::ui {

Result<CapacityEstimate> measureCapacity(Backend &backend, int length, int maxNewTokens, int batchLimit)
{
    const ModelInfo &model = backend.info();
    length = std::clamp(length, 1, std::max(1, model.maxSequenceLength));
    const int newTokens = model.generative ? std::max(1, maxNewTokens) : 0;
    WorkloadSpec source;
    source.vocabSize = std::max(1, std::min(model.vocabSize, 256));
    WorkloadSchedule tokens(source);

    CapacityEstimate best;
    best.length = length;
    best.newTokens = newTokens;
    std::vector<int> sizes;
    for (int b = 1; b < batchLimit; b *= 2)
        sizes.push_back(b);
    sizes.push_back(std::max(1, batchLimit));
    best.batchLimit = sizes.back();
    for (int batch : sizes) {
        std::vector<Request> requests(static_cast<std::size_t>(batch));
        BatchInput input;
        input.paddedLength = length;
        for (auto &r : requests) {
            r.tokens = tokens.tokens(length);
            r.maxNewTokens = newTokens;
            input.requests.push_back(&r);
        }
        std::vector<double> seconds;
        for (int run = 0; run < 4; ++run) {
            std::vector<SequenceResult> out(requests.size());
            const TimePoint start = SteadyClock::now();
            Status s = backend.run(input, out);
            const double took = toSeconds(SteadyClock::now() - start);
            for (const auto &r : out)
                if (s.isOk() && !r.status.isOk())
                    s = r.status;
            if (!s)
                return s;
            if (run > 0) // the first run warms up
                seconds.push_back(took);
        }
        std::sort(seconds.begin(), seconds.end());
        const double median = std::max(seconds[seconds.size() / 2], 1e-7);
        const double rate = batch / median;
        if (rate > best.requestsPerS) {
            best.requestsPerS = rate;
            best.batch = batch;
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
