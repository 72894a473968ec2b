#pragma once
// Error values for recoverable failures of the tool itself (not of the code under test).

#include <string>
#include <string_view>

namespace autodriver::util {

/// Closed set of failure kinds. Numbers are stored on disk and never reused.
enum class ErrorKind : int {
  io = 1,
  spawn = 2,
  timeout = 3,
  http = 4,
  parse = 5,
  config = 6,
  not_found = 7,
  network = 8,
  interrupted = 9,
  internal = 10,
};

std::string_view to_string(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::internal;
  std::string message;

  /// "kind: message", one line.
  std::string describe() const;
};

inline Error make_error(ErrorKind kind, std::string message) { return Error{kind, std::move(message)}; }

/// Thrown only for fatal user errors; caught in main and printed as one line.
struct FatalError {
  Error error;
};

} // namespace autodriver::util
