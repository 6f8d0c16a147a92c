// Synthetic load (engine/workload/workload.h) sent to a remote target instead of
// the embedded engine: what the console's Traffic panel runs when its
// target selector says "remote server". Recorded as one session of kind
// "remote" with the target's URL (engine/replay/remote_session.h), every
// request stored like a replay's (source "remote"), the client's figures
// sampled every second and the target's /metrics scraped.
//
//  - Open loop: a producer thread submits each arrival at its scheduled
//    time, stamped with that time (no coordinated omission); submit()
//    never blocks (the target queues what exceeds its concurrency cap, up
//    to its own cap, and sheds the rest: Counters::shed).
//  - restart(spec): a new schedule (the panel's form was edited) in the
//    same session; arrivals restart from now.
//  - stop() ends the producer at once; finish() then fails what still
//    waits in the client's queue (never sent: a server that fell behind
//    is not sent a backlog after Stop), waits for what is on the wire (or
//    fails it too, with `cancel`) and ends the session.
//
// Threading: start/restart/stop/finish from one thread (finish() may be a
// different one than start(), once stop() returned); counters() anywhere.
#pragma once

#include "engine/replay/remote_session.h"
#include "engine/workload/workload.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace bp::remote {

class RemoteLoad {
public:
    struct Counters {
        std::uint64_t sent = 0, accepted = 0, rejected = 0, completed = 0, failed = 0;
        // Shed by the client because its queue (requests waiting for a
        // connection, RemoteOptions::maxQueued) was full; within `failed`.
        std::uint64_t shed = 0;
    };

    // Starts the session and the producer. `spec` is validated here
    // (InvalidArgument); a target that cannot begin (see RemoteTarget::
    // begin) fails here too, with the session row ended.
    static Result<std::unique_ptr<RemoteLoad>> start(std::shared_ptr<TraceStore> store,
                                                     std::unique_ptr<RemoteTarget> target, WorkloadSpec spec,
                                                     std::string notes = {}, RecorderOptions recorder = {});
    ~RemoteLoad(); // stop(), then finish(true) unless finish() ran

    Status restart(WorkloadSpec spec);
    void stop();
    // Fails what was never sent, blocks until every request sent has its
    // answer (or, with `cancel`, fails what is on the wire at once), then
    // ends the session. Returns the
    // client's figures (RemoteTarget::finish()). Idempotent.
    nlohmann::json finish(bool cancel = false);
    // Fails what waits in the client's queue, never sent (finish() does it
    // too; the panel does it at Stop, before a connection frees up for it),
    // and with `onTheWire` what was sent as well: a finish() waiting on
    // another thread then returns at once. Any thread.
    void failPending(bool onTheWire) { m_target->failPending(onTheWire); }

    std::int64_t sessionId() const { return m_session->sessionId(); }
    const RemoteTarget &target() const { return *m_target; }
    Counters counters() const;
    bool producing() const { return m_thread.joinable(); }

private:
    RemoteLoad() = default;
    void run(WorkloadSpec spec, TimePoint start);

    struct Tally {
        std::atomic<std::uint64_t> sent{0}, accepted{0}, rejected{0}, completed{0}, failed{0};
    };

    std::unique_ptr<RemoteTarget> m_target;
    std::unique_ptr<RemoteSession> m_session;
    std::shared_ptr<Tally> m_tally = std::make_shared<Tally>();
    std::uint64_t m_nextId = 1; // producer thread only (one at a time)
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_stop = false; // guarded by m_mutex
    std::thread m_thread;
    bool m_finished = false;
    nlohmann::json m_client;
};

} // namespace bp::remote
