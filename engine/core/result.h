// Result<T>: a value or the Status that explains why there is none
// (std::expected arrives only in C++23).
#pragma once

#include "status.h"

#include <cassert>
#include <utility>
#include <variant>

namespace bp {

template <typename T> class [[nodiscard]] Result {
public:
    Result(T value) : m_v(std::move(value)) {}
    Result(Status error) : m_v(std::move(error)) { assert(!std::get<Status>(m_v).isOk()); }

    bool isOk() const { return std::holds_alternative<T>(m_v); }
    explicit operator bool() const { return isOk(); }

    T &value() & { return std::get<T>(m_v); }
    const T &value() const & { return std::get<T>(m_v); }
    T &&value() && { return std::get<T>(std::move(m_v)); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }
    T &operator*() { return value(); }

    const Status &status() const
    {
        static const Status okStatus;
        return isOk() ? okStatus : std::get<Status>(m_v);
    }

private:
    std::variant<T, Status> m_v;
};

} // namespace bp
