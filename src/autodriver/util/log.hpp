#pragma once
// Progress and diagnostic logging to stderr; quiet by default in --json mode.

#include <fmt/format.h>

#include <string_view>

namespace autodriver::util {

enum class LogLevel { quiet = 0, info = 1, debug = 2 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, std::string_view text);

template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::info) log_line(LogLevel::info, fmt::format(f, std::forward<Args>(args)...));
}
/// Shown even in quiet (--json) mode: something the user should know about (stale data, fallbacks).
template <typename... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  log_line(LogLevel::quiet, "warning: " + fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::debug) log_line(LogLevel::debug, fmt::format(f, std::forward<Args>(args)...));
}

} // namespace autodriver::util
