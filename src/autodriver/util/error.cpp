#include "autodriver/util/error.hpp"

namespace autodriver::util {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::io: return "io";
  case ErrorKind::spawn: return "spawn";
  case ErrorKind::timeout: return "timeout";
  case ErrorKind::http: return "http";
  case ErrorKind::parse: return "parse";
  case ErrorKind::config: return "config";
  case ErrorKind::not_found: return "not-found";
  case ErrorKind::network: return "network";
  case ErrorKind::interrupted: return "interrupted";
  case ErrorKind::internal: return "internal";
  }
  return "internal";
}

std::string Error::describe() const { return std::string(to_string(kind)) + ": " + message; }

} // namespace autodriver::util
