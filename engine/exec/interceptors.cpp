#include "interceptors.h"

namespace bp {

CacheInterceptor::CacheInterceptor(const BatchingConfig &initial)
{
    m_cache.configure(initial.cache.maxEntries, initial.cache.maxBytes);
    m_enabled.store(initial.cache.enabled);
}

std::optional<Response> CacheInterceptor::answer(const Request &request)
{
    if (!m_enabled.load(std::memory_order_relaxed))
        return std::nullopt;
    auto hit = m_cache.lookup(request.tokens, request.maxNewTokens);
    if (!hit)
        return std::nullopt;
    Response r;
    r.values = std::move(hit->values);
    r.tokens = std::move(hit->tokens);
    return r;
}

void CacheInterceptor::observe(const Request &request, const Response &response, const RequestRecord &)
{
    if (m_enabled.load(std::memory_order_relaxed) && response.status.isOk())
        m_cache.insert(request.tokens, request.maxNewTokens, {response.values, response.tokens});
}

void CacheInterceptor::configured(const BatchingConfig &before, const BatchingConfig &after)
{
    const CacheConfig &b = before.cache, &a = after.cache;
    if (a.enabled == b.enabled && a.maxEntries == b.maxEntries && a.maxBytes == b.maxBytes)
        return;
    m_cache.configure(a.maxEntries, a.maxBytes);
    if (!a.enabled)
        m_cache.clear();
    m_enabled.store(a.enabled);
}

void SloInterceptor::observe(const Request &, const Response &, const RequestRecord &record)
{
    if (record.status == StatusCode::Ok)
        m_controller.observe(record.total);
}

std::optional<ConfigProposal> SloInterceptor::propose(const BatchingConfig &current, TimePoint now)
{
    auto adjustment = m_controller.evaluate(current, now);
    if (!adjustment)
        return std::nullopt;
    return ConfigProposal{ConfigPatch::diff(current, adjustment->config), std::string(kSloControllerOrigin),
                          std::move(adjustment->reason)};
}

} // namespace bp
