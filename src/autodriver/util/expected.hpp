#pragma once
// Minimal Expected<T> (C++20 has no std::expected): a value or an Error.

#include "autodriver/util/error.hpp"

#include <cassert>
#include <optional>
#include <utility>
#include <variant>

namespace autodriver::util {

struct Unexpected {
  Error error;
};

inline Unexpected unexpected(ErrorKind kind, std::string message) { return Unexpected{Error{kind, std::move(message)}}; }
inline Unexpected unexpected(Error error) { return Unexpected{std::move(error)}; }

template <typename T>
class [[nodiscard]] Expected {
public:
  Expected(T value) : m_data(std::in_place_index<0>, std::move(value)) {}
  Expected(Unexpected u) : m_data(std::in_place_index<1>, std::move(u.error)) {}

  bool has_value() const { return m_data.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(m_data);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(m_data);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(m_data));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!has_value());
    return std::get<1>(m_data);
  }

private:
  std::variant<T, Error> m_data;
};

template <>
class [[nodiscard]] Expected<void> {
public:
  Expected() = default;
  Expected(Unexpected u) : m_error(std::move(u.error)) {}
  bool has_value() const { return !m_error.has_value(); }
  explicit operator bool() const { return has_value(); }
  const Error& error() const {
    assert(m_error);
    return *m_error;
  }

private:
  std::optional<Error> m_error;
};

} // namespace autodriver::util
