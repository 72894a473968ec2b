#include "autodriver/corpus/mine.hpp"

#include "autodriver/corpus/driver_unit.hpp"
#include "autodriver/corpus/git_repo.hpp"
#include "autodriver/corpus/split.hpp"
#include "autodriver/corpus/tree_diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

namespace autodriver::corpus {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::Expected;
using util::unexpected;

namespace {

struct Range {
  std::string from, to;
};

Expected<Range> parse_range(const std::string& range) {
  if (range.find("...") != std::string::npos)
    return unexpected(ErrorKind::config,
                      fmt::format("--range '{}': symmetric ranges (A...B) are not supported; use A..B", range));
  auto dots = range.find("..");
  if (dots == std::string::npos)
    return unexpected(ErrorKind::config, fmt::format("--range '{}' is not of the form A..B (e.g. v6.1..v6.2)", range));
  Range r{range.substr(0, dots), range.substr(dots + 2)};
  // git's own convention: an empty side means HEAD.
  if (r.from.empty()) r.from = "HEAD";
  if (r.to.empty()) r.to = "HEAD";
  return r;
}

std::string iso_time(const git_time& t) {
  std::time_t local = static_cast<std::time_t>(t.time) + static_cast<std::time_t>(t.offset) * 60;
  std::tm tm{};
  gmtime_r(&local, &tm);
  int off = t.offset < 0 ? -t.offset : t.offset;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, t.offset < 0 ? '-' : '+', off / 60, off % 60);
}

/// Where the commits came from: the "origin" remote's URL, else the repository's path.
std::string repository_name(git_repository* repo) {
  git_remote* remote = nullptr;
  if (git_remote_lookup(&remote, repo, "origin") != 0) {
    const char* path = git_repository_workdir(repo) ? git_repository_workdir(repo) : git_repository_path(repo);
    return path ? path : "";
  }
  std::string url = git_remote_url(remote) ? git_remote_url(remote) : "";
  git_remote_free(remote);
  return url;
}

/// One changed file of a commit and where it belongs.
struct Delta {
  git::FileChange change;
  PathClass cls = PathClass::other;
  bool content_changed = true;

  const std::string& path() const { return change.path; }
  bool has_old() const { return change.status != git::FileChange::Status::added; }
  bool has_new() const { return change.status != git::FileChange::Status::deleted; }
};

class Miner {
public:
  Miner(const MineOptions& opts, git_repository* repo, MineSummary& summary) : m_opts(opts), m_repo(repo), m_summary(summary) {}

  /// Classifies one commit and writes its case. Errors are fatal to the run (output I/O);
  /// unreadable objects are recorded in the summary and the walk goes on.
  Expected<void> process(const git_oid& id);

private:
  Expected<std::vector<Delta>> changed_files(git_tree* parent, git_tree* tree);
  Expected<void> write_case(git_commit* commit, const std::vector<Delta>& deltas, CommitKind kind, const std::string& id);
  Expected<std::string> patch_text(const std::vector<const Delta*>& files);

  const MineOptions& m_opts;
  git_repository* m_repo;
  MineSummary& m_summary;
};

Expected<std::vector<Delta>> Miner::changed_files(git_tree* parent, git_tree* tree) {
  auto changes = git::changed_files(m_repo, parent, tree);
  if (!changes) return unexpected(changes.error());
  std::vector<Delta> out;
  out.reserve(changes->size());
  for (auto& c : *changes) {
    PathClass cls = classify_path(c.path);
    out.push_back({std::move(c), cls, true});
  }
  // Cheap path-only verdict first: most commits of a kernel range never need their blobs read.
  std::vector<ChangedFile> files;
  for (const auto& x : out) files.push_back({x.path(), true});
  CommitKind k = classify_commit(files, m_opts.treewide_threshold);
  if (k != CommitKind::mined && k != CommitKind::treewide) return out;
  for (auto& x : out) {
    if (x.cls == PathClass::other) continue;
    auto ws = git::is_whitespace_only(m_repo, x.change, m_opts.max_file_bytes);
    if (!ws) return unexpected(ws.error());
    x.content_changed = !*ws;
  }
  return out;
}

Expected<std::string> Miner::patch_text(const std::vector<const Delta*>& files) {
  std::string text;
  for (const Delta* d : files) {
    auto p = git::patch_text(m_repo, d->change, m_opts.max_file_bytes);
    if (!p) return unexpected(p.error());
    text += *p;
  }
  return text;
}

struct BlobWrite {
  std::string skipped; ///< why the file was not written; empty when it was
  long lines = 0;
};

/// Writes one blob below `root`, or says why it was not written.
Expected<BlobWrite> write_blob(git_repository* repo, const git_oid& id, std::uint32_t mode, const fs::path& root,
                               const std::string& path, std::uint64_t max_bytes) {
  if (mode == GIT_FILEMODE_LINK) return BlobWrite{"symlink"};
  if (mode == GIT_FILEMODE_COMMIT) return BlobWrite{"submodule"};
  if (!is_safe_relative_path(path)) return BlobWrite{"unsafe path"};
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, repo, &id) != 0) return unexpected(git::last_error(git::k_repo_error, fmt::format("read {}", path)));
  git::Blob blob(raw);
  auto size = static_cast<std::uint64_t>(git_blob_rawsize(blob.get()));
  if (size > max_bytes) return BlobWrite{fmt::format("larger than {} bytes", max_bytes)};
  if (git_blob_is_binary(blob.get())) return BlobWrite{"binary"};
  fs::path dst = root / path;
  std::error_code ec;
  fs::create_directories(dst.parent_path(), ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", dst.parent_path().string(), ec.message()));
  std::string_view text{static_cast<const char*>(git_blob_rawcontent(blob.get())), static_cast<std::size_t>(size)};
  auto w = util::write_file(dst, text);
  if (!w) return unexpected(w.error());
  return BlobWrite{"", static_cast<long>(std::count(text.begin(), text.end(), '\n'))};
}

Expected<void> Miner::write_case(git_commit* commit, const std::vector<Delta>& deltas, CommitKind kind, const std::string& id) {
  std::vector<const Delta*> core, driver;
  for (const auto& d : deltas) {
    if (!d.content_changed) continue;
    if (d.cls == PathClass::core) core.push_back(&d);
    if (d.cls == PathClass::driver) driver.push_back(&d);
  }
  auto tmp = util::TempDir::create(m_opts.out / "cases", ".tmp-" + id + "-");
  if (!tmp) return unexpected(tmp.error());
  const fs::path& dir = tmp->path();
  // mkdtemp makes 0700; a corpus is meant to be shared and read by other users and tools.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);

  nlohmann::json skipped = nlohmann::json::array();
  std::set<std::string> units;
  std::map<std::string, int> subsystems; // subsystem -> driver files
  long c_lines = 0;                      // of before/ .c and .h files, like corpus build's size.c_lines
  nlohmann::json driver_files = nlohmann::json::array();
  for (const Delta* d : driver) {
    units.insert(driver_unit_of(d->path()));
    ++subsystems[subsystem_of(driver_unit_of(d->path()))];
    const git::FileChange& c = d->change;
    if (d->has_old()) {
      auto r = write_blob(m_repo, c.old_id, c.old_mode, dir / "before", c.path, m_opts.max_file_bytes);
      if (!r) return unexpected(r.error());
      if (!r->skipped.empty()) skipped.push_back({{"path", c.path}, {"side", "before"}, {"reason", r->skipped}});
      if (c.path.ends_with(".c") || c.path.ends_with(".h")) c_lines += r->lines;
    }
    if (d->has_new()) {
      auto r = write_blob(m_repo, c.new_id, c.new_mode, dir / "golden", c.path, m_opts.max_file_bytes);
      if (!r) return unexpected(r.error());
      if (!r->skipped.empty()) skipped.push_back({{"path", c.path}, {"side", "golden"}, {"reason", r->skipped}});
    }
    driver_files.push_back(d->path());
  }
  // One subsystem and split per case, as corpus build has: the subsystem with most driver files
  // (ties: the first by name), and the split of the first unit by name (split.hpp's rule).
  std::string subsystem;
  int best = 0;
  for (const auto& [name, n] : subsystems)
    if (n > best) subsystem = name, best = n;
  nlohmann::json subsystem_names = nlohmann::json::array();
  for (const auto& kv : subsystems) subsystem_names.push_back(kv.first);
  const std::string split = units.empty() ? "dev" : split_of(*units.begin());

  nlohmann::json core_files = nlohmann::json::array();
  for (const Delta* d : core) core_files.push_back(d->path());

  auto core_patch = patch_text(core);
  if (!core_patch) return unexpected(core_patch.error());
  auto driver_patch = patch_text(driver);
  if (!driver_patch) return unexpected(driver_patch.error());

  std::string message = git_commit_message(commit) ? git_commit_message(commit) : "";
  Trailers tr = parse_trailers(message);
  const git_signature* author = git_commit_author(commit);
  const git_signature* committer = git_commit_committer(commit);
  nlohmann::json meta = {
      {"schema_version", 1},
      {"id", id},
      {"origin", "mined"},
      {"commit", git::to_hex(*git_commit_id(commit))},
      {"from", {{"commit", git::to_hex(*git_commit_parent_id(commit, 0))}}},
      {"to", {{"commit", git::to_hex(*git_commit_id(commit))}}},
      {"subject", subject_of(message)},
      {"description", subject_of(message)},
      {"message", message},
      {"author", {{"name", author->name ? author->name : ""}, {"email", author->email ? author->email : ""}}},
      {"author_date", iso_time(author->when)},
      {"commit_date", iso_time(committer->when)},
      {"trailers",
       {{"fixes", tr.fixes},
        {"link", tr.link},
        {"closes", tr.closes},
        {"signed_off_by", tr.signed_off_by},
        {"reported_by", tr.reported_by}}},
      {"core_files", core_files},
      {"driver_files", driver_files},
      {"driver_units", units},
      {"treewide", kind == CommitKind::treewide},
      {"skipped_files", skipped},
      {"source", {{"repository", repository_name(m_repo)}, {"range", m_opts.range}}},
      {"subsystem", subsystem},
      {"subsystems", subsystem_names},
      {"split", split},
      {"size", {{"c_lines", c_lines}, {"files", driver.size()}}},
      {"files",
       {{"before", "before/"},
        {"golden", "golden/"},
        {"diagnostics", "diagnostics.json"},
        {"api_delta", "api_delta.patch"},
        {"driver_patch", "driver.patch"},
        {"message", "message.txt"}}},
      {"mine_rules_version", k_mine_rules_version},
      {"created_by", "autodriver 0.1.0"},
  };
  // The shared case layout (docs/case-format.md): the core diff is the case's API delta; a mined
  // case has no diagnostics until someone builds it. metadata.json goes last, like corpus build's.
  const std::string no_diagnostics = "[]\n";
  for (auto [name, text] : {std::pair<const char*, const std::string*>{"api_delta.patch", &*core_patch},
                            {"driver.patch", &*driver_patch},
                            {"message.txt", &message},
                            {"diagnostics.json", &no_diagnostics}}) {
    if (auto w = util::write_file(dir / name, *text); !w) return w;
  }
  if (auto w = util::write_file(dir / "metadata.json", meta.dump(2, ' ', false, util::json_bytes) + "\n"); !w) return w;

  fs::path final_dir = m_opts.out / "cases" / id;
  std::error_code ec;
  fs::rename(dir, final_dir, ec);
  if (ec) {
    // Another run finished the same case first: theirs is complete, keep it.
    if (fs::exists(final_dir / "metadata.json")) return {};
    return unexpected(ErrorKind::io, fmt::format("cannot rename {} to {}: {}", dir.string(), final_dir.string(), ec.message()));
  }
  tmp->keep();
  return {};
}

Expected<void> Miner::process(const git_oid& oid) {
  std::string sha = git::to_hex(oid);
  auto fail = [&](const util::Error& e) {
    m_summary.failed.push_back({sha, "", 0, 0, 0, e.message});
    return Expected<void>();
  };
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, m_repo, &oid) != 0) return fail(git::last_error(ErrorKind::io, "read commit"));
  git::Commit commit(raw);
  unsigned parents = git_commit_parentcount(commit.get());
  auto count = [&](CommitKind k) { ++m_summary.by_kind[std::string(to_string(k))]; };
  if (parents == 0) return count(CommitKind::root), Expected<void>();
  if (parents > 1) return count(CommitKind::merge), Expected<void>();

  std::string id = mined_case_id(sha);
  if (fs::exists(m_opts.out / "cases" / id / "metadata.json")) {
    // Written by an earlier run; it was mined then, so it is mined now (rules are versioned).
    count(CommitKind::mined);
    ++m_summary.cases_present;
    m_summary.case_ids.push_back(id);
    return {};
  }

  git_commit* parent_raw = nullptr;
  git_tree* tree_raw = nullptr;
  git_tree* parent_tree_raw = nullptr;
  if (git_commit_parent(&parent_raw, commit.get(), 0) != 0) return fail(git::last_error(ErrorKind::io, "read parent"));
  git::Commit parent(parent_raw);
  if (git_commit_tree(&tree_raw, commit.get()) != 0) return fail(git::last_error(ErrorKind::io, "read tree"));
  git::Tree tree(tree_raw);
  if (git_commit_tree(&parent_tree_raw, parent.get()) != 0) return fail(git::last_error(ErrorKind::io, "read parent tree"));
  git::Tree parent_tree(parent_tree_raw);

  auto deltas = changed_files(parent_tree.get(), tree.get());
  if (!deltas) return fail(deltas.error());
  std::vector<ChangedFile> files;
  for (const auto& d : *deltas) files.push_back({d.path(), d.content_changed});
  CommitKind kind = classify_commit(files, m_opts.treewide_threshold);
  count(kind);
  if (kind != CommitKind::mined && kind != CommitKind::treewide) return {};

  if (kind == CommitKind::treewide) {
    CommitNote note{sha, subject_of(git_commit_message(commit.get()) ? git_commit_message(commit.get()) : ""), 0, 0, 0, ""};
    std::set<std::string> units;
    for (const auto& d : *deltas) {
      if (!d.content_changed) continue;
      note.core_files += d.cls == PathClass::core;
      if (d.cls == PathClass::driver) ++note.driver_files, units.insert(driver_unit_of(d.path()));
    }
    note.driver_units = units.size();
    note.reason = fmt::format("{} driver files > --treewide-threshold {}", note.driver_files, m_opts.treewide_threshold);
    m_summary.treewide.push_back(std::move(note));
    if (m_opts.include_treewide == IncludeTreewide::no) return {};
  }
  auto w = write_case(commit.get(), *deltas, kind, id);
  if (!w) {
    // Unreadable objects are the repository's problem, not the run's; output I/O errors are fatal.
    if (w.error().kind == git::k_repo_error) return fail(w.error());
    return w;
  }
  ++m_summary.cases_written;
  m_summary.case_ids.push_back(id);
  util::log_debug("mined {} {}", id, subject_of(git_commit_message(commit.get())));
  return {};
}

/// Creates <out>/cases and <out>/corpus.json ({schema_version, origin: "mined"}), or checks that an
/// existing corpus directory is a mined one (a `corpus build` corpus is refused, not mixed into).
Expected<void> init_mined_corpus(const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out / "cases", ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create output directory {}: {}", out.string(), ec.message()));
  const fs::path file = out / "corpus.json";
  if (!fs::exists(file))
    return util::write_file_atomic(
        file, nlohmann::json{{"schema_version", 1}, {"origin", "mined"}}.dump(2, ' ', false, util::json_bytes) + "\n");
  auto text = util::read_file(file);
  if (!text) return unexpected(text.error());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return unexpected(ErrorKind::parse, fmt::format("{} is not valid JSON", file.string()));
  if (j.value("schema_version", 0) > 1)
    return unexpected(ErrorKind::config, fmt::format("{} was written by a newer autodriver: upgrade autodriver", file.string()));
  if (j.value("origin", "") != "mined")
    return unexpected(ErrorKind::config,
                      fmt::format("{} holds a corpus with origin {}, not mined cases: use another -o directory", out.string(),
                                  j.value("origin", nlohmann::json()).dump(-1, ' ', false, util::json_bytes)));
  return {};
}

} // namespace

std::string mined_case_id(const std::string& commit_sha) { return "git-" + commit_sha.substr(0, 12); }

nlohmann::json MineSummary::to_json() const {
  auto notes = [](const std::vector<CommitNote>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& n : v)
      a.push_back({{"commit", n.commit},
                   {"subject", n.subject},
                   {"core_files", n.core_files},
                   {"driver_files", n.driver_files},
                   {"driver_units", n.driver_units},
                   {"reason", n.reason}});
    return a;
  };
  return {{"schema_version", 1},
          {"repository", repo},
          {"range", range},
          {"from", from_commit},
          {"to", to_commit},
          {"commits_in_range", commits_in_range},
          {"commits_walked", commits_walked},
          {"by_kind", by_kind},
          {"cases_written", cases_written},
          {"cases_present", cases_present},
          {"case_ids", case_ids},
          {"treewide", notes(treewide)},
          {"failed", notes(failed)},
          {"stopped_by_limit", stopped_by_limit},
          {"mine_rules_version", k_mine_rules_version},
          {"seconds", seconds}};
}

Expected<MineSummary> mine(const MineOptions& opts, const MineProgressFn& progress) {
  auto start = std::chrono::steady_clock::now();
  auto range = parse_range(opts.range);
  if (!range) return unexpected(range.error());
  auto repo = git::open_repository(opts.repo);
  if (!repo) return unexpected(repo.error());
  auto from = git::resolve_commit(repo->get(), range->from);
  if (!from)
    return unexpected(ErrorKind::not_found,
                      fmt::format("--range '{}': {} in {}", opts.range, from.error().message, opts.repo.string()));
  auto to = git::resolve_commit(repo->get(), range->to);
  if (!to)
    return unexpected(ErrorKind::not_found,
                      fmt::format("--range '{}': {} in {}", opts.range, to.error().message, opts.repo.string()));

  if (auto r = init_mined_corpus(opts.out); !r) return unexpected(r.error());

  MineSummary summary;
  summary.repo = fs::absolute(opts.repo).lexically_normal().string();
  summary.range = opts.range;
  summary.from_commit = git::to_hex(*git_commit_id(from->get()));
  summary.to_commit = git::to_hex(*git_commit_id(to->get()));

  // Only the range is walked (B minus everything reachable from A); oldest first so a limited run
  // mines a contiguous stretch of history. 20 bytes per commit: a million commits fit in memory.
  git_revwalk* walk_raw = nullptr;
  if (git_revwalk_new(&walk_raw, repo->get()) != 0) return unexpected(git::last_error(ErrorKind::io, "revwalk"));
  git::Revwalk walk(walk_raw);
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);
  if (git_revwalk_push(walk.get(), git_commit_id(to->get())) != 0 ||
      git_revwalk_hide(walk.get(), git_commit_id(from->get())) != 0)
    return unexpected(git::last_error(ErrorKind::io, fmt::format("walk {}", opts.range)));
  std::vector<git_oid> ids;
  git_oid oid;
  while (git_revwalk_next(&oid, walk.get()) == 0) {
    ids.push_back(oid);
    if (util::interrupted()) return unexpected(ErrorKind::interrupted, "interrupted while listing the range");
  }
  summary.commits_in_range = ids.size();

  Miner miner(opts, repo->get(), summary);
  auto last_report = std::chrono::steady_clock::now();
  auto report = [&](bool force) {
    auto now = std::chrono::steady_clock::now();
    if (!progress || (!force && now - last_report < std::chrono::seconds(2))) return;
    last_report = now;
    progress({summary.commits_walked, ids.size(), summary.cases_written + summary.cases_present});
  };
  for (const auto& id : ids) {
    if (util::interrupted())
      return unexpected(ErrorKind::interrupted, fmt::format("interrupted after {} of {} commits; run again to continue",
                                                            summary.commits_walked, ids.size()));
    if (opts.limit && summary.cases_written >= opts.limit) {
      summary.stopped_by_limit = true;
      break;
    }
    if (auto r = miner.process(id); !r) return unexpected(r.error());
    ++summary.commits_walked;
    report(false);
  }
  report(true);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (auto w =
          util::write_file_atomic(opts.out / "mine-summary.json", summary.to_json().dump(2, ' ', false, util::json_bytes) + "\n");
      !w)
    return unexpected(w.error());
  return summary;
}

} // namespace autodriver::corpus
