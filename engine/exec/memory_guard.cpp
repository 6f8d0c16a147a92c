#include "memory_guard.h"

#include "engine/core/nvtx.h"
#include "engine/core/out_of_memory.h"

#include <algorithm>
#include <exception>
#include <new>

namespace bp {

namespace {
template <typename Call> Status guarded(Call &&call)
{
    try {
        return call();
    } catch (const std::bad_alloc &) {
        return Status(StatusCode::ResourceExhausted, "out of memory (std::bad_alloc)");
    } catch (const std::exception &e) {
        const std::string what = e.what();
        return Status(looksLikeOutOfMemory(what) ? StatusCode::ResourceExhausted : StatusCode::Internal,
                      "backend failed: " + what);
    } catch (...) {
        // Not a std::exception (a library throwing an int, a foreign type):
        // the batch or step fails, the engine keeps serving.
        return Status(StatusCode::Internal, "backend failed: it threw a non-standard exception");
    }
}
} // namespace

Status MemoryGuard::runStep(StepModel &model, const std::vector<StepItem> &items,
                            std::vector<StepOutcome> &out)
{
    return guarded([&] { return model.step(items, out); });
}

Status MemoryGuard::runOnce(const BatchInput &input, std::vector<SequenceResult> &out)
{
    return guarded([&] {
        const nvtx::Range range(nvtx::Category::Backend, [&] {
            return "run n=" + std::to_string(input.requests.size()) +
                   " L=" + std::to_string(input.paddedLength);
        });
        return m_backend->run(input, out);
    });
}

void MemoryGuard::runSplitting(const BatchInput &input, std::vector<SequenceResult> &out, GuardedRun &outcome)
{
    const Status status = runOnce(input, out);
    const std::size_t n = input.requests.size();
    if (status.isOk())
        outcome.largestOk = std::max(outcome.largestOk, int(n));
    if (status.code() != StatusCode::ResourceExhausted || n <= 1) {
        outcome.status = status;
        return;
    }
    ++outcome.splits;
    const std::size_t half = n / 2;
    for (auto [from, to] : {std::pair{std::size_t(0), half}, std::pair{half, n}}) {
        BatchInput part;
        part.paddedLength = input.paddedLength;
        part.requests.assign(input.requests.begin() + std::ptrdiff_t(from),
                             input.requests.begin() + std::ptrdiff_t(to));
        std::vector<SequenceResult> partOut(to - from);
        runSplitting(part, partOut, outcome);
        for (std::size_t i = from; i < to; ++i) {
            out[i] = std::move(partOut[i - from]);
            if (!outcome.status)
                out[i].status = outcome.status;
        }
    }
    outcome.status = Status::ok();
}

GuardedRun MemoryGuard::runGuarded(const BatchInput &input, std::vector<SequenceResult> &out)
{
    GuardedRun outcome;
    runSplitting(input, out, outcome);
    return outcome;
}

Status MemoryGuard::run(const BatchInput &input, std::vector<SequenceResult> &out)
{
    return runGuarded(input, out).status;
}

std::optional<int> MemoryGuard::probeMaxBatch(int paddedLength, int upTo)
{
    return m_backend->probeMaxBatch(paddedLength, upTo);
}

std::optional<MemoryGuard::Lowering> MemoryGuard::loweredLimit(const GuardedRun &run, int failedSize)
{
    if (run.splits == 0)
        return std::nullopt;
    return Lowering{std::max(1, run.largestOk > 0 ? run.largestOk : failedSize / 2),
                    "out of memory at batch size " + std::to_string(failedSize) + ", largest that ran " +
                        std::to_string(run.largestOk)};
}

} // namespace bp
