// What every piece of the HTTP frontend shares (http_frontend.h): the
// engine, the options, the draining flag, the answers given so far by
// status code, and the one way to write an answer. Owned by HttpFrontend;
// the request gate, the API handlers, the call table and the waiting room
// hold a reference.
//
// Threading: the server thread only, except `draining` (any thread).
#pragma once

#include "connection_queue.h"
#include "http_reply.h"
#include "rest_options.h"

#include "engine/exec/engine.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>

namespace bp::rest {

struct FrontendContext {
    using SteadyTime = std::chrono::steady_clock::time_point;

    FrontendContext(Engine &engine, RestOptions options, QString version);

    Engine &engine;
    const RestOptions options;
    const QString version;
    // New requests get 503 (health/ready reports not ready) while set.
    std::atomic<bool> draining{false};
    // Every HTTP answer written or decided, by status code (/metrics).
    std::map<int, std::uint64_t> responsesByCode;
    // When handleRequest() was entered for the request being dispatched.
    SteadyTime requestStart{};

    bool isDraining() const { return draining.load(std::memory_order_relaxed); }
    // Writes `reply` to the ticket's connection (in order), counted.
    void send(const ReplyTicket &ticket, HttpReply reply);
    // A streamed answer's head (200) went out.
    void countStreamStart() { ++responsesByCode[int(HttpStatus::Ok)]; }
};

} // namespace bp::rest
