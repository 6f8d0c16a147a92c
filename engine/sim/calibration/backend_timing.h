// The one way to time a backend over batch size × padded length (× new
// tokens for a generative model): what `batchpilot calibrate` fits a cost
// model to (measureBackend(), calibration.h) and what `batchpilot-bench
// profile` prints as the model's ceiling (bench/model_profile.h) both run.
//
// Each cell is `batch` requests of `length` random tokens (seeded), padded
// to `length`, each asking `newTokens` new tokens (0 for an encoder). It
// runs `warmup` times untimed, then `repeats` times timed; every timed run
// is kept (wall time, the process's CPU time, and for a generative model the
// last-prefilled row's first token and its time per output token), so the caller
// chooses its statistic and can see how far the runs spread.
//
// Threading: blocks the calling thread; the callback runs on it; `cancel`
// is checked between cells. Qt-free and torch-free: any Backend.
#pragma once

#include "engine/core/clock.h"
#include "engine/core/result.h"
#include "engine/model/backend.h"

#include <atomic>
#include <functional>
#include <vector>

namespace bp {

struct TimingGrid {
    std::vector<int> batchSizes{1};
    std::vector<int> lengths{16};
    std::vector<int> newTokens{0}; // per cell; 0 = no generation
    int warmup = 1;                // untimed runs per cell
    int repeats = 3;               // timed runs per cell
    std::uint64_t seed = 1;        // token ids
    // Idle time before each run (0: back to back). A server between
    // arrivals starts a batch from idle; a profile timed back to back sees
    // warm caches and a CPU at full clock, so it under-prices such a batch.
    Duration idleBefore{};
};

struct TimedCell {
    int batch = 0, length = 0, newTokens = 0;
    // One entry per timed run, seconds.
    std::vector<double> wall;
    std::vector<double> cpu; // the process's CPU time (all threads) during the run
    // Generative: the row whose first token came last, i.e. the whole batch's
    // prefill (a paged backend prefills a large batch in several chunks, and a
    // row of the first chunk then waits for the others before its decode
    // steps), and that row's TPOT (request.h): decode steps alone.
    std::vector<double> firstToken;
    std::vector<double> perToken; // 2+ tokens
    double medianWall() const;
    // (max − min) / median of the wall times: run-to-run spread (statistics.h).
    double spread() const;
};

struct BackendTiming {
    std::vector<TimedCell> cells;    // lengths outer, then new tokens, then batch sizes
    std::vector<int> skippedLengths; // above the model's maximum input length
    std::vector<TimedCell>
        outOfRange; // cells the model refused (input + new tokens past its positions), untimed
};

struct TimingProgress {
    std::size_t done = 0, total = 0;
    const TimedCell *cell = nullptr; // the cell just timed (null for one out of range)
};

// Times every cell of `grid` on `backend`. A length above the model's
// maximum is skipped, a cell the model refuses with OutOfRange is listed
// apart; any other failure stops with its Status ("batch B x length L:
// ..."). Cancel stops between cells with InvalidArgument "cancelled". Runs
// are timed with `clock` (a test passes a FakeClock its fake backend moves).
Result<BackendTiming> timeBackend(Backend &backend, const TimingGrid &grid,
                                  const std::function<void(const TimingProgress &)> &progress = {},
                                  const std::atomic<bool> *cancel = nullptr,
                                  const Clock &clock = RealClock::instance());

} // namespace bp
