#include "autodriver/store/run_store.hpp"

#include "autodriver/core/diagnostic.hpp"
#include "autodriver/store/sha256.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <set>
#include <unistd.h>

namespace autodriver::store {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

/// Start time of a process (field 22 of /proc/PID/stat, in clock ticks since boot), 0 when it
/// does not exist. pid + start time names a process even after its pid is reused.
std::int64_t process_start(std::int64_t pid) {
  auto text = util::read_file(fmt::format("/proc/{}/stat", pid));
  if (!text) return 0;
  // comm (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  auto close = text->rfind(')');
  if (close == std::string::npos) return 0;
  std::size_t pos = close + 2;
  for (int field = 3; field < 22; ++field) {
    pos = text->find(' ', pos);
    if (pos == std::string::npos) return 0;
    ++pos;
  }
  return std::strtoll(text->c_str() + pos, nullptr, 10);
}

nlohmann::json parse_json(const std::string& text) {
  if (text.empty()) return nullptr;
  return nlohmann::json::parse(text, nullptr, false);
}

/// A step's diagnostics as this version writes them, whatever an older version or another tool
/// left in the column: each entry read back through core::diagnostic_from_json (wrong types become
/// defaults), anything that is not an array none. Readers (runs show, explain) index them freely.
nlohmann::json read_diagnostics(const std::string& text) {
  auto j = parse_json(text);
  nlohmann::json out = nlohmann::json::array();
  if (j.is_array())
    for (const auto& d : j) out.push_back(core::to_json(core::diagnostic_from_json(d)));
  return out;
}

std::optional<std::int64_t> opt_int(const Stmt& s, int i) {
  if (s.is_null(i)) return std::nullopt;
  return s.int_col(i);
}

constexpr const char* k_run_columns =
    "r.id, r.parent_run, r.command, r.args, r.tree, r.case_id, r.status, r.started_at, r.ended_at, r.host, r.pid, "
    "r.pid_start, r.summary, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id)";

struct RawRun {
  RunRow row;
  std::int64_t pid_start = 0;
};

RawRun read_run(const Stmt& s) {
  RawRun r;
  r.row.id = s.int_col(0);
  r.row.parent_run = opt_int(s, 1);
  r.row.command = s.text_col(2);
  r.row.args = parse_json(s.text_col(3));
  r.row.tree = s.text_col(4);
  r.row.case_id = s.text_col(5);
  r.row.status = s.text_col(6);
  r.row.started_at = s.text_col(7);
  r.row.ended_at = s.text_col(8);
  r.row.host = s.text_col(9);
  r.row.pid = s.int_col(10);
  r.pid_start = s.int_col(11);
  r.row.summary = parse_json(s.text_col(12));
  r.row.steps = s.int_col(13);
  return r;
}

} // namespace

std::string_view to_string(RunStatus s) {
  switch (s) {
  case RunStatus::running: return "running";
  case RunStatus::ok: return "ok";
  case RunStatus::failed: return "failed";
  case RunStatus::interrupted: return "interrupted";
  case RunStatus::error: return "error";
  }
  return "error";
}

fs::path default_store_path() {
  if (const char* e = std::getenv("AUTODRIVER_STORE"); e && *e) return e;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "autodriver/runs.sqlite";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".local/share/autodriver/runs.sqlite";
}

std::string now_iso() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, ms);
}

util::Expected<RunStore> RunStore::open(const fs::path& path) {
  auto db = Db::open(path);
  if (!db) return unexpected(db.error());
  auto holder = std::make_unique<Db>(std::move(*db));
  auto v = migrate(*holder);
  if (!v) return unexpected(v.error());
  return RunStore(std::move(holder), *v);
}

util::Expected<std::int64_t> RunStore::begin_run(const RunInfo& info) {
  auto st = m_db->prepare("INSERT INTO runs(parent_run, command, args, tree, case_id, status, started_at, host, pid, pid_start) "
                          "VALUES(?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)");
  if (!st) return unexpected(st.error());
  std::int64_t pid = getpid();
  st->bind_opt(1, info.parent_run)
      .bind(2, info.command)
      .bind(3, info.args.dump(-1, ' ', false, util::json_bytes))
      .bind(4, info.tree)
      .bind(5, info.case_id);
  st->bind(6, now_iso()).bind(7, host_name()).bind(8, pid).bind(9, process_start(pid));
  if (auto r = st->exec(); !r) return unexpected(r.error());
  return m_db->last_insert_id();
}

util::Expected<std::int64_t> RunStore::add_step(const StepRow& s) {
  // seq in the same statement as the insert: atomic without a transaction of our own.
  auto st = m_db->prepare(
      "INSERT INTO steps(run_id, seq, kind, component, input, output, diagnostics, started_at, elapsed_ms, tokens_in, "
      "tokens_out, argv) SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 FROM steps WHERE run_id "
      "= ?1 "
      "RETURNING seq");
  if (!st) return unexpected(st.error());
  st->bind(1, s.run_id)
      .bind(2, s.kind)
      .bind(3, s.component)
      .bind(4, s.input.dump(-1, ' ', false, util::json_bytes))
      .bind(5, s.output.dump(-1, ' ', false, util::json_bytes));
  st->bind(6, s.diagnostics.dump(-1, ' ', false, util::json_bytes))
      .bind(7, s.started_at.empty() ? now_iso() : s.started_at)
      .bind(8, s.elapsed_ms);
  st->bind(9, s.tokens_in).bind(10, s.tokens_out);
  if (s.argv.is_null()) st->bind_null(11);
  else st->bind(11, s.argv.dump(-1, ' ', false, util::json_bytes));
  auto row = st->step();
  if (!row) return unexpected(row.error());
  std::int64_t seq = *row ? st->int_col(0) : 0;
  if (auto r = st->exec(); !r) return unexpected(r.error());
  return seq;
}

util::Expected<std::int64_t> RunStore::add_loop_step(std::int64_t run_id, const nlohmann::json& data) {
  StepRow s;
  s.run_id = run_id;
  s.kind = data.value("step", "");
  if (data.contains("proposer") && data["proposer"].is_string()) s.component = data["proposer"].get<std::string>();
  else if (s.kind.starts_with("build")) s.component = "kbuild";
  else if (s.kind == "integrity") s.component = "integrity";
  else if (s.kind == "agent") s.component = "llm";
  else if (s.kind == "gates") s.component = "qemu-boot";
  else s.component = "loop";
  s.input = nlohmann::json::object();
  s.output = nlohmann::json::object();
  s.diagnostics = nlohmann::json::array();
  static const std::set<std::string> k_outputs = {"ok",      "edits",     "errors_after", "violations",   "title",
                                                  "t_ms",    "timed_out", "compiled",     "objects_only", "build_ms",
                                                  "copy_ms", "apply_ms",  "failure"};
  for (const auto& [k, v] : data.items()) {
    if (k == "step" || k == "ms" || k == "argv" || k == "tokens_in" || k == "tokens_out") continue;
    if (k == "errors") s.diagnostics = v;
    else if (k_outputs.count(k)) s.output[k] = v;
    else s.input[k] = v;
  }
  // A step's own duration when the loop measured it; otherwise the time since the previous
  // step, which for builds and trials is the build itself.
  std::int64_t t = data.value("t_ms", std::int64_t{0});
  std::int64_t prev = m_last_t_ms.count(run_id) ? m_last_t_ms[run_id] : 0;
  s.elapsed_ms = data.contains("ms") ? data.value("ms", std::int64_t{0}) : std::max<std::int64_t>(0, t - prev);
  m_last_t_ms[run_id] = t;
  auto start = std::chrono::system_clock::now() - std::chrono::milliseconds(s.elapsed_ms);
  {
    auto secs = std::chrono::system_clock::to_time_t(start);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    s.started_at = fmt::format("{}.{:03d}Z", buf,
                               std::chrono::duration_cast<std::chrono::milliseconds>(start.time_since_epoch()).count() % 1000);
  }
  s.tokens_in = data.value("tokens_in", std::int64_t{0});
  s.tokens_out = data.value("tokens_out", std::int64_t{0});
  if (data.contains("argv")) s.argv = data["argv"];
  return add_step(s);
}

util::Expected<void> RunStore::end_run(std::int64_t run_id, RunStatus status, const nlohmann::json& summary) {
  auto st = m_db->prepare("UPDATE runs SET status = ?, ended_at = ?, summary = ? WHERE id = ?");
  if (!st) return unexpected(st.error());
  st->bind(1, to_string(status)).bind(2, now_iso()).bind(3, summary.dump(-1, ' ', false, util::json_bytes)).bind(4, run_id);
  return st->exec();
}

util::Expected<std::string> RunStore::put_blob(std::string_view content) {
  std::string hash = sha256_hex(content);
  auto st = m_db->prepare("INSERT OR IGNORE INTO blobs(hash, size, content) VALUES(?, ?, ?)");
  if (!st) return unexpected(st.error());
  st->bind(1, hash).bind(2, static_cast<std::int64_t>(content.size())).bind_blob(3, content);
  if (auto r = st->exec(); !r) return unexpected(r.error());
  return hash;
}

util::Expected<std::optional<std::string>> RunStore::blob(const std::string& hash) {
  auto st = m_db->prepare("SELECT content FROM blobs WHERE hash = ?");
  if (!st) return unexpected(st.error());
  st->bind(1, hash);
  auto row = st->step();
  if (!row) return unexpected(row.error());
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(st->text_col(0));
}

util::Expected<void> RunStore::add_artifact(std::int64_t run_id, const std::string& name, const std::string& kind,
                                            std::string_view content) {
  // Blob and artifact row together: an artifact never names a missing blob.
  auto tx = Transaction::begin(*m_db);
  if (!tx) return unexpected(tx.error());
  auto hash = put_blob(content);
  if (!hash) return unexpected(hash.error());
  auto st = m_db->prepare("INSERT OR REPLACE INTO artifacts(run_id, name, kind, hash) VALUES(?, ?, ?, ?)");
  if (!st) return unexpected(st.error());
  st->bind(1, run_id).bind(2, name).bind(3, kind).bind(4, *hash);
  if (auto r = st->exec(); !r) return unexpected(r.error());
  return tx->commit();
}

util::Expected<std::vector<Artifact>> RunStore::artifacts(std::int64_t run_id) {
  auto st = m_db->prepare("SELECT a.name, a.kind, a.hash, b.size FROM artifacts a JOIN blobs b ON b.hash = a.hash "
                          "WHERE a.run_id = ? ORDER BY a.name");
  if (!st) return unexpected(st.error());
  st->bind(1, run_id);
  std::vector<Artifact> out;
  while (true) {
    auto row = st->step();
    if (!row) return unexpected(row.error());
    if (!*row) break;
    out.push_back({st->text_col(0), st->text_col(1), st->text_col(2), st->int_col(3)});
  }
  return out;
}

util::Expected<void> RunStore::settle_dead(RunRow& row) {
  if (row.status != "running" || row.host != host_name()) return {};
  auto raw = m_db->prepare("SELECT pid_start FROM runs WHERE id = ?");
  if (!raw) return unexpected(raw.error());
  raw->bind(1, row.id);
  auto r = raw->step();
  if (!r) return unexpected(r.error());
  std::int64_t started = *r ? raw->int_col(0) : 0;
  std::int64_t now_start = process_start(row.pid);
  if (now_start != 0 && now_start == started) return {}; // still running
  // The process is gone without finishing the run (kill -9, power loss, OOM): record it.
  row.status = "interrupted";
  row.summary = {{"outcome", "interrupted"}, {"detected", "the recording process is gone"}};
  auto st = m_db->prepare("UPDATE runs SET status = 'interrupted', summary = ?, ended_at = "
                          "COALESCE((SELECT MAX(started_at) FROM steps WHERE run_id = ?), started_at) "
                          "WHERE id = ? AND status = 'running'");
  if (!st) return unexpected(st.error());
  st->bind(1, row.summary.dump(-1, ' ', false, util::json_bytes)).bind(2, row.id).bind(3, row.id);
  // A reader without write access still sees `interrupted`; the row is fixed by the next writer.
  (void)st->exec();
  return {};
}

util::Expected<std::vector<RunRow>> RunStore::list_runs(const RunFilter& f) {
  std::string sql = fmt::format("SELECT {} FROM runs r WHERE 1", k_run_columns);
  if (f.case_id) sql += " AND r.case_id = :case";
  if (f.since) sql += " AND r.started_at >= :since";
  if (f.until) sql += " AND r.started_at < :until";
  sql += " ORDER BY r.id DESC";
  auto st = m_db->prepare(sql);
  if (!st) return unexpected(st.error());
  int i = 1;
  if (f.case_id) st->bind(i++, *f.case_id);
  if (f.since) st->bind(i++, *f.since);
  if (f.until) st->bind(i++, *f.until);
  std::vector<RunRow> rows;
  while (true) {
    auto row = st->step();
    if (!row) return unexpected(row.error());
    if (!*row) break;
    rows.push_back(read_run(*st).row);
  }
  std::vector<RunRow> out;
  for (auto& r : rows) {
    if (auto s = settle_dead(r); !s) return unexpected(s.error());
    if (f.status && r.status != *f.status) continue;
    out.push_back(std::move(r));
    if (f.limit > 0 && static_cast<int>(out.size()) >= f.limit) break;
  }
  return out;
}

util::Expected<std::optional<RunRow>> RunStore::run(std::int64_t id) {
  auto st = m_db->prepare(fmt::format("SELECT {} FROM runs r WHERE r.id = ?", k_run_columns));
  if (!st) return unexpected(st.error());
  st->bind(1, id);
  auto row = st->step();
  if (!row) return unexpected(row.error());
  if (!*row) return std::optional<RunRow>();
  auto r = read_run(*st).row;
  if (auto s = settle_dead(r); !s) return unexpected(s.error());
  return std::optional<RunRow>(std::move(r));
}

util::Expected<std::optional<std::int64_t>> RunStore::last_run_id() {
  auto st = m_db->prepare("SELECT MAX(id) FROM runs");
  if (!st) return unexpected(st.error());
  auto row = st->step();
  if (!row) return unexpected(row.error());
  if (!*row || st->is_null(0)) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(st->int_col(0));
}

util::Expected<std::vector<StepRow>> RunStore::steps(std::int64_t run_id) {
  auto st = m_db->prepare("SELECT run_id, seq, kind, component, input, output, diagnostics, started_at, elapsed_ms, "
                          "tokens_in, tokens_out, argv FROM steps WHERE run_id = ? ORDER BY seq");
  if (!st) return unexpected(st.error());
  st->bind(1, run_id);
  std::vector<StepRow> out;
  while (true) {
    auto row = st->step();
    if (!row) return unexpected(row.error());
    if (!*row) break;
    StepRow s;
    s.run_id = st->int_col(0);
    s.seq = st->int_col(1);
    s.kind = st->text_col(2);
    s.component = st->text_col(3);
    s.input = parse_json(st->text_col(4));
    s.output = parse_json(st->text_col(5));
    s.diagnostics = read_diagnostics(st->text_col(6));
    s.started_at = st->text_col(7);
    s.elapsed_ms = st->int_col(8);
    s.tokens_in = st->int_col(9);
    s.tokens_out = st->int_col(10);
    s.argv = st->is_null(11) ? nlohmann::json(nullptr) : parse_json(st->text_col(11));
    out.push_back(std::move(s));
  }
  return out;
}

util::Expected<std::string> RunStore::integrity_check() {
  auto st = m_db->prepare("PRAGMA integrity_check");
  if (!st) return unexpected(st.error());
  std::string out;
  while (true) {
    auto row = st->step();
    if (!row) return unexpected(row.error());
    if (!*row) break;
    if (!out.empty()) out += "\n";
    out += st->text_col(0);
  }
  return out;
}

nlohmann::json to_json(const RunRow& r) {
  return {{"id", r.id},
          {"parent_run", r.parent_run ? nlohmann::json(*r.parent_run) : nlohmann::json(nullptr)},
          {"command", r.command},
          {"args", r.args},
          {"tree", r.tree},
          {"case_id", r.case_id},
          {"status", r.status},
          {"started_at", r.started_at},
          {"ended_at", r.ended_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.ended_at)},
          {"host", r.host},
          {"pid", r.pid},
          {"summary", r.summary},
          {"steps", r.steps}};
}

nlohmann::json to_json(const StepRow& s) {
  return {{"seq", s.seq},
          {"kind", s.kind},
          {"component", s.component},
          {"input", s.input},
          {"output", s.output},
          {"diagnostics", s.diagnostics},
          {"started_at", s.started_at},
          {"elapsed_ms", s.elapsed_ms},
          {"tokens_in", s.tokens_in},
          {"tokens_out", s.tokens_out},
          {"argv", s.argv}};
}

} // namespace autodriver::store
