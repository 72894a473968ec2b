#pragma once
// JSON text from values that hold real-world bytes: driver sources, compiler and console output
// carry Latin-1 comments and binary garbage, which nlohmann::json refuses to serialize by default.
// Every dump() in the tool passes `util::json_bytes`: invalid UTF-8 becomes U+FFFD in the JSON
// (the trees and patches the tool writes keep the original bytes; only their JSON mirrors are lossy).

#include <nlohmann/json.hpp>

#include <string>

namespace autodriver::util {

inline constexpr auto json_bytes = nlohmann::json::error_handler_t::replace;

/// `j[key]` as a T, or `fallback` when j is not an object, lacks the key or holds another type:
/// JSON read back from files others wrote (KB bundles, corpus cases, an old store) never throws.
template <class T>
T json_get(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
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
