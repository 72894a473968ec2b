#pragma once
// The per-unit result journal of a corpus build (<corpus>/journal.jsonl): one JSON line per decided
// unit, appended and fsync'ed, so a killed run resumes without redoing decided units. A torn last
// line (killed mid-write) is ignored on reading.

#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

namespace autodriver::corpus {

inline constexpr int k_journal_schema_version = 1;

class Journal {
public:
  /// Opens (creating) the journal and loads the units it has decided. Refuses a newer version.
  static util::Expected<Journal> open(const std::filesystem::path& file);
  /// Reads the entries without opening for append (a missing file is empty; nothing is created).
  static util::Expected<std::map<std::string, nlohmann::json>> load(const std::filesystem::path& file);
  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&&) = delete;
  Journal(const Journal&) = delete;
  ~Journal();

  /// Entries by unit path (the last entry wins).
  const std::map<std::string, nlohmann::json>& decided() const { return m_decided; }
  bool is_decided(const std::string& unit) const { return m_decided.count(unit) != 0; }

  /// Appends {"v":1, "unit":..., ...}; thread-safe; fsync before returning.
  util::Expected<void> append(const std::string& unit, nlohmann::json entry);

private:
  Journal(int fd, std::filesystem::path path) : m_fd(fd), m_path(std::move(path)) {}
  int m_fd = -1;
  std::filesystem::path m_path;
  std::map<std::string, nlohmann::json> m_decided;
  std::unique_ptr<std::mutex> m_mutex = std::make_unique<std::mutex>();
};

} // namespace autodriver::corpus
