// Builds the engine the console and --headless serve (model, device,
// initial batching config) and records it as a live session in the trace
// store at AppOptions::db. Errors are values with a message for the user.
//
// Recording is best effort: when the database cannot be opened or the
// logger cannot start, serving starts anyway and `loggingWarning` says why
// (also printed once to stderr). Later failures (disk full, ...) show up in
// `recorder->warning()` and `recorder->sink()->droppedRows()`.
//
// Shutdown order: shutdown() (or the destructor) drains the engine first so
// its last batches still reach the logger, then finishes the session (final
// metric sample, flush, end time and dropped-row count). Code that drains
// the engine itself (the REST endpoint) may do so first; shutdown() is
// idempotent. Do not move `engine` out of the result: the recorder refers
// to it until the result is destroyed.
#pragma once

#include "app_options.h"

#include "engine/exec/engine.h"
#include "engine/store/session_recorder.h"
#include "engine/store/trace_store.h"

#include <QString>

#include <memory>

namespace bp::app {

struct EngineHostResult {
    std::unique_ptr<Engine> engine;
    std::shared_ptr<TraceStore> store;         // null when AppOptions::db is empty or could not be opened
    std::unique_ptr<SessionRecorder> recorder; // null when the session is not being recorded
    QString error;                             // non-empty on failure (no engine)
    QString loggingWarning;                    // non-empty: serving without recording, and why

    EngineHostResult() = default;
    EngineHostResult(EngineHostResult &&) = default;
    EngineHostResult &operator=(EngineHostResult &&) = default;
    ~EngineHostResult();

    // The live session's id in `store`, 0 when not recording.
    std::int64_t sessionId() const { return recorder ? recorder->sessionId() : 0; }
    // Rows the logger could not save so far (0 when not recording).
    std::uint64_t droppedRows() const { return recorder ? recorder->sink()->droppedRows() : 0; }
    // Drains the engine, then ends the recorded session. Idempotent.
    void shutdown();
};

EngineHostResult createEngine(const AppOptions &options);

// The pieces createEngine() uses, for commands that build their own engine
// (replay): the backend from --model/--device/--preset/--threads, and the
// batching config from --config. Without --config: the defaults, with the
// policy defaultPolicyFor(`backend`) when a backend is given (what the
// console and the headless server open with), else `dynamic`.
Result<std::shared_ptr<Backend>> backendFor(const AppOptions &options);
Result<BatchingConfig> batchingConfigFor(const AppOptions &options, Backend *backend = nullptr);

// The policy a model opens with when no --config says otherwise:
// `continuous` for a generative model with step-level generation
// (builtin:tiny-decoder, a TorchScript decoder) — the policy every LLM
// server uses, measured in docs/benchmarks.md at several times dynamic's
// goodput — and `dynamic` for the rest (encoders). builtin:echo is the
// exception: a no-compute stand-in that also answers max_new_tokens 0 with
// its input (what continuous refuses), it keeps `dynamic`.
PolicyKind defaultPolicyFor(const ModelInfo &model, bool hasSteps);
// What the control panel shows beside the policy: "Default for a
// generative model: continuous." and the like.
QString defaultPolicyNote(const ModelInfo &model);

} // namespace bp::app
