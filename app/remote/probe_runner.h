// Runs a remote calibration's probe plan (engine/sim/calibration/remote_calibration.h)
// against a server over HTTP, the way `batchpilot calibrate --target`
// does: round after round, each round's requests sent together on
// connections of their own, every streamed token event timed as it
// arrives, the server's /metrics scraped meanwhile with what the client
// had in flight at that moment.
//
//  - prefill and decode rounds: `concurrency` requests at once; the next
//    round starts when every answer of this one is in.
//  - mixed: the decode streams go first; once each of them has streamed
//    two tokens (all are decoding), the probe prompts go one after another
//    (max_tokens 1), each when the previous one's answer is in. Prompts the
//    streams outlive are not sent. When the scrapes so far showed a running
//    cap (sequences running while requests waited), the round runs at most
//    cap − 1 streams (none when the cap is 1: the round is dropped), so that
//    each prompt finds a place beside them (leaveRoomForProbes); the change
//    is in the round's progress line, ProbeRun::changes, and `planned`.
//  - Prompt tokens are drawn at random below the vocabulary, from a fresh
//    seed per run unless one is given, so that no two requests share a
//    prefix the server could cache, of this run or of an earlier probe of the
//    same server (a second calibration of a llama-server drawn from the same
//    seed met its prompt cache: every prefill cost nothing).
//  - /metrics is scraped at the start, every `scrapeInterval`, and once
//    more when the last answer is in; a periodic scrape still out when
//    that closing one starts is abandoned without a row (the probe's end
//    cut it short: not a failed scrape).
//  - Ctrl+C (`interrupt`) or the plan's maxDuration aborts what is in
//    flight and ends the run: what was measured is kept, the interrupted
//    requests are marked failed.
//
// Threading: runProbe() blocks the calling thread and runs a local event
// loop on it (the CLI's main thread; a QCoreApplication must exist).
#pragma once

#include "remote_options.h"

#include "engine/sim/calibration/remote_calibration.h"
#include "engine/telemetry/prometheus_text.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bp::remote {

struct ProbeRunOptions {
    RemoteOptions remote; // target, protocol, model, token, timeout, metrics URL, vocabulary
    ProbePlan plan;
    // What the server's kind needs in the OpenAI bodies (dialectFor: TGI's
    // completions prompt as text, ...); default: the plain bodies.
    ServerDialect dialect;
    // llama-server's slots (n_parallel, as read; 0: not one, or unread):
    // the streams of a decode or mixed round take slots 0, 1, ... by id,
    // so that their decodes share one forward pass a turn, as the fit
    // prices a step. Left to the server, they take the least recently used
    // slots, and decodes of slots that are not adjacent run as passes of
    // their own (LlamaCppScheduler): 2 streams cost 2 passes a turn.
    int pinSlots = 0;
    Duration scrapeInterval = std::chrono::milliseconds(250); // zero: only the first and last scrapes
    const std::atomic<bool> *interrupt = nullptr;
    // One line per round as it starts ("round 3/14: decode, 4 at once").
    std::function<void(const std::string &)> progress;
    // The prompts' seed; 0: a fresh one per run (ProbeRun::seed says which).
    std::uint64_t seed = 0;
};

struct ProbeRun {
    std::vector<ProbeRequest> requests;
    std::vector<ProbeScrape> scrapes;
    std::optional<prom::Exposition> first, last; // the first and last readable scrapes
    std::string server;                          // detected from /metrics ("vllm", ...); empty if not
    // The plan's requests after the changes made while it ran (`changes`,
    // one line each); requests.size() is what was sent.
    std::size_t planned = 0;
    std::vector<std::string> changes;
    double seconds = 0;
    bool interrupted = false; // Ctrl+C or the plan's maxDuration
    std::uint64_t seed = 0;   // the prompts were drawn with
    std::size_t failed() const;
};

ProbeRun runProbe(const ProbeRunOptions &options);

} // namespace bp::remote
