#include "autodriver/store/sqlite.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <thread>

namespace autodriver::store {

using util::ErrorKind;
using util::unexpected;

namespace {

// busy_timeout covers most waits; this loop covers the cases SQLite does not retry itself
// (e.g. BEGIN IMMEDIATE racing a WAL checkpoint, or SQLITE_BUSY_SNAPSHOT).
constexpr int k_busy_retries = 200;
constexpr auto k_busy_sleep = std::chrono::milliseconds(25);

bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

} // namespace

Stmt::~Stmt() {
  if (m_st) sqlite3_finalize(m_st);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(m_st, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(m_st, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_blob(int i, std::string_view v) {
  sqlite3_bind_blob(m_st, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(m_st, i);
  return *this;
}
Stmt& Stmt::bind_opt(int i, const std::optional<std::int64_t>& v) { return v ? bind(i, *v) : bind_null(i); }

util::Expected<bool> Stmt::step() {
  for (int attempt = 0;; ++attempt) {
    int rc = sqlite3_step(m_st);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if (is_busy(rc) && attempt < k_busy_retries) {
      sqlite3_reset(m_st);
      std::this_thread::sleep_for(k_busy_sleep);
      continue;
    }
    return unexpected(ErrorKind::io, fmt::format("{}: {}", sqlite3_db_filename(m_db, "main"), sqlite3_errmsg(m_db)));
  }
}

util::Expected<void> Stmt::exec() {
  while (true) {
    auto r = step();
    if (!r) return unexpected(r.error());
    if (!*r) return {};
  }
}

std::int64_t Stmt::int_col(int i) const { return sqlite3_column_int64(m_st, i); }
std::string Stmt::text_col(int i) const {
  const auto* p = sqlite3_column_blob(m_st, i);
  int n = sqlite3_column_bytes(m_st, i);
  return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}
bool Stmt::is_null(int i) const { return sqlite3_column_type(m_st, i) == SQLITE_NULL; }

util::Expected<Db> Db::open(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw, path);
  if (rc != SQLITE_OK)
    return unexpected(ErrorKind::io, fmt::format("{}: cannot open the run store: {} (pass --store PATH or set AUTODRIVER_STORE)",
                                                 path.string(), raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  sqlite3_busy_timeout(raw, 10000);
  // journal_mode=WAL needs a moment of exclusive access on a new file: exec() retries.
  if (auto r = db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"); !r)
    return unexpected(r.error());
  return db;
}

Db::~Db() {
  if (m_db) sqlite3_close_v2(m_db);
}

util::Expected<Stmt> Db::prepare(std::string_view sql) {
  sqlite3_stmt* st = nullptr;
  for (int attempt = 0;; ++attempt) {
    int rc = sqlite3_prepare_v2(m_db, sql.data(), static_cast<int>(sql.size()), &st, nullptr);
    if (rc == SQLITE_OK) return Stmt(m_db, st);
    if (is_busy(rc) && attempt < k_busy_retries) {
      std::this_thread::sleep_for(k_busy_sleep);
      continue;
    }
    return unexpected(ErrorKind::io, errmsg());
  }
}

util::Expected<void> Db::exec(std::string_view sql) {
  std::string s(sql);
  for (int attempt = 0;; ++attempt) {
    char* err = nullptr;
    int rc = sqlite3_exec(m_db, s.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    if (rc == SQLITE_OK) return {};
    if (is_busy(rc) && attempt < k_busy_retries) {
      std::this_thread::sleep_for(k_busy_sleep);
      continue;
    }
    return unexpected(ErrorKind::io, fmt::format("{}: {}", m_path.string(), msg.empty() ? sqlite3_errmsg(m_db) : msg));
  }
}

std::int64_t Db::last_insert_id() const { return sqlite3_last_insert_rowid(m_db); }

std::string Db::errmsg() const { return fmt::format("{}: {}", m_path.string(), sqlite3_errmsg(m_db)); }

util::Expected<Transaction> Transaction::begin(Db& db) {
  if (auto r = db.exec("BEGIN IMMEDIATE"); !r) return unexpected(r.error());
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (m_db) (void)m_db->exec("ROLLBACK");
}

util::Expected<void> Transaction::commit() {
  auto r = m_db->exec("COMMIT");
  if (r) m_db = nullptr;
  return r;
}

} // namespace autodriver::store
