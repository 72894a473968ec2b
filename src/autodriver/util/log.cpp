#include "autodriver/util/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace autodriver::util {

static std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
static std::mutex g_mutex;

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

void log_line(LogLevel level, std::string_view text) {
  std::lock_guard lock(g_mutex);
  std::fprintf(stderr, "%s%.*s\n", level == LogLevel::debug ? "  · " : "autodriver: ", static_cast<int>(text.size()),
               text.data());
}

} // namespace autodriver::util
