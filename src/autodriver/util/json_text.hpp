#pragma once
// JSON text from values that hold real-world bytes: driver sources, compiler and console output
// carry Latin-1 comments and binary garbage, which nlohmann::json refuses to serialize by default.
// Every dump() in the tool passes `util::json_bytes`: invalid UTF-8 becomes U+FFFD in the JSON
// (the trees and patches the tool writes keep the original bytes; only their JSON mirrors are lossy).

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace autodriver::util {

inline constexpr auto json_bytes = nlohmann::json::error_handler_t::replace;

/// `v` as the integer type T, or `fallback` when it is not a number T can hold: nlohmann's own
/// conversion of 3e56 or 2^64-1 to a long is undefined behaviour, not an exception.
template <class T>
T json_integer(const nlohmann::json& v, T fallback) {
  using L = std::numeric_limits<T>;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // (double)max rounds up to 2^63 for 64-bit types: compare strictly.
    if (!std::isfinite(d) || d < static_cast<double>(L::min()) || d >= static_cast<double>(L::max())) return fallback;
    return static_cast<T>(d);
  }
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(L::max()) ? fallback : static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0 || static_cast<std::uint64_t>(i) > static_cast<std::uint64_t>(L::max())) return fallback;
    } else {
      if (i < static_cast<std::int64_t>(L::min()) || i > static_cast<std::int64_t>(L::max())) return fallback;
    }
    return static_cast<T>(i);
  }
  return fallback;
}

/// `j[key]` as a T, or `fallback` when j is not an object, lacks the key or holds another type
/// (or a number out of T's range): JSON read back from files others wrote (KB bundles, corpus
/// cases, an old store) and a model server's answers never throw.
template <class T>
T json_get(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return json_integer<T>(*it, fallback);
  try {
    return it->template get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

/// `j[key]` as a string (string literals as fallback).
inline std::string json_get(const nlohmann::json& j, const char* key, const char* fallback) {
  return json_get<std::string>(j, key, std::string(fallback));
}

} // namespace autodriver::util
