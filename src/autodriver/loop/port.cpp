#include "autodriver/loop/port.hpp"

#include "autodriver/apidiff/apidiff.hpp"

#include "autodriver/gate/build_root.hpp"
#include "autodriver/gate/check.hpp"
#include "autodriver/gate/integrity.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/loop/api_changes.hpp"
#include "autodriver/loop/trial_objects.hpp"
#include "autodriver/loop/compat.hpp"
#include "autodriver/loop/patch_series.hpp"
#include "autodriver/propose/apply.hpp"
#include "autodriver/propose/c_tokens.hpp"
#include "autodriver/propose/kb_extract.hpp"
#include "autodriver/propose/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <future>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace autodriver::loop {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;
using Clock = std::chrono::steady_clock;

namespace {

struct BuildState {
  bool ok = false;
  bool timed_out = false;
  bool by_budget = false;                 ///< the time left in the budget, not --build-timeout, cut it
  std::chrono::seconds limit{0};          ///< the timeout it ran under
  int compiled = 0;                       ///< C files compiled (an incremental trial: only what changed)
  long ms = 0;
  /// Judged by compiling the changed files alone (kbuild single objects), the other files'
  /// diagnostics carried over from the build it started from; never `ok` (a full build says that).
  bool objects_only = false;
  /// Objects-only, and a changed header was judged by a sample of the files including it: the
  /// other files' diagnostics may be stale until a full build.
  bool sampled = false;
  bool exited_ok = false;                 ///< make exited 0
  std::vector<core::Diagnostic> errors;   ///< error/fatal diagnostics
  std::vector<core::Diagnostic> all;
  std::set<std::string> signatures;
  int type_warnings = 0;                  ///< int-conversion / incompatible-pointer warnings
  int fatal = 0;                          ///< fatal errors (a missing header stops the file's compilation)
  std::vector<std::string> modules;       ///< names of the .ko files built ("vmxnet3")
  /// Errors, plus type-safety warnings: an edit that compiles only by converting a pointer to
  /// an integer (a wrong rename) must not look like progress. A fatal error hides every error
  /// after it, so removing one is progress even when the compiler then finds more.
  /// What reports show: distinct error messages (0 when the build passes).
  int error_count() const { return ok ? 0 : std::max<int>(1, static_cast<int>(signatures.size())); }
  int score() const {
    return (ok ? 0 : std::max<int>(1, static_cast<int>(signatures.size()))) + type_warnings + 1000 * fatal;
  }
};

std::string error_signature(const core::Diagnostic& d) {
  // Lines move when code is edited; file + message identifies an error well enough.
  return d.file + "|" + d.message;
}

/// Counts one of a build's diagnostics into `s` (its errors and type-safety warnings).
void count_diagnostic(BuildState& s, const core::Diagnostic& d) {
  if (d.severity == core::Severity::error || d.severity == core::Severity::fatal) {
    if (d.severity == core::Severity::fatal) ++s.fatal;
    s.errors.push_back(d);
    s.signatures.insert(error_signature(d));
  } else if (d.severity == core::Severity::warning &&
             (d.kind == core::DiagKind::int_conversion || d.kind == core::DiagKind::incompatible_pointer_type ||
              d.kind == core::DiagKind::incompatible_type)) {
    ++s.type_warnings;
  }
}

/// How long a build may take and with how many jobs; the loop sets it from the budget left and
/// the first build's measured time.
struct BuildLimit {
  std::chrono::seconds timeout{300};
  bool by_budget = false;
  int jobs = 1;
};

/// Builds `tree` as it is: a tree holding an earlier build's products (a copy of a built tree)
/// recompiles only what changed since (kbuild's own dependency tracking).
util::Expected<BuildState> build(const core::Kernel& k, const fs::path& tree, const PortRequest& req,
                                 const BuildLimit& limit, const std::vector<std::string>& objects = {}) {
  gate::BuildSpec spec;
  spec.build_cmd = req.build_cmd;
  spec.timeout = limit.timeout;
  spec.jobs = limit.jobs;
  spec.objects = objects;
  spec.subdir = req.subdir;
  auto t0 = Clock::now();
  auto r = gate::build_tree(k, tree, spec);
  // A build killed by Ctrl-C or SIGTERM says nothing about the driver or the edit.
  if (util::interrupted() || (r && r->run.interrupted)) return unexpected(ErrorKind::interrupted, "interrupted during a build");
  if (!r) return unexpected(r.error());
  BuildState s;
  s.ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  s.compiled = r->compiled;
  s.limit = limit.timeout;
  s.exited_ok = r->run.ok();
  s.ok = s.exited_ok && !r->modules.empty() && objects.empty();
  s.timed_out = r->run.timed_out;
  s.by_budget = s.timed_out && limit.by_budget;
  s.all = r->diagnostics;
  for (const auto& m : r->modules) s.modules.push_back(m.stem().string());
  for (const auto& d : r->diagnostics) count_diagnostic(s, d);
  if (!s.ok && s.signatures.empty())
    s.signatures.insert(s.timed_out ? fmt::format("build did not finish within {} s", limit.timeout.count())
                                    : "build failed: " + r->run.status_text());
  return s;
}

/// Score of a trial against the current state: its errors, plus one for every new error that sits
/// on a line where an error disappeared (the edit only turned one error into another there).
int trial_score(const BuildState& cur, const BuildState& trial) {
  if (trial.ok) return trial.type_warnings;
  // A build cut short says nothing about the edit: never progress.
  if (trial.timed_out) return std::numeric_limits<int>::max() / 2;
  std::set<std::string> removed_lines;
  for (const auto& d : cur.errors)
    if (!trial.signatures.count(error_signature(d))) removed_lines.insert(d.file + ":" + std::to_string(d.line));
  int penalty = 0;
  std::set<std::string> counted;
  for (const auto& d : trial.errors) {
    std::string sig = error_signature(d);
    if (cur.signatures.count(sig) || !counted.insert(sig).second) continue;
    if (removed_lines.count(d.file + ":" + std::to_string(d.line))) ++penalty;
  }
  // A fatal error (a missing header) that moved further down its file is progress: the file
  // now compiles past the old one (the next vanished header of a series of moves).
  if (trial.fatal > 0 && trial.fatal == cur.fatal) {
    bool further = true;
    for (const auto& d : trial.errors) {
      if (d.severity != core::Severity::fatal) continue;
      bool later = false;
      for (const auto& c : cur.errors)
        if (c.severity == core::Severity::fatal && c.file == d.file && c.line < d.line &&
            !trial.signatures.count(error_signature(c)))
          later = true;
      further = further && later;
    }
    if (further) --penalty;
  }
  // Past the compiler: objtool, modpost and the linker only run once every object compiled, so
  // a build whose errors are all theirs went further than one that still fails to compile.
  auto compiling = [](const BuildState& s) {
    return std::any_of(s.errors.begin(), s.errors.end(), [](const core::Diagnostic& d) { return d.tool == "gcc"; });
  };
  if (compiling(cur) && !trial.errors.empty() && !compiling(trial))
    return std::min(trial.score() + penalty, cur.score() - 1);
  return trial.score() + penalty;
}

/// "file:line: message" of each diagnostic once, with the diagnostic (a header's error is
/// reported by every file including it).
std::vector<std::pair<std::string, const core::Diagnostic*>> distinct(const std::vector<core::Diagnostic>& ds) {
  std::vector<std::pair<std::string, const core::Diagnostic*>> out;
  std::set<std::string> seen;
  for (const auto& d : ds) {
    std::string s = d.file + ":" + std::to_string(d.line) + ": " + d.message;
    if (seen.insert(s).second) out.emplace_back(std::move(s), &d);
  }
  return out;
}

std::vector<std::string> distinct_errors(const std::vector<core::Diagnostic>& ds) {
  std::vector<std::string> out;
  for (auto& [s, d] : distinct(ds)) out.push_back(std::move(s));
  return out;
}

nlohmann::json diag_list(const std::vector<core::Diagnostic>& ds) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [s, d] : distinct(ds))
    a.push_back({{"file", d->file}, {"line", d->line}, {"kind", core::to_string(d->kind)}, {"message", d->message}});
  return a;
}

struct Trial {
  std::optional<util::TempDir> dir; ///< holds `tree`, built: kept on the work tree when accepted
  fs::path tree;
  BuildState state;
  long copy_ms = 0;   ///< copying the built work tree
  long apply_ms = 0;  ///< applying the edits (spatch, line edits)
  std::vector<std::pair<std::string, std::string>> snapshot;
  bool applied = false;
  /// Per edit (in order): "file|function" it changed ("file|" for code outside functions).
  std::vector<std::set<std::string>> touched;
};

/// Copy `work` with its build (objects, .cmd files, timestamps), apply the edits in order, build:
/// kbuild recompiles only the files the edits changed and what depends on them. Returns the
/// state, the built copy and the changed files' contents.
util::Expected<Trial> try_edits(const std::vector<const propose::Edit*>& edits, const fs::path& work,
                                const fs::path& scratch, const core::Kernel& to, const PortRequest& req,
                                const propose::ApplyOptions& apply_options, const BuildLimit& limit,
                                const BuildState& cur) {
  auto dir = util::TempDir::create(scratch, "trial-");
  if (!dir) return unexpected(dir.error());
  fs::path t = dir->path() / "tree";
  auto t0 = Clock::now();
  if (auto c = util::copy_tree(work, t, util::SkipBuildProducts::no); !c) return unexpected(c.error());
  Trial trial;
  auto ms_since = [](Clock::time_point a) { return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - a).count(); };
  trial.copy_ms = ms_since(t0);
  t0 = Clock::now();
  std::set<std::string> changed;
  std::map<std::string, std::string> texts; // files as the previous edits left them
  auto text_of = [](const fs::path& path) {
    auto r = util::read_file(path);
    return r ? std::move(*r) : std::string();
  };
  for (const auto* e : edits) {
    trial.touched.emplace_back();
    auto a = propose::apply_edit(*e, t, dir->path() / "rules", apply_options);
    if (!a) {
      util::log_debug("apply failed: {}", a.error().message);
      continue;
    }
    for (const auto& f : a->changed_files) {
      changed.insert(f);
      if (!texts.count(f)) texts[f] = text_of(work / f);
      std::string now = text_of(t / f);
      for (const auto& fn : propose::changed_functions(texts[f], now)) trial.touched.back().insert(f + "|" + fn);
      texts[f] = std::move(now);
    }
  }
  trial.apply_ms = ms_since(t0);
  if (changed.empty()) return trial;
  trial.applied = true;
  for (const auto& f : changed) {
    auto text = util::read_file(t / f);
    if (text) trial.snapshot.push_back({f, *text});
  }
  // Judged by compiling the changed files alone where that says all (the rest did not change);
  // when their errors are gone, by the whole module (link and modpost).
  util::Expected<BuildState> s = unexpected(ErrorKind::internal, "no build");
  TrialObjects picked;
  if (req.build_cmd.empty() && !cur.ok && !cur.timed_out) picked = trial_objects(changed, cur.errors, work, req.subdir);
  if (!picked.objects.empty()) {
    auto o = build(to, t, req, limit, picked.objects);
    if (!o) return unexpected(o.error());
    if (o->timed_out) {
      s = std::move(o);
    } else if (!o->exited_ok && o->errors.empty()) {
      // make failed without a compiler error (a target kbuild did not know): the whole module.
      s = build(to, t, req, limit);
    } else {
      BuildState merged = std::move(*o);
      merged.objects_only = true;
      merged.sampled = picked.sampled || cur.sampled;
      merged.ok = false;
      merged.signatures.clear();
      for (const auto& d : merged.errors) merged.signatures.insert(error_signature(d));
      // The other files' diagnostics as the current build has them; the changed files' (and a
      // changed header's, whoever reported them) come from the objects just compiled.
      for (const auto& d : cur.all) {
        if (changed.count(tree_relative(d.file, gate::k_sandbox_tree))) continue;
        merged.all.push_back(d);
        count_diagnostic(merged, d);
      }
      if (merged.errors.empty()) {
        s = build(to, t, req, limit);
        if (s) s->compiled += merged.compiled, s->ms += merged.ms;
      } else {
        s = std::move(merged);
      }
    }
  } else {
    s = build(to, t, req, limit);
  }
  if (!s) return unexpected(s.error());
  trial.state = std::move(*s);
  trial.tree = t;
  trial.dir.emplace(std::move(*dir));
  return trial;
}

util::Expected<void> write_snapshot(const fs::path& work, const std::vector<std::pair<std::string, std::string>>& snap) {
  for (const auto& [f, text] : snap)
    if (auto w = util::write_file(work / f, text); !w) return w;
  return {};
}

/// Replays `accepted` except entry `skip` on a fresh copy of the original tree, recording new
/// snapshots (a later edit's snapshot of a shared file must not carry the dropped edit).
util::Expected<std::vector<AcceptedEdit>> replay_without(const std::vector<AcceptedEdit>& accepted, std::size_t skip,
                                                         const fs::path& original, const fs::path& tree,
                                                         const fs::path& scratch, const propose::ApplyOptions& options) {
  std::error_code ec;
  fs::remove_all(tree, ec);
  if (auto c = util::copy_tree(original, tree, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
  std::vector<AcceptedEdit> kept;
  for (std::size_t i = 0; i < accepted.size(); ++i) {
    if (i == skip) continue;
    auto one = propose::apply_edit(accepted[i].edit, tree, scratch / "rules", options);
    if (!one || one->changed_files.empty()) return unexpected(ErrorKind::parse, "edit no longer applies");
    AcceptedEdit acc = accepted[i];
    acc.snapshot.clear();
    for (const auto& f : one->changed_files)
      if (auto text = util::read_file(tree / f); text) acc.snapshot.push_back({f, *text});
    kept.push_back(std::move(acc));
  }
  return kept;
}

/// Without --from, the reference pair is the newest older kernel line with source; but a kernel
/// that already lacks what the driver misses (functions and identifiers the target no longer
/// declares) cannot show how the kernel's own drivers moved away from them. Down the chain of
/// Debian's kernel sources, the newest line that still declares the most of them becomes the
/// reference (at most three steps: each may download a source tree).
void choose_reference(const core::Kernel& to, const std::vector<core::Diagnostic>& errors, propose::PortContext& ctx,
                      PortReport& rep, const std::function<void(const std::string&)>& note,
                      const std::function<void(const std::string&, nlohmann::json)>& step) {
  std::set<std::string> missing;
  for (const auto& d : errors)
    if (d.kind == core::DiagKind::implicit_function_declaration || d.kind == core::DiagKind::undeclared_identifier)
      for (const auto& sym : d.symbols) missing.insert(sym);
  if (missing.empty() || ctx.old_src.empty()) return;
  auto declared = [&](const fs::path& src) {
    propose::TargetIndex idx(src, {});
    const auto& names = idx.names();
    return static_cast<std::size_t>(std::count_if(missing.begin(), missing.end(), [&](const auto& m) { return names.count(m) > 0; }));
  };
  // A kernel that still declares the names but where (almost) no driver uses them any more has
  // already moved its drivers away: 7.2 kept `struct acpi_driver` for one last user, the
  // conversions of the 44 others happened before. Its own drivers must still use them.
  auto users = [&](const fs::path& src) {
    kernel::SourceGrep q;
    q.options = {"-lwE"};
    q.includes = {"*.c"};
    q.pattern = fmt::format("{}", fmt::join(missing, "|"));
    q.dirs = {"drivers", "sound", "net", "fs", "arch/x86"};
    q.any_of.assign(missing.begin(), missing.end());
    q.output_cap = 1 << 20;
    return kernel::grep_source(src, q).size();
  };
  constexpr std::size_t k_enough_users = 3;
  std::size_t best = declared(ctx.old_src);
  std::size_t best_users = best == missing.size() ? users(ctx.old_src) : 0;
  if (best == missing.size() && best_users >= k_enough_users) return;
  fs::path best_src;
  std::string best_release;
  int steps = 0;
  for (const auto& k : kernel::reference_chain(to)) {
    if (k.release == rep.reference) continue;
    if (++steps > 3) break;
    auto src = kernel::ensure_source(k, note);
    if (!src) {
      util::log_info("no reference source ({}): {}", k.line, src.error().message);
      continue;
    }
    std::size_t n = declared(*src);
    std::size_t u = n == missing.size() && n == best ? users(*src) : 0;
    if (n > best || (n == best && n == missing.size() && best_users < k_enough_users && u > best_users)) {
      best = n;
      best_users = n == missing.size() ? (u ? u : users(*src)) : 0;
      best_src = *src;
      best_release = k.release;
    }
    if (best == missing.size() && best_users >= k_enough_users) break;
  }
  if (best_src.empty()) return;
  note(fmt::format("reference: {} still declares {} of the {} name(s) the target lacks{}; learning from it instead",
                   best_release, best, missing.size(),
                   best_users ? fmt::format(", used by {} of its drivers", best_users) : std::string()));
  ctx.old_src = best_src;
  rep.reference = best_release;
  step("reference", {{"kernel", best_release}, {"source", best_src.string()}, {"declares_missing", best},
                     {"missing", missing.size()}});
}

} // namespace

util::Expected<PortReport> run_port(const PortRequest& given, const PortProgressFn& progress) {
  auto start = Clock::now();
  std::error_code ec;
  // From here on `tree` is what is copied: the driver's folder, or a root holding it and the
  // folders its build files name (req.subdir: where the driver is in it).
  PortRequest req = given;
  if (req.subdir.empty()) {
    auto located = gate::find_build_root(given.tree, given.root);
    if (!located) return unexpected(located.error());
    for (const auto& line : gate::describe(*located, given.tree))
      if (progress) progress(line);
    req.tree = located->root;
    req.subdir = located->subdir;
    if (!req.subdir.empty() && !req.from_tree.empty()) {
      // The driver's folder of a tree laid out like the root: the same root around it.
      fs::path from_root = fs::absolute(req.from_tree).lexically_normal();
      for (auto it = req.subdir.begin(); it != req.subdir.end(); ++it) from_root = from_root.parent_path();
      if ((from_root / req.subdir).lexically_normal() != fs::absolute(req.from_tree).lexically_normal() || !fs::is_directory(from_root / req.subdir, ec))
        return unexpected(ErrorKind::config, fmt::format("{}: the tree built on the old kernel is not laid out like {} (the driver at {})",
                                                         req.from_tree.string(), req.tree.string(), req.subdir.string()));
      req.from_tree = from_root;
    }
  }
  const fs::path driver_dir = req.subdir.empty() ? req.tree : req.tree / req.subdir;
  if (req.build_cmd.empty() && !gate::has_kbuild_makefile(driver_dir))
    return unexpected(ErrorKind::config, fmt::format("{}: no Makefile or Kbuild (give --build-cmd if it builds another way)", driver_dir.string()));
  if (req.out.empty()) return unexpected(ErrorKind::config, "no output directory (-o OUT)");
  if (fs::exists(req.out) && !fs::is_empty(req.out, ec))
    return unexpected(ErrorKind::config, fmt::format("{} already exists and is not empty: choose another -o", req.out.string()));
  auto tree_abs = fs::weakly_canonical(req.tree);
  auto out_abs = fs::weakly_canonical(req.out);
  if (out_abs.string().starts_with(tree_abs.string() + "/") || out_abs == tree_abs)
    return unexpected(ErrorKind::config, req.subdir.empty() ? std::string("-o must not be inside the driver tree (the tree is never written)")
                                                            : fmt::format("-o must not be inside {}, the folder copied with the driver", tree_abs.string()));

  auto to = kernel::resolve_kernel(req.to);
  if (!to) return unexpected(to.error());
  if (!to->has_headers())
    return unexpected(ErrorKind::not_found, fmt::format("kernel {}: no build directory: run `autodriver kernel fetch {}`", req.to, req.to));
  // Edits never touch the branches of `#if LINUX_VERSION_CODE` blocks the target rules out.
  propose::ApplyOptions apply_options{propose::linux_version_code(to->build_dir), std::nullopt};
  std::optional<core::Kernel> from;
  if (!req.from.empty()) {
    auto f = kernel::resolve_kernel(req.from);
    if (!f) return unexpected(f.error());
    if (!f->has_headers())
      return unexpected(ErrorKind::not_found, fmt::format("kernel {}: no build directory: run `autodriver kernel fetch {}`", req.from, req.from));
    from = *f;
  }
  // --compat K: older kernels the result must keep building on, besides --from.
  std::vector<core::Kernel> olds;
  std::vector<std::string> old_names;  // as the user wrote them (the gates resolve them again)
  if (from) olds.push_back(*from), old_names.push_back(req.from);
  for (const auto& name : req.compat_kernels) {
    auto k = kernel::resolve_kernel(name);
    if (!k) return unexpected(ErrorKind::config, fmt::format("--compat {}: {}", name, k.error().message));
    if (!k->has_headers())
      return unexpected(ErrorKind::not_found, fmt::format("--compat {}: no build directory: run `autodriver kernel fetch {}`", name, name));
    if (std::none_of(olds.begin(), olds.end(), [&](const core::Kernel& o) { return o.build_dir == k->build_dir; }) &&
        k->build_dir != to->build_dir)
      olds.push_back(*k), old_names.push_back(name);
  }
  // The headers' own LINUX_VERSION_CODE (Debian's 6.1.0-57 is 6.1.192), not the release string.
  auto code_of = [](const core::Kernel& k) { long c = propose::linux_version_code(k.build_dir); return c ? c : static_cast<long>(k.version_code()); };
  // A guard sends every older kernel to the old code: the newest of them bounds it.
  long newest_old = 0;
  for (const auto& o : olds) newest_old = std::max(newest_old, code_of(o));
  if (req.compat && newest_old >= code_of(*to))
    return unexpected(ErrorKind::config, "--compat: every kernel kept building must be older than the target");
  if (req.boot && !to->has_image())
    return unexpected(ErrorKind::not_found, fmt::format("kernel {}: the image is not in the cache: run `autodriver kernel fetch {}`", req.to, req.to));

  PortReport rep;
  if (!req.subdir.empty()) rep.root = tree_abs;
  auto step = [&](const std::string& kind, nlohmann::json data) {
    data["step"] = kind;
    data["t_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (req.on_step) req.on_step(data);
    rep.steps.push_back(std::move(data));
  };
  auto scratch = gate::make_scratch("port-");
  if (!scratch) return unexpected(scratch.error());
  fs::path work = scratch->path() / "work";
  if (auto c = util::copy_tree(req.tree, work, util::SkipBuildProducts::yes); !c) return unexpected(c.error());

  // Kernel sources: the target's always (header-fix needs it), the old kernel's when known.
  propose::PortContext ctx;
  ctx.to = &*to;
  ctx.from = from ? &*from : nullptr;
  ctx.leave_out = req.leave_out;
  ctx.tree = work;
  ctx.original_tree = req.tree;
  ctx.scratch = scratch->path() / "proposers";
  ctx.kb_leave_out = req.kb_leave_out;
  ctx.kb_path = req.kb_path;
  if (req.store_kb) ctx.store = req.kb_store;
  ctx.case_id = req.case_id;
  auto note = [&](const std::string& m) { if (progress) progress(m); };
  if (auto s = kernel::ensure_source(*to, note); s) ctx.new_src = *s;
  else util::log_info("no source tree for {}: {}", req.to, s.error().message);
  if (from) {
    if (auto s = kernel::ensure_source(*from, note); s) ctx.old_src = *s;
    else util::log_info("no source tree for {}: {}", req.from, s.error().message);
  } else if (req.reference) {
    // The driver's old kernel is unknown: the newest older kernel line whose source Debian has
    // (downloaded into the cache on demand, never installed) still shows how the kernel's own
    // drivers followed each change since (learned-rewrite, inline-removed).
    if (auto rk = kernel::reference_kernel(*to)) {
      if (auto s = kernel::ensure_source(*rk, note); s) {
        ctx.old_src = *s;
        step("reference", {{"kernel", rk->release}, {"source", s->string()}});
        rep.reference = rk->release;
        note(fmt::format("no --from: learning from {}'s source as a reference (never built against)", rk->release));
      } else {
        util::log_info("no reference source ({}): {}", rk->line, s.error().message);
      }
    }
  }

  // Builds share the machine's CPUs; a build's timeout is --build-timeout, else three times the
  // first full build of the target (at least three minutes), never more than the budget left.
  const int cpus = req.jobs > 0 ? req.jobs : util::available_cpus();
  std::chrono::seconds first_build{0};
  auto limit = [&](int share = 1) {
    BuildLimit l;
    l.jobs = std::max(1, cpus / std::max(1, share));
    auto left = std::chrono::duration_cast<std::chrono::seconds>(req.budget - (Clock::now() - start));
    std::chrono::seconds cap = req.build_timeout.count() > 0 ? req.build_timeout
                               : first_build.count() > 0    ? std::max<std::chrono::seconds>(std::chrono::seconds(180), 3 * first_build)
                                                            : left;
    l.by_budget = left <= cap;
    l.timeout = std::max<std::chrono::seconds>(std::chrono::seconds(1), std::min(cap, left));
    return l;
  };
  // A build cut by its timeout or the budget ends the run with that said, not as a driver error.
  auto cut_short = [&](const BuildState& b, const core::Kernel& k) {
    rep.status = b.by_budget ? "budget" : "timeout";
    rep.remaining = {fmt::format("the build on {} did not finish within {} s ({})", k.release, b.limit.count(),
                                 b.by_budget ? "the time left in --budget-s" : "--build-timeout")};
    rep.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  };
  auto build_json = [](const BuildState& b) {
    return nlohmann::json{{"ms", b.ms}, {"compiled", b.compiled}, {"timed_out", b.timed_out}, {"timeout_s", b.limit.count()}};
  };

  auto finish_out = [&]() -> util::Expected<void> {
    fs::create_directories(req.out, ec);
    if (auto c = util::copy_tree(work, req.out / "tree", util::SkipBuildProducts::yes); !c) return c;
    return {};
  };

  // The target's build of the unchanged tree first, with every CPU. The old kernel's build of it
  // only tells a driver that never built apart from a port that could not finish: it runs when the
  // port ends without a build (a big tree's second full build would otherwise double the port).
  fs::path from_tree = scratch->path() / "from-tree";
  bool from_built = false;
  note(fmt::format("building the unchanged tree on {}", to->release));
  // apidiff builds its own copies, so it runs beside the target's build.
  std::future<util::Expected<apidiff::ApidiffReport>> api_diff;
  if (from && req.api_changes)
    api_diff = std::async(std::launch::async, [&, timeout = limit(2).timeout]() {
      apidiff::ApidiffRequest ar{req.tree, *from, *to, req.build_cmd, timeout, {}, req.subdir};
      return apidiff::run_apidiff(ar);
    });
  auto cur = build(*to, work, req, limit(api_diff.valid() ? 2 : 1));
  if (!cur) return unexpected(cur.error());
  rep.initial_errors = cur->error_count();
  {
    auto j = build_json(*cur);
    j.update({{"kernel", to->release}, {"ok", cur->ok}, {"errors", diag_list(cur->errors)}});
    step("build-target", j);
  }
  if (cur->timed_out) {
    cut_short(*cur, *to);
    return rep;
  }
  // Trials are measured against this build (beside the old kernel's build it took longer than alone).
  first_build = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::milliseconds(cur->ms));
  std::vector<core::Diagnostic> original_diags = cur->all;
  if (api_diff.valid()) {
    if (auto ad = api_diff.get(); ad) rep.changes = changes_for_diagnostics(ad->changes, cur->errors);
    else util::log_info("apidiff: {}", ad.error().message);
  }
  if (cur->ok) {
    rep.status = "already-builds";
    rep.ok = true;
    if (auto w = finish_out(); !w) return unexpected(w.error());
    rep.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return rep;
  }

  if (!from && !rep.reference.empty()) choose_reference(*to, cur->errors, ctx, rep, note, step);

  // Proposers.
  std::vector<std::unique_ptr<propose::Proposer>> proposers;
  for (const auto& entry : propose::proposer_table())
    if (req.proposers.empty() || std::find(req.proposers.begin(), req.proposers.end(), entry.id) != req.proposers.end())
      proposers.push_back(entry.make());

  std::set<std::string> settled; // change ids accepted or exhausted
  // A trial's step: what was tried, its errors, and where its time went.
  auto tried = [&](nlohmann::json data, const Trial& t) {
    data.update({{"errors_before", cur->error_count()}, {"errors_after", t.applied ? t.state.error_count() : -1},
                 {"build_ms", t.state.ms}, {"compiled", t.state.compiled}, {"objects_only", t.state.objects_only},
                 {"copy_ms", t.copy_ms}, {"apply_ms", t.apply_ms}});
    step("try", std::move(data));
  };
  // The trial's built copy becomes the work tree (its objects are the next trials' start).
  auto adopt = [&](Trial& t) -> util::Expected<void> {
    if (!t.tree.empty()) {
      fs::remove_all(work, ec);
      fs::rename(t.tree, work, ec);
      if (!ec) return {};
      util::log_debug("cannot move {} to {}: {}", t.tree.string(), work.string(), ec.message());
      if (auto c = util::copy_tree(t.tree, work, util::SkipBuildProducts::no); c) return {};
    }
    return write_snapshot(work, t.snapshot);
  };
  // One edit's trial kept on the work tree: its files, the accepted edit with its snapshot, the
  // new build state.
  auto keep_trial = [&](const propose::Edit& e, Trial& t, int iter) -> util::Expected<void> {
    if (auto w = adopt(t); !w) return unexpected(w.error());
    rep.accepted.push_back({e, t.snapshot, cur->error_count(), t.state.error_count(), rep.accepted.size(), 1});
    settled.insert(e.change_id);
    step("accept", {{"iteration", iter}, {"change", e.change_id}, {"proposer", e.proposer}, {"title", e.title}});
    *cur = std::move(t.state);
    return {};
  };
  // `cur` is the build of a trial copy identical to the work tree: no rebuild needed.
  auto end_iteration = [&](int iter) {
    step("build-target", {{"iteration", iter}, {"ok", cur->ok}, {"errors", diag_list(cur->errors)}});
    if (cur->ok && rep.modules.empty()) rep.modules = cur->modules;
  };
  // A header judged by a sample of its users leaves the other files' diagnostics as they were:
  // one full build (incremental: the users of what changed) before they are read again.
  auto refresh = [&](int iter) -> util::Expected<void> {
    if (!cur->sampled) return {};
    note("rebuilding the module: a changed header was judged by some of the files that include it");
    auto full = build(*to, work, req, limit());
    if (!full) return unexpected(full.error());
    auto j = build_json(*full);
    j.update({{"iteration", iter}, {"ok", full->ok}, {"refresh", true}, {"errors", diag_list(full->errors)}});
    step("build-target", j);
    *cur = std::move(*full);
    return {};
  };
  rep.status = "no-progress";
  for (int iter = 1; iter <= req.max_iters && !cur->ok; ++iter) {
    if (util::interrupted()) return unexpected(ErrorKind::interrupted, "interrupted");
    if (Clock::now() - start > req.budget) {
      rep.status = "budget";
      break;
    }
    if (auto r = refresh(iter); !r) return unexpected(r.error());
    if (cur->ok) break;
    // Rules read the C files the build compiles (and headers): not another platform's files.
    if (req.build_cmd.empty()) apply_options.compiled = compiled_units(work, cur->all, req.subdir);
    std::vector<propose::Edit> edits;
    for (auto& p : proposers) {
      auto t0 = Clock::now();
      auto es = p->propose(cur->all, ctx);
      step("propose", {{"iteration", iter}, {"proposer", p->id()}, {"edits", es.size()},
                       {"ms", std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()}});
      for (auto& e : es) {
        if (settled.count(e.change_id)) continue;
        propose::fill_expectations(e, work);
        edits.push_back(std::move(e));
      }
    }
    note(fmt::format("iteration {}: {} error(s), {} candidate edit(s)", iter, cur->error_count(), edits.size()));
    if (edits.empty()) break;
    // The driver's own feature switches first, each alone: a switch changes which code compiles,
    // so the other proposals may be for code it switches off (a rename in the #else branch it
    // retires); after one is kept the next iteration diagnoses the new build.
    bool switched = false;
    for (auto it = edits.begin(); it != edits.end();) {
      if (it->proposer != "feature-switch") {
        ++it;
        continue;
      }
      auto t = try_edits({&*it}, work, scratch->path(), *to, req, apply_options, limit(), *cur);
      if (!t) return unexpected(t.error());
      tried({{"iteration", iter}, {"change", it->change_id}, {"rank", it->rank}, {"proposer", it->proposer}}, *t);
      settled.insert(it->change_id);
      if (t->applied && trial_score(*cur, t->state) < cur->score()) {
        if (auto k = keep_trial(*it, *t, iter); !k) return unexpected(k.error());
        switched = true;
        if (cur->ok) break;
      } else {
        step("reject", {{"iteration", iter}, {"change", it->change_id}});
      }
      it = edits.erase(it);
    }
    if (switched) {
      end_iteration(iter);
      continue;
    }
    if (edits.empty()) break;
    // Group alternatives by change; best first.
    std::map<std::string, std::vector<const propose::Edit*>> groups;
    for (const auto& e : edits) groups[e.change_id].push_back(&e);
    for (auto& [id, g] : groups)
      std::stable_sort(g.begin(), g.end(), [](auto* a, auto* b) {
        return a->rank != b->rank ? a->rank < b->rank : a->support > b->support;
      });

    bool progressed = false;
    // Fast path: the best alternative of every change at once; accepted when it removes errors
    // without introducing new ones.
    std::vector<const propose::Edit*> firsts;
    for (auto& [id, g] : groups) firsts.push_back(g.front());
    // A set of changes is accepted together when it lowers the score without any new error.
    // When it lowers the score but brings new errors, the set holds good and bad changes: its
    // halves are tried (at most three levels deep) before falling back to one change at a time.
    std::function<util::Expected<void>(const std::vector<const propose::Edit*>&, int)> try_set;
    try_set = [&](const std::vector<const propose::Edit*>& set, int depth) -> util::Expected<void> {
      if (set.size() < 2 || Clock::now() - start > req.budget) return {};
      auto t = try_edits(set, work, scratch->path(), *to, req, apply_options, limit(), *cur);
      if (!t) return unexpected(t.error());
      bool no_new = std::all_of(t->state.signatures.begin(), t->state.signatures.end(),
                                [&](const auto& sg) { return cur->signatures.count(sg) > 0; });
      bool better = t->applied && trial_score(*cur, t->state) < cur->score();
      tried({{"iteration", iter}, {"changes", set.size()}, {"combined", true}, {"depth", depth}}, *t);
      if (better && no_new) {
        // Re-apply one by one on the work tree to record one snapshot (patch) per change.
        int before = cur->error_count();
        const std::size_t group = rep.accepted.size();
        for (const auto* e : set) {
          auto one = propose::apply_edit(*e, work, scratch->path() / "rules", apply_options);
          if (!one || one->changed_files.empty()) continue;
          AcceptedEdit acc{*e, {}, before, t->state.error_count(), group, 1};
          for (const auto& f : one->changed_files)
            if (auto text = util::read_file(work / f); text) acc.snapshot.push_back({f, *text});
          rep.accepted.push_back(std::move(acc));
          settled.insert(e->change_id);
          step("accept", {{"iteration", iter}, {"change", e->change_id}, {"proposer", e->proposer}, {"title", e->title}});
        }
        for (std::size_t k = group; k < rep.accepted.size(); ++k) rep.accepted[k].group_size = rep.accepted.size() - group;
        if (auto w = adopt(*t); !w) return unexpected(w.error());
        *cur = std::move(t->state);
        progressed = true;
        return {};
      }
      if (better && !no_new && depth == 0) {
        // A near miss: drop the edits that touched the functions where the new errors are
        // (a body retyped for one callback exposing another change) and try the rest once.
        std::set<std::string> new_at;
        for (const auto& d : t->state.errors)
          if (!cur->signatures.count(error_signature(d))) new_at.insert(d.file + "|" + d.function);
        std::vector<const propose::Edit*> rest;
        for (std::size_t i = 0; i < set.size(); ++i) {
          bool suspect = false;
          for (const auto& where : i < t->touched.size() ? t->touched[i] : std::set<std::string>{}) {
            auto file = where.substr(0, where.find('|'));
            if (new_at.count(where) || new_at.count(file + "|")) suspect = true;
          }
          if (!suspect) rest.push_back(set[i]);
        }
        if (!rest.empty() && rest.size() < set.size()) {
          note(fmt::format("{} of {} changes touched the functions of the new errors: trying the other {}",
                           set.size() - rest.size(), set.size(), rest.size()));
          bool before_progress = progressed;
          if (auto r = try_set(rest, depth + 1); !r) return r;
          if (progressed && !before_progress) return {};
        }
      }
      if (!better || depth >= 3 || set.size() < 4) return {};
      std::vector<const propose::Edit*> lo(set.begin(), set.begin() + static_cast<long>(set.size() / 2));
      std::vector<const propose::Edit*> hi(set.begin() + static_cast<long>(set.size() / 2), set.end());
      if (auto r = try_set(lo, depth + 1); !r) return r;
      return try_set(hi, depth + 1);
    };
    if (firsts.size() > 1)
      if (auto r = try_set(firsts, 0); !r) return unexpected(r.error());
    if (!progressed) {
      // One change at a time, alternatives in order; keep the best that helps (a near miss that
      // removes more errors than it adds is kept and refined by the next iteration).
      for (auto& [id, g] : groups) {
        if (Clock::now() - start > req.budget) break;
        const propose::Edit* best = nullptr;
        std::optional<Trial> best_trial;
        const propose::Edit* needs_include = nullptr; // fixed its errors, brought only undeclared names
        std::vector<core::Diagnostic> needed;
        int tries = 0;
        for (const auto* e : g) {
          if (++tries > 3) break;
          auto t = try_edits({e}, work, scratch->path(), *to, req, apply_options, limit(), *cur);
          if (!t) return unexpected(t.error());
          tried({{"iteration", iter}, {"change", id}, {"rank", e->rank}, {"proposer", e->proposer}}, *t);
          if (!t->applied) continue;
          if (!needs_include && !t->state.ok) {
            std::vector<core::Diagnostic> fresh;
            bool only_names = true;
            for (const auto& d : t->state.errors)
              if (!cur->signatures.count(error_signature(d))) {
                fresh.push_back(d);
                only_names = only_names && (d.kind == core::DiagKind::implicit_function_declaration ||
                                            d.kind == core::DiagKind::undeclared_identifier);
              }
            bool fixed_some = std::any_of(cur->errors.begin(), cur->errors.end(), [&](const auto& d) {
              return !t->state.signatures.count(error_signature(d));
            });
            if (only_names && fixed_some && !fresh.empty()) {
              needs_include = e;
              needed = std::move(fresh);
            }
          }
          bool clean = std::all_of(t->state.signatures.begin(), t->state.signatures.end(),
                                   [&](const auto& sg) { return cur->signatures.count(sg) > 0; });
          if (trial_score(*cur, t->state) < cur->score() &&
              (!best_trial || trial_score(*cur, t->state) < trial_score(*cur, best_trial->state))) {
            best = e;
            best_trial = std::move(*t);
          }
          // First improvement that adds no new error wins: alternatives cost a build each.
          if (best && clean && best == e) break;
        }
        // An edit whose only new errors are names a kernel header it now reaches uses without
        // including their header (6.12's <asm/intel-family.h> uses VFM_MAKE of
        // <asm/cpu_device_id.h>): tried once more with the include header-fix finds for them.
        std::optional<propose::Edit> merged;
        if (!best && needs_include && Clock::now() - start < req.budget) {
          fs::path probe = scratch->path() / "needs-include";
          fs::remove_all(probe, ec);
          if (util::copy_tree(work, probe, util::SkipBuildProducts::yes) &&
              propose::apply_edit(*needs_include, probe, scratch->path() / "rules", apply_options)) {
            auto pctx = ctx;
            pctx.tree = probe;
            auto fixes = propose::make_header_fix()->propose(needed, pctx);
            if (!fixes.empty()) {
              propose::fill_expectations(fixes.front(), probe);
              merged = *needs_include;
              for (const auto& te : fixes.front().text_edits) merged->text_edits.push_back(te);
              merged->title += "; " + fixes.front().title;
              merged->description += " " + fixes.front().description;
              for (const auto& sym : fixes.front().symbols) merged->symbols.push_back(sym);
              auto t = try_edits({&*merged}, work, scratch->path(), *to, req, apply_options, limit(), *cur);
              if (!t) return unexpected(t.error());
              tried({{"iteration", iter}, {"change", id}, {"with", fixes.front().change_id}}, *t);
              if (t->applied && trial_score(*cur, t->state) < cur->score()) {
                best = &*merged;
                best_trial = std::move(*t);
              }
            }
          }
          fs::remove_all(probe, ec);
        }
        if (!best) {
          settled.insert(id);
          step("reject", {{"iteration", iter}, {"change", id}});
          continue;
        }
        if (auto k = keep_trial(*best, *best_trial, iter); !k) return unexpected(k.error());
        progressed = true;
        if (cur->ok) break;
      }
    }
    if (!progressed) break;
    end_iteration(iter);
  }
  if (auto r = refresh(0); !r) return unexpected(r.error());
  if (cur->timed_out) cut_short(*cur, *to);
  rep.final_errors = cur->error_count();
  rep.remaining = distinct_errors(cur->errors);
  rep.final_build = {{"ok", cur->ok}, {"kernel", to->release}, {"errors", diag_list(cur->errors)}};
  // No build on the target: does the unchanged driver build on its own kernel? If not, the port
  // had nothing sound to start from, and the verdict says so (its errors there are the remaining).
  if (!cur->ok && from && rep.status == "no-progress") {
    const fs::path& from_src = req.from_tree.empty() ? req.tree : req.from_tree;
    if (auto c = util::copy_tree(from_src, from_tree, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
    note(fmt::format("building the unchanged tree on {}", from->release));
    auto f = build(*from, from_tree, req, limit());
    if (!f) return unexpected(f.error());
    auto j = build_json(*f);
    j.update({{"kernel", from->release}, {"ok", f->ok}, {"errors", diag_list(f->errors)}});
    step("build-from", j);
    from_built = true;
    if (f->timed_out) {
      cut_short(*f, *from);
    } else if (!f->ok) {
      rep.status = "from-fails";
      rep.remaining = distinct_errors(f->errors);
    }
  }

  if (cur->ok) {
    gate::IntegrityInput ii;
    ii.original = req.tree;
    ii.candidate = work;
    ii.diagnostics = original_diags;
    // The symbols whose API changed (as the accepted edits say) may be rewritten wherever they
    // occur, not only on the lines gcc reported (gcc reports an implicit declaration once).
    for (const auto& a : rep.accepted)
      for (const auto& sym : a.edit.symbols)
        if (sym.find(' ') == std::string::npos) ii.removed_symbols.push_back(sym);
    auto integ = gate::check_integrity(ii);
    // Edits accepted together with others may include one the build never needed (a compat shim
    // deleted from code the configuration does not compile): when the gate only blames lines no
    // diagnostic points at, drop each accepted edit that touched a blamed file in turn (at most
    // three, one build each) and keep the first series that still builds and passes.
    bool only_unrelated = !integ.ok && std::all_of(integ.violations.begin(), integ.violations.end(),
                                                   [](const auto& v) { return v.rule == "unrelated-change"; });
    if (only_unrelated) {
      std::set<std::string> blamed;
      for (const auto& v : integ.violations) blamed.insert(v.file);
      int repairs = 0;
      for (std::size_t i = 0; i < rep.accepted.size() && repairs < 3; ++i) {
        bool touches = std::any_of(rep.accepted[i].snapshot.begin(), rep.accepted[i].snapshot.end(),
                                   [&](const auto& f) { return blamed.count(f.first) > 0; });
        if (!touches || Clock::now() - start > req.budget) continue;
        ++repairs;
        fs::path alt_src = scratch->path() / "without-src";
        fs::path alt = scratch->path() / "without";
        auto kept = replay_without(rep.accepted, i, req.tree, alt_src, scratch->path(), apply_options);
        if (!kept) continue;
        // On the work tree's build: only the files the dropped edit touched recompile.
        fs::remove_all(alt, ec);
        if (auto c = util::stage_tree(alt_src, work, alt); !c) return unexpected(c.error());
        auto b = build(*to, alt, req, limit());
        if (!b) return unexpected(b.error());
        gate::IntegrityInput ai = ii;
        ai.candidate = alt;
        ai.removed_symbols.clear();
        for (const auto& a : *kept)
          for (const auto& sym : a.edit.symbols)
            if (sym.find(' ') == std::string::npos) ai.removed_symbols.push_back(sym);
        auto again = b->ok ? gate::check_integrity(ai) : gate::IntegrityReport{};
        step("integrity-repair", {{"dropped", rep.accepted[i].edit.change_id}, {"build_ok", b->ok},
                                  {"integrity_ok", b->ok && again.ok}});
        if (!b->ok || !again.ok) continue;
        fs::remove_all(work, ec);
        if (auto c = util::copy_tree(alt, work, util::SkipBuildProducts::no); !c) return unexpected(c.error());
        rep.accepted = std::move(*kept);
        // Dropping an edit leaves no per-edit measurement standing: the figures are the series'.
        for (auto& a : rep.accepted) {
          a.group = 0;
          a.group_size = rep.accepted.size();
          a.errors_before = rep.initial_errors;
          a.errors_after = b->error_count();
        }
        *cur = std::move(*b);
        integ = std::move(again);
        break;
      }
    }
    rep.integrity = gate::to_json(integ);
    step("integrity", {{"ok", integ.ok}, {"violations", integ.violations.size()}});
    rep.status = integ.ok ? "ported" : "integrity-rejected";
    rep.ok = integ.ok;
    if (integ.ok && req.compat) {
      // Keep the old kernel building: wrap every change in LINUX_VERSION_CODE guards. The version
      // is the boundary maintainers' own blocks give for the change (compat KB) when it lies after
      // the old kernel and by the target, else the target's version (the change happened in
      // between). Either way both kernels take their own branch.
      std::string version = to->line + ".0";
      propose::Kb kb;
      fs::path kb_file = req.kb_path.empty() ? propose::default_kb_path() : req.kb_path;
      if (std::error_code kec; fs::exists(kb_file, kec)) {
        if (auto k = propose::load_kb(kb_file); k) kb = propose::without_packages(*k, req.kb_leave_out);
        else util::log_info("compat: {}", k.error().message);
      }
      auto guard_for = kb_guards(kb, newest_old, code_of(*to), version);
      nlohmann::json guards = nlohmann::json::array();
      fs::path ctree = scratch->path() / "compat";
      if (auto c = util::copy_tree(work, ctree, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
      for (const auto& rel : propose::c_files(work)) {
        auto orig = util::read_file(req.tree / rel);
        auto now = util::read_file(work / rel);
        if (orig && now && *orig != *now) {
          std::vector<Guard> written;
          if (auto w = util::write_file(ctree / rel, compat_merge(*orig, *now, guard_for, &written)); !w) return unexpected(w.error());
          for (const auto& g : written)
            guards.push_back({{"file", rel}, {"line", g.line}, {"version", g.choice.version},
                              {"guard", "LINUX_VERSION_CODE >= " + kernel_version_macro(g.choice.version)}, {"source", g.choice.source}});
        }
      }
      // Each kernel's build starts from that kernel's earlier build of the tree where there is
      // one (the work tree on the target, the unchanged tree on --from): only guarded files recompile.
      auto build_on = [&](const core::Kernel& k, const fs::path& built) -> util::Expected<BuildState> {
        fs::path dir = scratch->path() / ("compat-" + k.release);
        fs::remove_all(dir, ec);
        if (auto c = util::stage_tree(ctree, built, dir); !c) return unexpected(c.error());
        auto b = build(k, dir, req, limit());
        fs::remove_all(dir, ec);
        return b;
      };
      auto on_to = build_on(*to, work);
      if (!on_to) return unexpected(on_to.error());
      nlohmann::json builds = {{to->release, on_to->ok}};
      bool both = on_to->ok;
      for (const auto& old : olds) {
        auto on_old = build_on(old, from_built && old.build_dir == from->build_dir ? from_tree : fs::path());
        if (!on_old) return unexpected(on_old.error());
        builds[old.release] = on_old->ok;
        both = both && on_old->ok;
      }
      rep.compat = {{"ok", both}, {"version", version}, {"guard", "LINUX_VERSION_CODE >= " + kernel_version_macro(version)},
                    {"guards", guards}, {"builds", builds}, {"verified_on_old_kernel", !olds.empty()}};
      step("compat", {{"ok", both}, {"builds", builds}});
      if (both) {
        fs::remove_all(work, ec);
        if (auto c = util::copy_tree(ctree, work, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
        for (auto& a : rep.accepted)
          for (auto& [f, text] : a.snapshot)
            if (auto orig = util::read_file(req.tree / f); orig) text = compat_merge(*orig, text, guard_for);
      } else {
        rep.ok = false;
        rep.status = "compat-failed";
      }
    }
    if (rep.ok && (req.boot || from)) {
      gate::CheckRequest cr;
      cr.tree = work;
      cr.root = work;  // the copy is laid out already: no search for a root
      cr.subdir = req.subdir;
      cr.kernels = {req.to};
      if (req.compat)
        for (const auto& name : old_names) cr.kernels.push_back(name);
      cr.sparse = false;
      cr.boot = req.boot;
      cr.device = req.device;
      cr.build_cmd = req.build_cmd;
      cr.build_timeout = limit().timeout;
      cr.jobs = cpus;
      if (req.boot) {
        note("boot test on the target");
        auto chk = gate::run_check(cr, nullptr);
        if (!chk) return unexpected(chk.error());
        rep.gates = gate::to_json(*chk, cr);
        step("gates", {{"ok", chk->ok}});
        auto boot_outcome = [](const nlohmann::json& g, const std::string& release) {
          const auto& bk = g["gates"]["boot"]["by_kernel"];
          return bk.is_object() && bk.contains(release) ? util::json_get(bk[release]["details"], "outcome", "") : std::string();
        };
        bool baseline_same = false;
        const std::string outcome = chk->ok ? "" : boot_outcome(rep.gates, to->release);
        if (!chk->ok && from && outcome == "insmod-failed") {
          // A module that the unchanged driver cannot load on its own kernel either (a required
          // parameter, hardware it checks for) says nothing about the port: load it there too.
          note(fmt::format("the module does not load on {}: loading the unchanged driver on {}", to->release, from->release));
          gate::CheckRequest base = cr;
          base.tree = req.from_tree.empty() ? req.tree : req.from_tree;
          base.root = base.tree;
          base.kernels = {req.from};
          if (auto b = gate::run_check(base, nullptr)) {
            const std::string was = boot_outcome(gate::to_json(*b, base), from->release);
            step("baseline-load", {{"kernel", from->release}, {"outcome", was}});
            baseline_same = was == outcome;
            if (baseline_same)
              rep.gates["baseline"] = {{"kernel", from->release}, {"outcome", was},
                                       {"note", "the unchanged driver does not load on its own kernel either: the load "
                                                "test cannot judge the port"}};
          }
        }
        if (!chk->ok && !baseline_same) {
          rep.ok = false;
          rep.status = "gates-failed";
        }
      }
    }
  }
  if (auto w = finish_out(); !w) return unexpected(w.error());
  auto series = write_patch_series(req, rep, scratch->path() / "series");
  if (!series) util::log_info("patch series not written: {}", series.error().message);
  else rep.patches = *series;
  if (!rep.patches.empty()) {
    rep.checkpatch = checkpatch_series(rep.patches, kernel::cached_source(*to));
    step("checkpatch", rep.checkpatch);
  }
  rep.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return rep;
}

nlohmann::json to_json(const PortReport& r, const PortRequest& req) {
  nlohmann::json acc = nlohmann::json::array();
  for (const auto& a : r.accepted) {
    auto e = propose::to_json(a.edit);
    e["errors_before"] = a.errors_before;
    e["errors_after"] = a.errors_after;
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [f, _] : a.snapshot) files.push_back(f);
    e["files"] = files;
    acc.push_back(e);
  }
  return {{"schema", "autodriver.port"},
          {"schema_version", k_port_schema_version},
          {"ok", r.ok},
          {"status", r.status},
          {"tree", fs::absolute(req.subdir.empty() ? req.tree : req.tree / req.subdir).lexically_normal().string()},
          {"root", r.root.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.root.string())},
          {"to", req.to},
          {"from", req.from},
          {"reference", r.reference},
          {"out", req.out.empty() ? "" : fs::absolute(req.out).string()},
          {"initial_errors", r.initial_errors},
          {"final_errors", r.final_errors},
          {"accepted", acc},
          {"remaining", r.remaining},
          {"final_build", r.final_build},
          {"integrity", r.integrity},
          {"gates", r.gates},
          {"compat", r.compat},
          {"changes", r.changes},
          {"patches", r.patches},
          {"checkpatch", r.checkpatch},
          {"steps", r.steps},
          {"elapsed_ms", r.elapsed.count()}};
}

} // namespace autodriver::loop
