#include "engine/sim/calibration/backend_timing.h"

#include "engine/sim/calibration/statistics.h"

#include "engine/workload/workload.h"

#include <algorithm>
#include <ctime>
#include <thread>

namespace bp {

namespace {

double processCpuSeconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

} // namespace

double TimedCell::medianWall() const
{
    return median(wall);
}

double TimedCell::spread() const
{
    return relativeSpread(wall);
}

Result<BackendTiming> timeBackend(Backend &backend, const TimingGrid &grid,
                                  const std::function<void(const TimingProgress &)> &progress,
                                  const std::atomic<bool> *cancel, const Clock &clock)
{
    const ModelInfo &info = backend.info();
    BackendTiming out;
    std::vector<int> lengths;
    for (int L : grid.lengths) {
        if (L >= 1 && L <= info.maxSequenceLength)
            lengths.push_back(L);
        else
            out.skippedLengths.push_back(L);
    }
    WorkloadSpec tokenSource;
    tokenSource.vocabSize = std::max(1, std::min(info.vocabSize, 256));
    tokenSource.seed = grid.seed;
    WorkloadSchedule schedule(tokenSource);
    TimingProgress p;
    p.total = lengths.size() * grid.newTokens.size() * grid.batchSizes.size();
    for (int L : lengths) {
        for (int want : grid.newTokens) {
            for (int b : grid.batchSizes) {
                if (cancel && cancel->load())
                    return Status(StatusCode::InvalidArgument, "cancelled");
                std::vector<Request> requests(static_cast<std::size_t>(std::max(1, b)));
                for (Request &r : requests) {
                    r.tokens = schedule.tokens(L);
                    r.maxNewTokens = want;
                }
                BatchInput input;
                input.paddedLength = L;
                for (const Request &r : requests)
                    input.requests.push_back(&r);
                TimedCell cell{b, L, want, {}, {}, {}, {}};
                bool refused = false;
                for (int run = 0; run < grid.warmup + grid.repeats; ++run) {
                    std::vector<SequenceResult> results(requests.size());
                    if (grid.idleBefore > Duration::zero())
                        std::this_thread::sleep_for(grid.idleBefore);
                    const double cpuStart = processCpuSeconds();
                    const TimePoint start = clock.now();
                    Status s = backend.run(input, results);
                    const double took = toSeconds(clock.now() - start);
                    const double cpuTook = processCpuSeconds() - cpuStart;
                    for (const SequenceResult &r : results)
                        if (s.isOk() && !r.status.isOk())
                            s = r.status;
                    if (s.code() == StatusCode::OutOfRange) {
                        refused = true;
                        break;
                    }
                    if (!s)
                        return Status(s.code(), "batch " + std::to_string(b) + " x length " +
                                                    std::to_string(L) + ": " + s.message());
                    if (run < grid.warmup)
                        continue;
                    cell.wall.push_back(took);
                    cell.cpu.push_back(cpuTook);
                    const auto lastPrefilled = std::max_element(
                        results.begin(), results.end(), [](const SequenceResult &a, const SequenceResult &b) {
                            return a.firstTokenAfter < b.firstTokenAfter;
                        });
                    if (info.generative && lastPrefilled != results.end() && !lastPrefilled->tokens.empty()) {
                        const SequenceResult &r = *lastPrefilled;
                        cell.firstToken.push_back(toSeconds(r.firstTokenAfter));
                        if (const Duration tpot =
                                timePerOutputToken(r.firstTokenAfter, r.lastTokenAfter, r.tokens.size());
                            tpot > Duration::zero())
                            cell.perToken.push_back(toSeconds(tpot));
                    }
                }
                ++p.done;
                if (refused) {
                    out.outOfRange.push_back(cell);
                    p.cell = nullptr;
                } else {
                    out.cells.push_back(std::move(cell));
                    p.cell = &out.cells.back();
                }
                if (progress)
                    progress(p);
            }
        }
    }
    return out;
}

} // namespace bp
