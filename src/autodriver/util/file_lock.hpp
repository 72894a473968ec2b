#pragma once
// Advisory exclusive lock on a file (flock), released on destruction or process death.

#include "autodriver/util/expected.hpp"

#include <chrono>
#include <filesystem>

namespace autodriver::util {

class FileLock {
public:
  /// Blocks until the lock is held or `timeout` expires.
  static Expected<FileLock> acquire(const std::filesystem::path& path, std::chrono::seconds timeout);
  FileLock(FileLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

private:
  explicit FileLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

} // namespace autodriver::util
