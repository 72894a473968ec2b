#pragma once
// JSON text from values that hold real-world bytes: driver sources, compiler and console output
// carry Latin-1 comments and binary garbage, which nlohmann::json refuses to serialize by default.
// Every dump() in the tool passes `util::json_bytes`: invalid UTF-8 becomes U+FFFD in the JSON
// (the trees and patches the tool writes keep the original bytes; only their JSON mirrors are lossy).

#include <nlohmann/json.hpp>

namespace autodriver::util {

inline constexpr auto json_bytes = nlohmann::json::error_handler_t::replace;

} // namespace autodriver::util
