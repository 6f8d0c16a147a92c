// The books every iteration-level server model keeps (vLLM, TGI, SGLang:
// engine/core/server_model.h): the waiting and running sequences, what each
// holds in the model's KV cache, admission, the step's outcome applied
// (tokens, TTFT, TPOT, inter-token gaps, onToken), completion, cancellation
// and deadlines. A model only decides the next step (decide()); the books
// hand it to the executor like ContinuousScheduler does, so the engine and
// the simulator run a server model through the same seam
// (engine/sched/scheduler.h). Not thread-safe (see Scheduler).
#pragma once

#include "engine/model/backend.h"
#include "engine/sched/rate_estimator.h"
#include "engine/sched/scheduler.h"

#include <deque>
#include <memory>
#include <optional>
#include <vector>

namespace bp {

class StepBooks : public Scheduler {
public:
    StepBooks(BatchingConfig config, ModelLimits limits, StepModel &model, std::shared_ptr<UnitIds> ids);
    ~StepBooks() override;

    Status admit(Pending &pending, TimePoint now) override;
    Poll poll(TimePoint now, bool draining, bool mayDispatch = true) override;
    bool finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done) override;
    void reconfigure(const BatchingConfig &config, std::uint64_t version) override;
    std::vector<Pending> takeAll() override;
    std::size_t size() const override { return m_waiting.size() + m_running.size(); }
    SchedulerGauges gauges(TimePoint now) const override;

    std::size_t waiting() const { return m_waiting.size(); }
    std::size_t running() const { return m_running.size(); }
    std::int64_t kvTokens() const { return m_kvTokens; }
    std::uint64_t preemptions() const { return m_preemptions; }

protected:
    struct Sequence {
        Pending pending;
        std::uint64_t id = 0; // the model's live-sequence id; a new one on every join
        std::vector<TokenId> generated;
        std::int64_t cached = 0;  // tokens of the context in the model's KV cache
        std::int64_t planned = 0; // tokens it feeds in the step being decided
        bool joined = false;
        TimePoint firstJoin{}, firstToken{}, lastToken{};
        std::vector<Duration> gaps;

        int prompt() const { return int(pending.request.tokens.size()); }
        int maxNew() const { return pending.request.maxNewTokens; }
        std::size_t contextSize() const { return pending.request.tokens.size() + generated.size(); }
        TokenId contextAt(std::size_t i) const;
        // Context tokens not yet in the cache (a decode: 1).
        std::int64_t remaining() const { return std::int64_t(contextSize()) - cached; }
        bool decoding() const { return !generated.empty() && remaining() == 1; }
        bool isCancelled() const;
    };
    using SequencePtr = std::unique_ptr<Sequence>;

    // The model's own admission check, after the books' (empty input,
    // vocabulary, model length, deadline): OK or why it is refused.
    virtual Status checkModel(const Request &request) const = 0;
    // The model's step at `now` (no step in flight, something to run):
    // feed sequences with feed(), join waiting ones with join(), preempt
    // with preempt(). Returns false when nothing can run now.
    virtual void decide(TimePoint now, StepWork &step) = 0;
    // After a step's outcome is applied (the model's counters).
    virtual void stepDone(const StepWork &) {}

    // Moves the front waiting sequence to the end of the running set.
    Sequence &joinFront(TimePoint now, StepWork &step);
    // Adds `tokens` of `s`'s context to `step` (s.planned grows).
    void feed(Sequence &s, std::int64_t tokens, StepWork &step);
    // Recompute: releases running[i]'s cache and puts it at the front of
    // the queue with what it generated.
    void preempt(std::size_t runningIndex);

    std::deque<SequencePtr> m_waiting;  // FCFS: front first
    std::vector<SequencePtr> m_running; // in the order they joined
    std::int64_t m_kvTokens = 0;        // Σ cached over the running

private:
    Status check(const Request &request, TimePoint now) const;
    void release(Sequence &s);
    void complete(SequencePtr s, Status status, TimePoint now, UnitDone &done);

    ModelLimits m_limits;
    StepModel &m_model;
    std::uint64_t m_configVersion = 1;
    std::uint64_t m_nextSequenceId = 1;
    std::uint64_t m_nextSeq = 1;
    std::uint64_t m_preemptions = 0;
    int m_preemptedUnreported = 0;
    RateEstimator m_rate;
};

} // namespace bp
