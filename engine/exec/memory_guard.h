// The memory guard: a decorator around the model's Backend that turns what a
// batch can do wrong into statuses the engine can act on.
//  - Whatever run() throws is caught (foreign code): std::bad_alloc and any
//    exception whose message looksLikeOutOfMemory() become ResourceExhausted,
//    the rest Internal. The engine keeps serving.
//  - On ResourceExhausted a batch of n > 1 is split in halves and each half
//    retried (recursively). A part that still fails keeps its status per
//    sequence, so the rest of the batch is not lost.
//  - The outcome says how many splits happened and the largest batch that
//    ran, from which loweredLimit() proposes the memory_batch_limit that the
//    engine applies (origin kMemoryGuardOrigin; the guard never raises it).
//
// Thread-safety: as the wrapped backend's (run() is called concurrently
// from every executor).
#pragma once

#include "engine/model/backend.h"
#include "engine/sched/work_unit.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace bp {

// The origin of the memory guard's config changes in the config history.
inline constexpr std::string_view kMemoryGuardOrigin = "memory-guard";

class MemoryGuard final : public Backend {
public:
    explicit MemoryGuard(std::shared_ptr<Backend> backend) : m_backend(std::move(backend)) {}

    const ModelInfo &info() const override { return m_backend->info(); }
    // run() with the split-and-retry; the counts are dropped.
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override;
    std::optional<int> probeMaxBatch(int paddedLength, int upTo) override;

    // run() that reports the splits. `out` is resized by the caller.
    GuardedRun runGuarded(const BatchInput &input, std::vector<SequenceResult> &out);

    // After a run of `failedSize` requests that split: the memory_batch_limit
    // to set (the largest part that ran, else half the batch; at least 1)
    // and the reason for the config history. nullopt when nothing split.
    struct Lowering {
        int limit = 1;
        std::string why;
    };
    static std::optional<Lowering> loweredLimit(const GuardedRun &run, int failedSize);

    // One generation step with the same catching: whatever `model` throws
    // becomes ResourceExhausted (out of memory) or Internal. Steps are not
    // split: the scheduler's KV budget and preemption bound their memory.
    static Status runStep(StepModel &model, const std::vector<StepItem> &items,
                          std::vector<StepOutcome> &out);

    StepModel *steps() override { return m_backend->steps(); }
    const std::shared_ptr<Backend> &inner() const { return m_backend; }

private:
    Status runOnce(const BatchInput &input, std::vector<SequenceResult> &out);
    void runSplitting(const BatchInput &input, std::vector<SequenceResult> &out, GuardedRun &outcome);

    const std::shared_ptr<Backend> m_backend;
};

} // namespace bp
