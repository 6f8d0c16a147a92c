// NVTX ranges for Nsight Systems: what the engine, the backends and the REST
// layer are doing, on the same timeline as the kernels and copies.
//
// Everything goes to one NVTX domain, "BatchPilot", with a category per layer
// (engine, backend, rest), so a timeline can be filtered by layer.
//
// Cost when unused: NVTX v3 is header-only and does nothing until a profiler
// injects itself, which it does through the NVTX_INJECTION64_PATH environment
// variable set at process start (`nsys profile` sets it). enabled() reads a
// flag fixed at start-up from that variable, so an unprofiled process pays one
// predictable branch per range and never formats a range's message. Built
// without the NVTX headers (BATCHPILOT_NVTX=OFF, or no CUDA toolkit found),
// enabled() is always false: the same branch, never taken. (The flag is a
// variable rather than a macro so that only nvtx.cpp depends on whether the
// headers were found; no other file is rebuilt when that changes.)
//
// Thread-safety: push/pop are per-thread (NVTX's push/pop ranges nest per OS
// thread); any thread may open ranges.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace bp::nvtx {

enum class Category : std::uint32_t { Engine = 1, Backend = 2, Rest = 3 };

namespace detail {
extern const bool g_enabled; // fixed before main(): NVTX_INJECTION64_PATH was set
void push(Category category, const char *message) noexcept;
void pop() noexcept;
} // namespace detail

// True when this build has NVTX (the nvtx3 headers were found) and a profiler
// may be listening (NVTX_INJECTION64_PATH was set when the process started).
inline bool enabled() noexcept
{
    return detail::g_enabled;
}
// True when this build has NVTX at all.
bool compiledIn() noexcept;

// Opens a push/pop range for its lifetime. The message is either a literal or
// a callable returning a std::string, called only when enabled().
class Range {
public:
    Range(Category category, const char *message) noexcept : m_open(enabled())
    {
        if (m_open)
            detail::push(category, message);
    }

    template <class MakeMessage>
    requires requires(MakeMessage &&f) { std::string(f()); }
    Range(Category category, MakeMessage &&makeMessage) : m_open(enabled())
    {
        if (m_open)
            detail::push(category, std::string(std::forward<MakeMessage>(makeMessage)()).c_str());
    }

    ~Range()
    {
        if (m_open)
            detail::pop();
    }

    Range(const Range &) = delete;
    Range &operator=(const Range &) = delete;

private:
    const bool m_open;
};

} // namespace bp::nvtx
