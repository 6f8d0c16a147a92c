// Interceptors: parts of the request path that are not scheduling and not
// execution, plugged around them (like gRPC's or Triton's interceptors).
// The engine calls every interceptor at four points:
//  - answer(): in submit(), on the caller's thread, before admission. An
//    interceptor that can answer the request alone (the response cache)
//    returns the Response; the request then never reaches the scheduler.
//  - observe(): on the executor, after a request ran, before its completion.
//  - propose(): on the scheduling thread, under the engine lock, before each
//    decision: a config change it wants (the SLO controller). The engine
//    applies it through the same validated, stamped path as an operator's.
//  - configured(): under the engine lock, after every applied config change.
// Implementations are engine parts, not user code: they must not throw,
// must not block and must not call into the engine. observe() and answer()
// run concurrently on several threads.
#pragma once

#include "engine/config/config_patch.h"
#include "engine/core/records.h"
#include "engine/core/request.h"
#include "engine/sched/adaptive.h"
#include "response_cache.h"

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

namespace bp {

// The origin of the SLO controller's config changes in the config history.
inline constexpr std::string_view kSloControllerOrigin = "slo-controller";

// A config change an interceptor asks for.
struct ConfigProposal {
    ConfigPatch patch;
    std::string origin; // for the config history
    std::string why;    // prefixed to the change's summary
};

class Interceptor {
public:
    virtual ~Interceptor() = default;
    virtual std::optional<Response> answer(const Request &) { return std::nullopt; }
    virtual void observe(const Request &, const Response &, const RequestRecord &) {}
    virtual std::optional<ConfigProposal> propose(const BatchingConfig &, TimePoint) { return std::nullopt; }
    virtual void configured(const BatchingConfig & /*before*/, const BatchingConfig & /*after*/) {}
};

// The response cache (config `cache`): answers a repeated request (same
// tokens, same max_new_tokens) from an LRU of successful responses.
class CacheInterceptor final : public Interceptor {
public:
    explicit CacheInterceptor(const BatchingConfig &initial);
    std::optional<Response> answer(const Request &request) override;
    void observe(const Request &request, const Response &response, const RequestRecord &record) override;
    void configured(const BatchingConfig &before, const BatchingConfig &after) override;
    CacheStats stats() const { return m_cache.stats(); }

private:
    ResponseCache m_cache;
    std::atomic<bool> m_enabled{false};
};

// The SLO controller (config `slo`): AIMD on max_batch_size and
// max_queue_delay against a p99 target, fed every successful request's
// latency (docs/optimizations.md).
class SloInterceptor final : public Interceptor {
public:
    void observe(const Request &request, const Response &response, const RequestRecord &record) override;
    std::optional<ConfigProposal> propose(const BatchingConfig &current, TimePoint now) override;

private:
    SloController m_controller;
};

} // namespace bp
