// Synthetic and trace-driven traffic, without Qt: used by
// `batchpilot-bench load`, the console's traffic panel and replay.
//
// A WorkloadSchedule is a deterministic (seeded) sequence of arrivals:
// (offset from start, input length, output tokens). A LoadGenerator thread
// submits them open-loop at their scheduled times; each request's arrival is
// its *scheduled* time, so a late generator or a full queue never hides
// latency (no coordinated omission).
#pragma once

#include "engine/exec/engine.h"
#include "trace_csv.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>

namespace bp {

enum class ArrivalKind {
    Poisson,  // exponential gaps at `rate`
    Gamma,    // gamma gaps at `rate`, squared coefficient of variation = `burstiness` (1 = Poisson)
    Constant, // fixed gaps 1/rate
    Bursts,   // `burstSize` requests at once, bursts at rate/burstSize
    Trace,    // the trace's own gaps, divided by `timeScale`
};
enum class LengthKind { Fixed, Uniform, Trace };

struct WorkloadSpec {
    ArrivalKind arrivals = ArrivalKind::Poisson;
    double rate = 100;     // requests per second (not for Trace)
    double burstiness = 4; // Gamma: CV² of the gaps
    int burstSize = 16;    // Bursts
    LengthKind lengths = LengthKind::Fixed;
    int fixedLength = 32;
    int minLength = 8, maxLength = 128; // Uniform, inclusive
    int maxNewTokens = 0;               // generated tokens asked for (Fixed/Uniform lengths)
    bool outputFromTrace = true;        // Trace lengths: use the trace's output tokens
    double timeScale = 1;               // Trace arrivals: speed-up factor (2 = twice as fast)
    double lengthScale = 1;             // Trace lengths: multiply token counts (0.125 = divide by 8)
    int lengthCap = 0;                  // clamp input lengths to this (0 = no clamp), e.g. the model maximum
    int outputCap = 0;                  // clamp output tokens (0 = no clamp)
    int vocabSize = 256;                // token ids drawn from [0, vocabSize)
    std::uint64_t seed = 1;
    std::shared_ptr<const std::vector<TraceRow>> trace; // for Trace arrivals or lengths
    std::size_t limit = 0; // stop after this many requests (0 = unlimited; Trace: its length)
    // A shared system prompt: `systemPromptTokens` ids, the same in every
    // request that has it, in front of a `systemPromptShare` fraction of the
    // prompts (drawn per request; the rest of the workload's draws do not
    // change with it). 0 = none.
    int systemPromptTokens = 0;
    double systemPromptShare = 1.0;

    Status validate() const;
};

struct Arrival {
    Duration offset{};
    int inputTokens = 0; // its own tokens, after the system prompt when it has it
    int outputTokens = 0;
    bool systemPrompt = false; // starts with the shared system prompt
};

class WorkloadSchedule {
public:
    explicit WorkloadSchedule(WorkloadSpec spec);
    // nullopt when the schedule is exhausted (limit or end of trace).
    std::optional<Arrival> next();
    std::size_t produced() const { return m_index; }
    // Token ids for a request of `length` tokens (deterministic in the seed).
    std::vector<TokenId> tokens(int length);
    // An arrival's tokens: the shared system prompt (when it has it), then
    // inputTokens drawn ids.
    std::vector<TokenId> tokens(const Arrival &arrival);

private:
    Duration gap();
    WorkloadSpec m_spec;
    std::mt19937_64 m_rng;
    std::mt19937_64 m_shareRng{m_spec.seed ^ 0x5348'4152'4544ULL}; // who gets the system prompt
    std::vector<TokenId> m_systemPrompt;                           // drawn at first use
    std::size_t m_index = 0;
    Duration m_clock{};
};

// Submits a schedule to an engine from its own thread until stopped or the
// schedule ends. Thread-safe counters; a completion observer sees every
// response (on engine threads; it must not block).
class LoadGenerator {
public:
    struct Counters {
        std::uint64_t sent = 0, accepted = 0, rejected = 0, completed = 0, failed = 0;
        std::uint64_t shed = 0; // remote load only: shed by the client's bounded queue (within failed)
    };
    using ResponseHook = std::function<void(const Arrival &, TimePoint scheduled, const Response &)>;

    LoadGenerator(Engine &engine, WorkloadSpec spec, ResponseHook hook = {});
    // Stops and joins the producer. Completions of requests still queued in
    // the engine may arrive later: they only touch shared state (and call the
    // hook), never this object.
    ~LoadGenerator();
    void start(TimePoint at = SteadyClock::now());
    void stop();
    // Blocks until the schedule ran out and every accepted request completed.
    void waitFinished();
    bool running() const { return m_running.load(); }
    Counters counters() const;

private:
    void run(TimePoint start);

    struct Shared {
        ResponseHook hook;
        std::atomic<std::uint64_t> sent{0}, accepted{0}, rejected{0}, completed{0}, failed{0};
        std::mutex mutex;
        std::condition_variable cv;
        bool producerDone = false; // guarded by mutex
    };

    Engine &m_engine;
    WorkloadSchedule m_schedule;
    std::shared_ptr<Shared> m_shared;
    std::thread m_thread;
    std::atomic<bool> m_stop{false}, m_running{false};
};

std::optional<ArrivalKind> parseArrivalKind(std::string_view name);
std::optional<LengthKind> parseLengthKind(std::string_view name);

} // namespace bp
