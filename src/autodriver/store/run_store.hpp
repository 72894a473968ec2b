#pragma once
// The run store: every `port` (and every bench case) as a run with its steps, written while
// the run happens, in one SQLite file shared by processes and threads (docs/run-store.md).

#include "autodriver/store/sqlite.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::store {

/// Schema version written by this build; older files are migrated, newer ones refused.
inline constexpr int k_store_schema_version = 2;

/// Run states as stored (text). `interrupted` also covers a process that died while `running`.
enum class RunStatus { running, ok, failed, interrupted, error };
std::string_view to_string(RunStatus s);

/// $AUTODRIVER_STORE, else $XDG_DATA_HOME/autodriver/runs.sqlite, else ~/.local/share/autodriver/runs.sqlite.
std::filesystem::path default_store_path();

struct RunInfo {
  std::string command;                            ///< "port", "bench", "rerun"
  nlohmann::json args = nlohmann::json::object(); ///< effective options
  std::string tree;
  std::string case_id;
  std::optional<std::int64_t> parent_run;
};

struct RunRow {
  std::int64_t id = 0;
  std::optional<std::int64_t> parent_run;
  std::string command;
  nlohmann::json args;
  std::string tree;
  std::string case_id;
  std::string status;     ///< effective: a `running` row whose process is gone reads `interrupted`
  std::string started_at; ///< UTC, ISO 8601
  std::string ended_at;
  std::string host;
  std::int64_t pid = 0;
  nlohmann::json summary; ///< outcome, error counts, error message (null while running)
  std::int64_t steps = 0;
};

struct StepRow {
  std::int64_t run_id = 0;
  std::int64_t seq = 0;  ///< 1-based, in the order the steps happened
  std::string kind;      ///< build-from, build-target, propose, try, accept, reject, integrity, gates
  std::string component; ///< proposer or gate id ("kbuild", "integrity", "qemu-boot", "loop")
  nlohmann::json input;
  nlohmann::json output;
  nlohmann::json diagnostics; ///< an array, each entry core::to_json of a Diagnostic (read back tolerantly)
  std::string started_at;
  std::int64_t elapsed_ms = 0;
  std::int64_t tokens_in = 0;
  std::int64_t tokens_out = 0;
  nlohmann::json argv; ///< the command line when the step ran one, else null
};

struct Artifact {
  std::string name; ///< "patches/0001-....patch", "verdict.json", "accepted/1.json"
  std::string kind; ///< patch, verdict, accepted, log
  std::string hash; ///< sha256 of the content (blobs table)
  std::int64_t size = 0;
};

struct RunFilter {
  std::optional<std::string> status; ///< effective status
  std::optional<std::string> case_id;
  std::optional<std::string> since; ///< started_at >= (ISO date or time prefix)
  std::optional<std::string> until; ///< started_at <
  int limit = 0;                    ///< 0 = all, newest first
};

/// One connection to the store. Use one RunStore per thread; any number of processes may
/// write the same file at once (WAL, busy timeout, retries).
class RunStore {
public:
  /// Opens or creates the store, migrating older schemas; a newer schema is a config error.
  static util::Expected<RunStore> open(const std::filesystem::path& path);

  util::Expected<std::int64_t> begin_run(const RunInfo& info);
  /// Appends a step (seq assigned here) in its own transaction, so a crash keeps it.
  util::Expected<std::int64_t> add_step(const StepRow& step);
  /// Appends a step reported by the port loop ({"step": kind, "t_ms": ..., ...}).
  util::Expected<std::int64_t> add_loop_step(std::int64_t run_id, const nlohmann::json& data);
  util::Expected<void> end_run(std::int64_t run_id, RunStatus status, const nlohmann::json& summary);

  /// Stores content once under its sha256; returns the hash.
  util::Expected<std::string> put_blob(std::string_view content);
  util::Expected<std::optional<std::string>> blob(const std::string& hash);
  util::Expected<void> add_artifact(std::int64_t run_id, const std::string& name, const std::string& kind,
                                    std::string_view content);
  util::Expected<std::vector<Artifact>> artifacts(std::int64_t run_id);

  util::Expected<std::vector<RunRow>> list_runs(const RunFilter& filter);
  util::Expected<std::optional<RunRow>> run(std::int64_t id);
  /// The newest run's id, if any.
  util::Expected<std::optional<std::int64_t>> last_run_id();
  util::Expected<std::vector<StepRow>> steps(std::int64_t run_id);

  /// "ok" or SQLite's integrity_check complaints.
  util::Expected<std::string> integrity_check();
  int schema_version() const { return m_version; }
  Db& db() { return *m_db; }
  const std::filesystem::path& path() const { return m_db->path(); }

private:
  explicit RunStore(std::unique_ptr<Db> db, int version) : m_db(std::move(db)), m_version(version) {}
  util::Expected<void> settle_dead(RunRow& row);
  std::unique_ptr<Db> m_db;
  int m_version = 0;
  std::map<std::int64_t, std::int64_t> m_last_t_ms; ///< per run: t_ms of the previous loop step
};

/// Applies the migrations from the file's version up to k_store_schema_version (exposed for tests).
util::Expected<int> migrate(Db& db);

/// Current UTC time, ISO 8601 with milliseconds ("2025-01-31T12:00:00.123Z").
std::string now_iso();

nlohmann::json to_json(const RunRow& r);
nlohmann::json to_json(const StepRow& s);

} // namespace autodriver::store
