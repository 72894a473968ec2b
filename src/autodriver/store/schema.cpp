// The run store's schema, one migration per version. A migration is never edited once
// released: a change is a new migration (ninja's build_log.cc versioning, done in SQL).

#include "autodriver/store/run_store.hpp"

#include <fmt/format.h>

#include <array>

namespace autodriver::store {

namespace {

// v1: runs, steps, content-addressed blobs and the artifacts that name them.
constexpr const char* k_v1 = R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  parent_run INTEGER REFERENCES runs(id),
  command TEXT NOT NULL,
  args TEXT NOT NULL DEFAULT '{}',
  tree TEXT NOT NULL DEFAULT '',
  case_id TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK(status IN ('running','ok','failed','interrupted','error')),
  started_at TEXT NOT NULL,
  ended_at TEXT,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL DEFAULT 0,
  summary TEXT);
CREATE TABLE steps(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  component TEXT NOT NULL DEFAULT '',
  input TEXT,
  output TEXT,
  diagnostics TEXT,
  started_at TEXT NOT NULL,
  elapsed_ms INTEGER NOT NULL DEFAULT 0,
  tokens_in INTEGER NOT NULL DEFAULT 0,
  tokens_out INTEGER NOT NULL DEFAULT 0,
  argv TEXT,
  PRIMARY KEY(run_id, seq));
CREATE TABLE blobs(
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  content BLOB NOT NULL);
CREATE TABLE artifacts(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  hash TEXT NOT NULL REFERENCES blobs(hash),
  PRIMARY KEY(run_id, name));
)sql";

// v2: the knowledge base of solved diagnostics, and indexes for `runs` filters.
constexpr const char* k_v2 = R"sql(
CREATE TABLE kb_entries(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  signature TEXT NOT NULL,
  change_id TEXT NOT NULL DEFAULT '',
  label TEXT NOT NULL DEFAULT '',
  title TEXT NOT NULL DEFAULT '',
  proposer TEXT NOT NULL DEFAULT '',
  edit TEXT NOT NULL DEFAULT '{}',
  patch_hash TEXT NOT NULL DEFAULT '',
  evidence TEXT NOT NULL DEFAULT '{}',
  run_id INTEGER,
  origin TEXT NOT NULL DEFAULT 'local',
  created_at TEXT NOT NULL,
  UNIQUE(signature, change_id, patch_hash));
CREATE INDEX kb_by_signature ON kb_entries(signature);
CREATE INDEX runs_by_started ON runs(started_at);
CREATE INDEX runs_by_case ON runs(case_id);
)sql";

constexpr std::array<const char*, k_store_schema_version> k_migrations = {k_v1, k_v2};

} // namespace

util::Expected<int> migrate(Db& db) {
  // BEGIN IMMEDIATE: two processes opening a new file at once must not both create tables.
  auto tx = Transaction::begin(db);
  if (!tx) return util::unexpected(tx.error());
  if (auto r = db.exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)"); !r)
    return util::unexpected(r.error());
  auto q = db.prepare("SELECT MAX(version) FROM schema_version");
  if (!q) return util::unexpected(q.error());
  auto row = q->step();
  if (!row) return util::unexpected(row.error());
  int version = *row && !q->is_null(0) ? static_cast<int>(q->int_col(0)) : 0;
  if (version > k_store_schema_version)
    return util::unexpected(util::ErrorKind::config,
                            fmt::format("{}: run store schema version {} is newer than this autodriver understands ({}): "
                                        "upgrade autodriver or pass --store with another file",
                                        db.path().string(), version, k_store_schema_version));
  if (version == k_store_schema_version) return version;
  for (int v = version + 1; v <= k_store_schema_version; ++v)
    if (auto r = db.exec(k_migrations[static_cast<std::size_t>(v - 1)]); !r)
      return util::unexpected(util::ErrorKind::io,
                              fmt::format("migrating the run store to version {}: {}", v, r.error().message));
  if (auto r = db.exec("DELETE FROM schema_version"); !r) return util::unexpected(r.error());
  auto ins = db.prepare("INSERT INTO schema_version(version) VALUES(?)");
  if (!ins) return util::unexpected(ins.error());
  if (auto r = ins->bind(1, std::int64_t{k_store_schema_version}).exec(); !r) return util::unexpected(r.error());
  if (auto r = tx->commit(); !r) return util::unexpected(r.error());
  return k_store_schema_version;
}

} // namespace autodriver::store
