#pragma once
// A thin RAII layer over the SQLite C API: one connection, prepared statements, and retries
// on SQLITE_BUSY (other processes and threads write the same file).

#include "autodriver/util/expected.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace autodriver::store {

/// A prepared statement. Bind parameters are 1-based; columns 0-based.
class Stmt {
public:
  Stmt(sqlite3* db, sqlite3_stmt* st) : m_db(db), m_st(st) {}
  Stmt(Stmt&& o) noexcept : m_db(o.m_db), m_st(o.m_st) { o.m_st = nullptr; }
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  ~Stmt();

  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind_blob(int i, std::string_view v);
  Stmt& bind_null(int i);
  /// Binds `v` or NULL.
  Stmt& bind_opt(int i, const std::optional<std::int64_t>& v);

  /// Next row: true when a row is ready, false when done; retries while the database is busy.
  util::Expected<bool> step();
  /// Runs to completion (for INSERT/UPDATE).
  util::Expected<void> exec();

  std::int64_t int_col(int i) const;
  std::string text_col(int i) const;
  bool is_null(int i) const;

private:
  sqlite3* m_db;
  sqlite3_stmt* m_st;
};

/// One connection. Not shared between threads: open one per thread.
class Db {
public:
  /// Opens (creating when missing) with WAL, synchronous=NORMAL, a busy timeout and foreign keys.
  static util::Expected<Db> open(const std::filesystem::path& path);
  Db(Db&& o) noexcept : m_db(o.m_db), m_path(std::move(o.m_path)) { o.m_db = nullptr; }
  Db& operator=(Db&&) = delete;
  Db(const Db&) = delete;
  ~Db();

  util::Expected<Stmt> prepare(std::string_view sql);
  /// Runs SQL without results (may hold several statements); retries while busy.
  util::Expected<void> exec(std::string_view sql);
  std::int64_t last_insert_id() const;
  const std::filesystem::path& path() const { return m_path; }
  /// "path: message" of the last error.
  std::string errmsg() const;

private:
  Db(sqlite3* db, std::filesystem::path p) : m_db(db), m_path(std::move(p)) {}
  sqlite3* m_db;
  std::filesystem::path m_path;
};

/// RAII transaction: BEGIN IMMEDIATE (takes the write lock up front, so no deadlock upgrade),
/// ROLLBACK on destruction unless committed.
class Transaction {
public:
  static util::Expected<Transaction> begin(Db& db);
  Transaction(Transaction&& o) noexcept : m_db(o.m_db) { o.m_db = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  util::Expected<void> commit();

private:
  explicit Transaction(Db* db) : m_db(db) {}
  Db* m_db;
};

} // namespace autodriver::store
