#include "autodriver/util/file_lock.hpp"

#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace autodriver::util {

Expected<FileLock> FileLock::acquire(const std::filesystem::path& path, std::chrono::seconds timeout) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return unexpected(ErrorKind::io, fmt::format("cannot open lock {}: {}", path.string(), std::strerror(errno)));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      close(fd);
      return unexpected(ErrorKind::io, fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno)));
    }
    if (interrupted()) {
      close(fd);
      return unexpected(ErrorKind::interrupted, "interrupted while waiting for " + path.string());
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      close(fd);
      return unexpected(ErrorKind::timeout,
                        fmt::format("another autodriver holds {} for more than {} s", path.string(), timeout.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (m_fd >= 0) close(m_fd); // closing releases the flock
}

} // namespace autodriver::util
