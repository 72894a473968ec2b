#include "autodriver/corpus/journal.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace autodriver::corpus {

using util::ErrorKind;
using util::unexpected;

util::Expected<std::map<std::string, nlohmann::json>> Journal::load(const std::filesystem::path& file) {
  std::map<std::string, nlohmann::json> decided;
  if (!std::filesystem::exists(file)) return decided;
  auto text = util::read_file(file);
  if (!text) return unexpected(text.error());
  for (auto line : util::split_lines(*text)) {
    if (util::trim(line).empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("unit")) continue; // torn write
    if (j.value("v", 0) > k_journal_schema_version)
      return unexpected(ErrorKind::config,
                        fmt::format("{} was written by a newer autodriver (journal version {})", file.string(), j.value("v", 0)));
    decided[j["unit"].get<std::string>()] = j;
  }
  return decided;
}

util::Expected<Journal> Journal::open(const std::filesystem::path& file) {
  auto loaded = load(file);
  if (!loaded) return unexpected(loaded.error());
  std::map<std::string, nlohmann::json> decided = std::move(*loaded);
  if (std::filesystem::exists(file)) {
    auto text = util::read_file(file);
    // A torn last line would glue onto the next append: end the file with a newline.
    if (text && !text->empty() && text->back() != '\n') {
      int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd >= 0) {
        [[maybe_unused]] auto n = ::write(fd, "\n", 1);
        ::close(fd);
      }
    }
  }
  int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return unexpected(ErrorKind::io, fmt::format("cannot open {}: {}", file.string(), std::strerror(errno)));
  Journal j(fd, file);
  j.m_decided = std::move(decided);
  return j;
}

Journal::Journal(Journal&& other) noexcept
    : m_fd(other.m_fd), m_path(std::move(other.m_path)), m_decided(std::move(other.m_decided)),
      m_mutex(std::move(other.m_mutex)) {
  other.m_fd = -1;
}

Journal::~Journal() {
  if (m_fd >= 0) ::close(m_fd);
}

util::Expected<void> Journal::append(const std::string& unit, nlohmann::json entry) {
  entry["v"] = k_journal_schema_version;
  entry["unit"] = unit;
  std::string line = entry.dump(-1, ' ', false, util::json_bytes) + "\n";
  std::lock_guard<std::mutex> lock(*m_mutex);
  std::size_t off = 0;
  while (off < line.size()) {
    auto n = ::write(m_fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return unexpected(ErrorKind::io, fmt::format("cannot append to {}: {}", m_path.string(), std::strerror(errno)));
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(m_fd) != 0)
    return unexpected(ErrorKind::io, fmt::format("cannot sync {}: {}", m_path.string(), std::strerror(errno)));
  m_decided[unit] = std::move(entry);
  return {};
}

} // namespace autodriver::corpus
