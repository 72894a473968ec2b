#include "autodriver/loop/port_session.hpp"

#include "autodriver/loop/boot_crash.hpp"

#include "autodriver/apidiff/apidiff.hpp"
#include "autodriver/gate/build_root.hpp"
#include "autodriver/gate/check.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/loop/api_changes.hpp"
#include "autodriver/loop/compat.hpp"
#include "autodriver/loop/crash_repair.hpp"
#include "autodriver/loop/output_dir.hpp"
#include "autodriver/loop/patch_series.hpp"
#include "autodriver/loop/reference.hpp"
#include "autodriver/loop/trial_objects.hpp"
#include "autodriver/propose/kb/kb_extract.hpp"
#include "autodriver/propose/shared/result_test.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>

namespace autodriver::loop {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

PortSession::PortSession(const PortRequest& request, PortProgressFn progress, PortDeps deps)
    : m_req(request), m_progress(std::move(progress)), m_deps(std::move(deps)), m_start(Clock::now()) {
  if (!m_deps.resolve_kernel) m_deps.resolve_kernel = [](const std::string& name) { return kernel::resolve_kernel(name); };
  if (!m_deps.source)
    m_deps.source = [this](const core::Kernel& k) { return kernel::ensure_source(k, [this](const std::string& m) { note(m); }); };
}

util::Expected<PortReport> PortSession::run() {
  for (auto phase : {&PortSession::locate_root, &PortSession::validate, &PortSession::resolve_kernels, &PortSession::prepare})
    if (auto r = (this->*phase)(); !r) return unexpected(r.error());
  auto done = baseline();
  if (!done) return unexpected(done.error());
  if (*done) return std::move(m_rep);
  reference_for_new_names();
  make_proposers();
  if (auto r = iterate(); !r) return unexpected(r.error());
  if (auto r = conclude(); !r) return unexpected(r.error());
  if (m_cur.ok)
    for (auto phase : {&PortSession::integrity, &PortSession::compat, &PortSession::gates})
      if (auto r = (this->*phase)(); !r) return unexpected(r.error());
  if (auto r = series(); !r) return unexpected(r.error());
  set_elapsed();
  return std::move(m_rep);
}

// ---- helpers ---------------------------------------------------------------------------------

void PortSession::note(const std::string& m) const {
  if (m_progress) m_progress(m);
}

void PortSession::step(const std::string& kind, nlohmann::json data) {
  data["step"] = kind;
  data["t_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - m_start).count();
  if (m_req.on_step) m_req.on_step(data);
  m_rep.steps.push_back(std::move(data));
}

void PortSession::set_elapsed() { m_rep.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - m_start); }

// The headers' own LINUX_VERSION_CODE (Debian's 6.1.0-57 is 6.1.192), not the release string.
long PortSession::code_of(const core::Kernel& k) const {
  long c = propose::linux_version_code(k.build_dir);
  return c ? c : static_cast<long>(k.version_code());
}

// Builds share the machine's CPUs; a build's timeout is --build-timeout, else three times the
// first full build of the target (at least three minutes), never more than the budget left.
BuildLimit PortSession::limit(int share) const {
  BuildLimit l;
  l.jobs = std::max(1, m_cpus / std::max(1, share));
  auto left = std::chrono::duration_cast<std::chrono::seconds>(m_req.budget - (Clock::now() - m_start));
  std::chrono::seconds cap = m_req.build_timeout.count() > 0 ? m_req.build_timeout
                             : m_first_build.count() > 0
                                 ? std::max<std::chrono::seconds>(std::chrono::seconds(180), 3 * m_first_build)
                                 : left;
  l.by_budget = left <= cap;
  l.timeout = std::max<std::chrono::seconds>(std::chrono::seconds(1), std::min(cap, left));
  return l;
}

util::Expected<BuildState> PortSession::build(const core::Kernel& k, const fs::path& tree, const BuildLimit& l,
                                              const std::vector<std::string>& objects) {
  return m_deps.builder->build(k, tree, l, objects);
}

namespace {

/// What an edit writes, as a key (text edits only: an agent's answer has no rule).
std::string text_key(const propose::Edit& e) {
  std::string k;
  for (const auto& te : e.text_edits) k += fmt::format("{}:{}:{}:{}\n{}", te.file, te.line, te.remove, te.text.size(), te.text);
  return k;
}

} // namespace

util::Expected<Trial> PortSession::trial(const std::vector<const propose::Edit*>& edits) {
  if (m_reviewed) {
    auto reviewed = std::move(*m_reviewed);
    m_reviewed.reset();
    if (edits.size() == 1 && edits[0]->smpl.empty() && edits[0]->renames.empty() && !edits[0]->call &&
        reviewed.first == text_key(*edits[0])) {
      reviewed.second.reused = true;
      return std::move(reviewed.second);
    }
  }
  const fs::path scratch = m_scratch->path();
  TrialSetup setup{m_work, scratch, *m_to, *m_deps.builder, m_apply, m_req.subdir};
  return try_edits(edits, setup, limit(), m_cur);
}

// A build cut by its timeout or the budget ends the run with that said, not as a driver error.
void PortSession::cut_short(const BuildState& b, const core::Kernel& k) {
  m_rep.status = b.by_budget ? "budget" : "timeout";
  m_rep.remaining = {fmt::format("the build on {} did not finish within {} s ({})", k.release, b.limit.count(),
                                 b.by_budget ? "the time left in --budget-s" : "--build-timeout")};
  set_elapsed();
}

static nlohmann::json build_json(const BuildState& b) {
  nlohmann::json j{{"ms", b.ms}, {"compiled", b.compiled}, {"timed_out", b.timed_out}, {"timeout_s", b.limit.count()}};
  if (!b.failure.empty()) j["failure"] = b.failure;
  return j;
}

// A trial's step: what was tried, its errors, and where its time went.
void PortSession::tried(nlohmann::json data, const Trial& t) {
  data.update({{"errors_before", m_cur.error_count()},
               {"errors_after", t.applied ? t.state.error_count() : -1},
               {"build_ms", t.reused ? 0 : t.state.ms},
               {"reused", t.reused},
               {"compiled", t.state.compiled},
               {"objects_only", t.state.objects_only},
               {"copy_ms", t.copy_ms},
               {"apply_ms", t.apply_ms}});
  step("try", std::move(data));
}

// The trial's built copy becomes the work tree (its objects are the next trials' start).
util::Expected<void> PortSession::adopt(Trial& t) {
  std::error_code ec;
  if (!t.tree.empty()) {
    fs::remove_all(m_work, ec);
    fs::rename(t.tree, m_work, ec);
    if (!ec) return {};
    util::log_debug("cannot move {} to {}: {}", t.tree.string(), m_work.string(), ec.message());
    if (auto c = util::copy_tree(t.tree, m_work, util::SkipBuildProducts::no); c) return {};
  }
  return write_snapshot(m_work, t.snapshot);
}

// One edit's trial kept on the work tree: its files, the accepted edit with its snapshot, the new
// build state.
util::Expected<void> PortSession::keep_trial(const propose::Edit& e, Trial& t, int iter) {
  if (auto w = adopt(t); !w) return unexpected(w.error());
  m_rep.accepted.push_back({e, t.snapshot, m_cur.error_count(), t.state.error_count(), m_rep.accepted.size(), 1});
  m_settled.insert(e.change_id);
  step("accept", {{"iteration", iter}, {"change", e.change_id}, {"proposer", e.proposer}, {"title", e.title}});
  m_cur = std::move(t.state);
  return follow_up(e.change_id, iter);
}

util::Expected<void> PortSession::follow_up(const std::string& change_id, int iter) {
  auto it = m_follow_ups.find(change_id);
  if (it == m_follow_ups.end()) return {};
  auto follow = std::move(it->second);
  m_follow_ups.erase(it);
  for (const auto& f : follow) {
    if (m_settled.count(f.change_id) || over_budget()) continue;
    auto t = trial({&f});
    if (!t) return unexpected(t.error());
    tried({{"iteration", iter}, {"change", f.change_id}, {"follows", change_id}, {"proposer", f.proposer}}, *t);
    if (!t->applied || !adds_no_error(m_cur, t->state) || trial_score(m_cur, t->state) > m_cur.score() ||
        (m_cur.ok && !t->state.ok)) {
      m_settled.insert(f.change_id);
      step("reject", {{"iteration", iter}, {"change", f.change_id}, {"follows", change_id}});
      continue;
    }
    if (auto k = keep_trial(f, *t, iter); !k) return k;
  }
  return {};
}

// `m_cur` is the build of a trial copy identical to the work tree: no rebuild needed.
void PortSession::end_iteration(int iter) {
  step("build-target", {{"iteration", iter}, {"ok", m_cur.ok}, {"errors", diag_list(m_cur.errors)}});
  if (m_cur.ok && m_rep.modules.empty()) m_rep.modules = m_cur.modules;
}

// A header judged by a sample of its users leaves the other files' diagnostics as they were: one
// full build (incremental: the users of what changed) before they are read again.
util::Expected<void> PortSession::refresh(int iter) {
  if (!m_cur.sampled) return {};
  note("rebuilding the module: a changed header was judged by some of the files that include it");
  auto full = build(*m_to, m_work, limit());
  if (!full) return unexpected(full.error());
  auto j = build_json(*full);
  j.update({{"iteration", iter}, {"ok", full->ok}, {"refresh", true}, {"errors", diag_list(full->errors)}});
  step("build-target", j);
  m_cur = std::move(*full);
  return {};
}

// OUT/tree and OUT/patches appear whole or not at all: each is written beside its place and
// renamed into it, and a failure (a full disk) removes what was half-written.
util::Expected<void> PortSession::finish_out(const fs::path& patches) {
  std::error_code ec;
  fs::create_directories(m_req.out, ec);
  std::vector<std::pair<fs::path, fs::path>> staged{{m_req.out / ".tree.partial", m_req.out / "tree"}};
  if (!patches.empty()) staged.emplace_back(m_req.out / ".patches.partial", m_req.out / "patches");
  auto undo = [&](const util::Error& e) -> util::Expected<void> {
    std::error_code rm;
    for (const auto& [part, place] : staged) {
      fs::remove_all(part, rm);
      fs::remove_all(place, rm);
    }
    return unexpected(e.kind, fmt::format("writing {}: {}", m_req.out.string(), e.message));
  };
  if (auto c = util::copy_tree(m_work, staged[0].first, util::SkipBuildProducts::yes); !c) return undo(c.error());
  if (!patches.empty())
    if (auto c = util::copy_tree(patches, staged[1].first, util::SkipBuildProducts::no); !c) return undo(c.error());
  for (const auto& [part, place] : staged) {
    fs::rename(part, place, ec);
    if (ec) return undo(util::make_error(ErrorKind::io, fmt::format("cannot rename {}: {}", part.string(), ec.message())));
  }
  return {};
}

// ---- phases before the loop ------------------------------------------------------------------

// From here on `tree` is what is copied: the driver's folder, or a root holding it and the
// folders its build files name (m_req.subdir: where the driver is in it).
util::Expected<void> PortSession::locate_root() {
  if (!m_req.subdir.empty()) return {};
  std::error_code ec;
  const PortRequest given = m_req;
  auto located = gate::find_build_root(given.tree, given.root);
  if (!located) return unexpected(located.error());
  for (const auto& line : gate::describe(*located, given.tree)) note(line);
  m_req.tree = located->root;
  m_req.subdir = located->subdir;
  if (m_req.subdir.empty() || m_req.from_tree.empty()) return {};
  // The driver's folder of a tree laid out like the root: the same root around it.
  fs::path from_root = fs::absolute(m_req.from_tree).lexically_normal();
  for (auto it = m_req.subdir.begin(); it != m_req.subdir.end(); ++it) from_root = from_root.parent_path();
  if ((from_root / m_req.subdir).lexically_normal() != fs::absolute(m_req.from_tree).lexically_normal() ||
      !fs::is_directory(from_root / m_req.subdir, ec))
    return unexpected(ErrorKind::config,
                      fmt::format("{}: the tree built on the old kernel is not laid out like {} (the driver at {})",
                                  m_req.from_tree.string(), m_req.tree.string(), m_req.subdir.string()));
  m_req.from_tree = from_root;
  return {};
}

util::Expected<void> PortSession::validate() {
  // Once the root is known: the build runs in the driver's place in it.
  if (!m_deps.builder) m_deps.builder = make_kbuild_builder(m_req.build_cmd, m_req.subdir);
  const fs::path driver_dir = m_req.subdir.empty() ? m_req.tree : m_req.tree / m_req.subdir;
  if (auto loop = util::refuse_symlink_loop(m_req.tree); !loop) return unexpected(loop.error());
  if (m_req.build_cmd.empty() && !gate::has_kbuild_makefile(driver_dir))
    return unexpected(ErrorKind::config,
                      fmt::format("{}: no Makefile or Kbuild (give --build-cmd if it builds another way)", driver_dir.string()));
  if (m_req.out.empty()) return unexpected(ErrorKind::config, "no output directory (-o OUT)");
  // The rule packs: a malformed rule file is bad input, said before anything runs.
  auto rules = propose::load_rules(m_req.rule_packs, m_req.rule_dirs);
  if (!rules) return unexpected(ErrorKind::config, rules.error().message);
  m_rules = std::move(*rules);
  m_tree_abs = fs::weakly_canonical(m_req.tree);
  if (auto o = check_output_dir(m_req.out, {m_tree_abs}); !o) return unexpected(o.error());
  if (!m_req.subdir.empty()) m_rep.root = m_tree_abs;
  return {};
}

util::Expected<void> PortSession::resolve_kernels() {
  auto resolve = [&](const std::string& name, const std::string& what) -> util::Expected<core::Kernel> {
    auto k = m_deps.resolve_kernel(name);
    if (!k)
      return what.empty() ? unexpected(k.error())
                          : unexpected(ErrorKind::config, fmt::format("{}{}: {}", what, name, k.error().message));
    if (!k->has_headers())
      return unexpected(ErrorKind::not_found,
                        fmt::format("{}kernel {}: no build directory: run `autodriver kernel fetch {}`", what, name, name));
    return kernel::with_build_deps(std::move(*k), m_req.build_deps, [&](const std::string& m) { note(m); });
  };
  auto to = resolve(m_req.to, "");
  if (!to) return unexpected(to.error());
  m_to = *to;
  // Edits never touch the branches of `#if LINUX_VERSION_CODE` blocks the target rules out.
  m_apply = propose::ApplyOptions{propose::linux_version_code(m_to->build_dir), std::nullopt};
  if (!m_req.from.empty()) {
    auto f = resolve(m_req.from, "");
    if (!f) return unexpected(f.error());
    m_from = *f;
    m_olds.push_back(*m_from), m_old_names.push_back(m_req.from);
  }
  // --compat K: older kernels the result must keep building on, besides --from.
  for (const auto& name : m_req.compat_kernels) {
    auto k = resolve(name, "--compat ");
    if (!k) return unexpected(k.error());
    if (std::none_of(m_olds.begin(), m_olds.end(), [&](const core::Kernel& o) { return o.build_dir == k->build_dir; }) &&
        k->build_dir != m_to->build_dir)
      m_olds.push_back(*k), m_old_names.push_back(name);
  }
  // A guard sends every older kernel to the old code: the newest of them bounds it.
  for (const auto& o : m_olds) m_newest_old = std::max(m_newest_old, code_of(o));
  if (m_req.compat && m_newest_old >= code_of(*m_to))
    return unexpected(ErrorKind::config, "--compat: every kernel kept building must be older than the target");
  if (m_req.boot && !m_to->has_image())
    return unexpected(
        ErrorKind::not_found,
        fmt::format("kernel {}: the image is not in the cache: run `autodriver kernel fetch {}`", m_req.to, m_req.to));
  return {};
}

// The scratch folder with the work tree, and the kernel sources the proposers learn from: the
// target's always (header-fix needs it), the old kernel's when known, else a reference.
util::Expected<void> PortSession::prepare() {
  auto scratch = gate::make_scratch("port-");
  if (!scratch) return unexpected(scratch.error());
  m_scratch.emplace(std::move(*scratch));
  m_work = m_scratch->path() / "work";
  m_from_tree = m_scratch->path() / "from-tree";
  if (auto c = util::copy_tree(m_req.tree, m_work, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
  m_cpus = m_req.jobs > 0 ? m_req.jobs : util::available_cpus();
  m_ctx.to = &*m_to;
  m_ctx.from = m_from ? &*m_from : nullptr;
  m_ctx.leave_out = m_req.leave_out;
  m_ctx.tree = m_work;
  m_ctx.original_tree = m_req.tree;
  m_ctx.scratch = m_scratch->path() / "proposers";
  m_ctx.kb_leave_out = m_req.kb_leave_out;
  m_ctx.kb_path = m_req.kb_path;
  if (m_req.store_kb) m_ctx.store = m_req.kb_store;
  m_ctx.case_id = m_req.case_id;
  m_ctx.rules = &m_rules;
  m_ctx.deadline = m_start + m_req.budget;
  if (auto s = m_deps.source(*m_to); s) m_ctx.new_src = *s;
  else util::log_info("no source tree for {}: {}", m_req.to, s.error().message);
  if (m_from) {
    if (auto s = m_deps.source(*m_from); s) m_ctx.old_src = *s;
    else util::log_info("no source tree for {}: {}", m_req.from, s.error().message);
    return {};
  }
  if (!m_req.reference) return {};
  // The driver's old kernel is unknown: the newest older kernel line whose source Debian has
  // (downloaded into the cache on demand, never installed) still shows how the kernel's own
  // drivers followed each change since (learned-rewrite, inline-removed).
  auto rk = kernel::reference_kernel(*m_to);
  if (!rk) return {};
  if (auto s = m_deps.source(*rk); s) {
    m_ctx.old_src = *s;
    step("reference", {{"kernel", rk->release}, {"source", s->string()}});
    m_rep.reference = rk->release;
    note(fmt::format("no --from: learning from {}'s source as a reference (never built against)", rk->release));
  } else {
    util::log_info("no reference source ({}): {}", rk->line, s.error().message);
  }
  return {};
}

// The target's build of the unchanged tree first, with every CPU. The old kernel's build of it
// only tells a driver that never built apart from a port that could not finish: it runs when the
// port ends without a build (a big tree's second full build would otherwise double the port).
util::Expected<bool> PortSession::baseline() {
  note(fmt::format("building the unchanged tree on {}", m_to->release));
  // apidiff builds its own copies, so it runs beside the target's build.
  std::future<util::Expected<apidiff::ApidiffReport>> api_diff;
  if (m_from && m_req.api_changes)
    api_diff = std::async(std::launch::async, [this, timeout = limit(2).timeout]() {
      apidiff::ApidiffRequest ar{m_req.tree, *m_from, *m_to, m_req.build_cmd, timeout, {}, m_req.subdir};
      return apidiff::run_apidiff(ar);
    });
  auto cur = build(*m_to, m_work, limit(api_diff.valid() ? 2 : 1));
  if (!cur) return unexpected(cur.error());
  m_cur = std::move(*cur);
  m_rep.initial_errors = m_cur.error_count();
  auto j = build_json(m_cur);
  j.update({{"kernel", m_to->release}, {"ok", m_cur.ok}, {"errors", diag_list(m_cur.errors)}});
  step("build-target", j);
  if (m_cur.timed_out) {
    cut_short(m_cur, *m_to);
    return true;
  }
  // Trials are measured against this build (beside the old kernel's build it took longer than alone).
  m_first_build = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::milliseconds(m_cur.ms));
  m_original_diags = m_cur.all;
  if (api_diff.valid()) {
    if (auto ad = api_diff.get(); ad) m_rep.changes = changes_for_diagnostics(ad->changes, m_cur.errors);
    else util::log_info("apidiff: {}", ad.error().message);
  }
  if (!m_cur.ok) return false;
  m_rep.status = "already-builds";
  m_rep.ok = true;
  if (auto w = finish_out({}); !w) return unexpected(w.error());
  set_elapsed();
  return true;
}

void PortSession::make_proposers() {
  if (m_deps.proposers) return;
  m_deps.proposers.emplace();
  for (const auto& entry : propose::proposer_table())
    if (m_req.proposers.empty() || std::find(m_req.proposers.begin(), m_req.proposers.end(), entry.id) != m_req.proposers.end())
      m_deps.proposers->push_back({entry.make(), entry.alone_first});
}

std::vector<propose::Edit> PortSession::agent_edits(int iter) {
  if (!m_req.llm.on() || m_cur.ok) return {};
  if (!m_agent) {
    propose::AgentSettings s;
    s.endpoint.base_url = m_req.llm.url;
    s.endpoint.model = m_req.llm.model;
    s.endpoint.key_env = m_req.llm.key_env;
    s.budget_tokens = m_req.llm.budget_tokens;
    s.max_cost = m_req.llm.max_cost;
    s.price_in = m_req.llm.price_in;
    s.price_out = m_req.llm.price_out;
    s.max_attempts = m_req.llm.attempts;
    s.stream = m_req.llm.stream;
    s.api_changes = m_rep.changes;
    s.review = [this](const propose::Edit& e) { return review_agent_edit(e); };
    m_agent.emplace(std::move(s));
  }
  if (m_agent->spent()) return {};
  m_iter = iter;
  note(fmt::format("iteration {}: asking {} about {} error(s) the rules left", iter, m_req.llm.model, m_cur.error_count()));
  auto es = m_agent->propose(m_cur.all, m_ctx);
  for (auto& e : es) propose::fill_expectations(e, m_work);
  nlohmann::json round = m_agent->log().rounds.empty() ? nlohmann::json::object() : m_agent->log().rounds.back();
  round["iteration"] = iter;
  round["model"] = m_req.llm.model;
  step("agent", round); // its "ms" is the round's own duration, tokens_in/out its tokens
  m_rep.llm = m_agent->log().to_json();
  if (round.contains("error")) note("the model's round gave nothing: " + round["error"].get<std::string>());
  return es;
}

namespace {

/// The name an edit is about: its first symbol that is not a type ("struct bio" names the struct
/// of a member edit, whose member comes next).
std::string subject_of(const propose::Edit& e) {
  for (const auto& s : e.symbols)
    if (s.find(' ') == std::string::npos) return s;
  return {};
}

/// Of two edits of one round (one vector), the one with stated evidence (a rule file, a kernel
/// definition, learned sites) before a guess, then the earlier one (the proposer table's order).
bool prefer(const propose::Edit* a, const propose::Edit* b) {
  if (a->evidence.empty() != b->evidence.empty()) return b->evidence.empty();
  return std::less<const propose::Edit*>()(a, b);
}

/// The best alternative of every change, but one per name: two proposers' answers for the same
/// name applied in one batch leave whichever applies first, whatever it rests on. The one with
/// stated evidence (a rule file, a kernel definition, learned sites) goes in before a guess, then
/// the proposer table's order; the others stay alternatives for the one-at-a-time path. The batch
/// keeps the groups' order.
std::vector<const propose::Edit*> one_per_subject(const std::map<std::string, std::vector<const propose::Edit*>>& groups) {
  std::map<std::string, const propose::Edit*> winner;
  for (const auto& [id, g] : groups)
    if (auto s = subject_of(*g.front()); !s.empty())
      if (auto it = winner.find(s); it == winner.end() || prefer(g.front(), it->second)) winner[s] = g.front();
  std::vector<const propose::Edit*> out;
  for (const auto& [id, g] : groups) {
    auto s = subject_of(*g.front());
    if (s.empty() || winner[s] == g.front()) out.push_back(g.front());
  }
  return out;
}

/// The lines an edit wrote, per file: [line, line + number of its lines).
bool on_edited_line(const propose::Edit& e, const core::Diagnostic& d) {
  for (const auto& te : e.text_edits) {
    const int n = static_cast<int>(std::count(te.text.begin(), te.text.end(), '\n'));
    if (te.file == d.file && d.line >= te.line && d.line < te.line + std::max(1, n)) return true;
  }
  return false;
}

std::string diag_text(const core::Diagnostic& d) {
  return std::string(util::trim(d.raw.empty() ? fmt::format("{}:{}: {}", d.file, d.line, d.message) : d.raw)).substr(0, 400);
}

} // namespace

propose::Review PortSession::review_agent_edit(const propose::Edit& proposed) {
  propose::Review r;
  if (over_budget()) {
    r.error = "the run's time budget is spent";
    r.stop = true;
    return r;
  }
  propose::Edit e = proposed;
  propose::fill_expectations(e, m_work);
  auto t = trial({&e});
  if (!t) {
    r.error = t.error().describe();
    r.stop = t.error().kind == ErrorKind::interrupted;
    return r;
  }
  tried({{"iteration", m_iter}, {"change", e.change_id}, {"proposer", e.proposer}, {"review", true}}, *t);
  r.applied = t->applied;
  if (!r.applied) {
    r.error = "the edit did not apply to the work tree";
    return r;
  }
  r.ok = t->state.ok;
  r.errors_before = m_cur.error_count();
  r.errors_after = t->state.error_count();
  r.score = trial_score(m_cur, t->state);
  r.progressed = r.score < m_cur.score();
  for (const auto& d : t->state.errors) {
    auto& into = m_cur.signatures.count(error_signature(d)) ? r.remaining : r.new_errors;
    if (into.size() < 6) into.push_back(diag_text(d));
  }
  std::set<std::string> files, known;
  for (const auto& te : e.text_edits) files.insert(te.file);
  for (const auto& d : m_cur.all)
    if (d.severity == core::Severity::warning) known.insert(d.file + "|" + d.message);
  for (const auto& d : t->state.all)
    if (d.severity == core::Severity::warning && files.count(d.file) && !known.count(d.file + "|" + d.message) &&
        r.warnings.size() < 6)
      r.warnings.push_back(diag_text(d));
  if (r.ok)
    if (auto sp = m_deps.builder->sparse(*m_to, t->tree, limit(), t->state.all); sp)
      for (const auto& d : *sp)
        if (on_edited_line(e, d) && r.warnings.size() < 8) r.warnings.push_back("sparse: " + diag_text(d));
  for (const auto& v : gate::check_integrity(integrity_input(t->tree)).violations)
    if (files.count(v.file) && r.findings.size() < 6)
      r.findings.push_back(fmt::format("{} {}:{}: {}", v.rule, v.file, v.line, v.detail));
  m_reviewed.emplace(text_key(e), std::move(*t));
  return r;
}

// ---- the loop --------------------------------------------------------------------------------

// Without --from, the reference is chosen for the names the target lacks; a name gcc reports only
// once an earlier error is gone (a missing header stops it before any undeclared function) asks
// again, so a reference that no longer declares it is not kept for it.
void PortSession::reference_for_new_names() {
  if (m_from || m_rep.reference.empty()) return;
  std::size_t before = m_reference_asked.size();
  for (const auto& d : m_cur.errors)
    if (d.kind == core::DiagKind::implicit_function_declaration || d.kind == core::DiagKind::undeclared_identifier)
      m_reference_asked.insert(d.symbols.begin(), d.symbols.end());
  if (before && m_reference_asked.size() == before) return;
  choose_reference(
      *m_to, m_cur.errors, m_ctx, m_rep, [this](const std::string& m) { note(m); },
      [this](const std::string& k, nlohmann::json d) { step(k, std::move(d)); });
}

util::Expected<void> PortSession::iterate() {
  m_rep.status = "no-progress";
  for (int iter = 1; iter <= m_req.max_iters && !m_cur.ok; ++iter) {
    if (util::interrupted()) return unexpected(ErrorKind::interrupted, "interrupted");
    if (over_budget()) {
      m_rep.status = "budget";
      break;
    }
    if (auto r = refresh(iter); !r) return unexpected(r.error());
    if (m_cur.ok) break;
    if (iter > 1) reference_for_new_names();
    auto edits = propose_edits(iter);
    if (!edits) return unexpected(edits.error());
    note(fmt::format("iteration {}: {} error(s), {} candidate edit(s)", iter, m_cur.error_count(), edits->size()));
    bool asked_agent = false;
    if (edits->empty()) {
      *edits = agent_edits(iter);
      asked_agent = true;
      if (edits->empty()) break;
    }
    auto switched = alone_first(*edits, iter);
    if (!switched) return unexpected(switched.error());
    if (*switched) {
      end_iteration(iter);
      continue;
    }
    if (edits->empty()) break;
    // Group alternatives by change; best first.
    EditGroups groups;
    for (const auto& e : *edits) groups[e.change_id].push_back(&e);
    for (auto& [id, g] : groups)
      std::stable_sort(g.begin(), g.end(),
                       [](auto* a, auto* b) { return a->rank != b->rank ? a->rank < b->rank : a->support > b->support; });
    m_progressed = false;
    // Fast path: the best alternative of every change at once.
    std::vector<const propose::Edit*> firsts = one_per_subject(groups);
    if (firsts.size() > 1)
      if (auto r = combined(firsts, 0, iter); !r) return unexpected(r.error());
    if (!m_progressed)
      if (auto r = singles(groups, iter); !r) return unexpected(r.error());
    // The rules' edits all failed: the model gets the errors as they are.
    std::vector<propose::Edit> more;
    if (!m_progressed && !asked_agent) more = agent_edits(iter);
    if (!more.empty()) {
      EditGroups extra;
      for (const auto& e : more) extra[e.change_id].push_back(&e);
      if (auto r = singles(extra, iter); !r) return unexpected(r.error());
    }
    if (!m_progressed) break;
    end_iteration(iter);
  }
  return {};
}

util::Expected<std::vector<propose::Edit>> PortSession::propose_edits(int iter) {
  m_follow_ups.clear();
  // Rules read the C files the build compiles (and headers): not another platform's files.
  if (m_deps.builder->single_objects()) m_apply.compiled = compiled_units(m_work, m_cur.all, m_req.subdir);
  std::vector<propose::Edit> edits;
  for (auto& lp : *m_deps.proposers) {
    auto t0 = Clock::now();
    auto es = lp.proposer->propose(m_cur.all, m_ctx);
    step("propose", {{"iteration", iter},
                     {"proposer", lp.proposer->id()},
                     {"edits", es.size()},
                     {"ms", std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()}});
    for (auto& e : es) {
      if (m_settled.count(e.change_id)) continue;
      propose::fill_expectations(e, m_work);
      if (!e.follows.empty()) {
        m_follow_ups[e.follows].push_back(std::move(e));
        continue;
      }
      if (lp.alone_first) m_alone_first.insert(e.change_id);
      edits.push_back(std::move(e));
    }
  }
  add_result_follow_ups(edits);
  return edits;
}

// A call's replacement may report failure in another convention than the call it replaces
// (alloc_tty_driver() returned NULL, tty_alloc_driver() an ERR_PTR): for each edit that makes the
// driver call another function, the driver's tests of the result follow the target's callers of
// the new one, as a follow-up of that edit (never tried alone).
void PortSession::add_result_follow_ups(const std::vector<propose::Edit>& edits) {
  if (m_ctx.new_src.empty()) return;
  std::optional<propose::TargetIndex> idx;
  for (const auto& e : edits) {
    std::vector<std::pair<std::string, std::string>> calls = e.renames;
    if (e.call && e.call->from != e.call->to) calls.emplace_back(e.call->from, e.call->to);
    for (const auto& [from, to] : calls) {
      if (from == to || from.empty() || to.empty()) continue;
      auto& have = m_follow_ups[e.change_id];
      if (std::any_of(have.begin(), have.end(), [&](const propose::Edit& f) { return f.change_id == "result:" + to; })) continue;
      if (!idx) idx.emplace(m_ctx.new_src, m_ctx.to ? m_ctx.to->build_dir : std::filesystem::path());
      if (auto r = propose::result_follow_up(*idx, m_work, from, to, e.change_id)) {
        propose::fill_expectations(*r, m_work);
        have.push_back(std::move(*r));
      }
    }
  }
}

// Edits of an alone-first proposer (the driver's own feature switches), each alone: a switch
// changes which code compiles, so the other proposals may be for code it switches off (a rename
// in the #else branch it retires); after one is kept the next iteration diagnoses the new build.
util::Expected<bool> PortSession::alone_first(std::vector<propose::Edit>& edits, int iter) {
  bool switched = false;
  for (auto it = edits.begin(); it != edits.end();) {
    if (!m_alone_first.count(it->change_id)) {
      ++it;
      continue;
    }
    auto t = trial({&*it});
    if (!t) return unexpected(t.error());
    tried({{"iteration", iter}, {"change", it->change_id}, {"rank", it->rank}, {"proposer", it->proposer}}, *t);
    m_settled.insert(it->change_id);
    if (t->applied && trial_score(m_cur, t->state) < m_cur.score()) {
      if (auto k = keep_trial(*it, *t, iter); !k) return unexpected(k.error());
      switched = true;
      if (m_cur.ok) break;
    } else {
      step("reject", {{"iteration", iter}, {"change", it->change_id}});
    }
    it = edits.erase(it);
  }
  return switched;
}

// A set of changes is accepted together when it lowers the score without any new error. When it
// lowers the score but brings new errors, the set holds good and bad changes: the edits that
// touched the functions of the new errors are dropped once, and its halves are tried (at most
// three levels deep) before falling back to one change at a time.
util::Expected<void> PortSession::combined(const std::vector<const propose::Edit*>& set, int depth, int iter) {
  if (set.size() < 2 || over_budget()) return {};
  auto t = trial(set);
  if (!t) return unexpected(t.error());
  bool no_new = adds_no_error(m_cur, t->state);
  bool better = t->applied && trial_score(m_cur, t->state) < m_cur.score();
  tried({{"iteration", iter}, {"changes", set.size()}, {"combined", true}, {"depth", depth}}, *t);
  if (better && no_new) return accept_set(set, *t, iter);
  if (better && !no_new && depth == 0) {
    // A near miss: drop the edits that touched the functions where the new errors are (a body
    // retyped for one callback exposing another change) and try the rest once.
    std::set<std::string> new_at;
    for (const auto& d : t->state.errors)
      if (!m_cur.signatures.count(error_signature(d))) new_at.insert(d.file + "|" + d.function);
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
      note(fmt::format("{} of {} changes touched the functions of the new errors: trying the other {}", set.size() - rest.size(),
                       set.size(), rest.size()));
      bool before = m_progressed;
      if (auto r = combined(rest, depth + 1, iter); !r) return r;
      if (m_progressed && !before) return {};
    }
  }
  if (!better || depth >= 3 || set.size() < 4) return {};
  std::vector<const propose::Edit*> lo(set.begin(), set.begin() + static_cast<long>(set.size() / 2));
  std::vector<const propose::Edit*> hi(set.begin() + static_cast<long>(set.size() / 2), set.end());
  if (auto r = combined(lo, depth + 1, iter); !r) return r;
  return combined(hi, depth + 1, iter);
}

// Re-apply the set one edit at a time on the work tree to record one snapshot (patch) per change;
// they share the trial's figures.
util::Expected<void> PortSession::accept_set(const std::vector<const propose::Edit*>& set, Trial& t, int iter) {
  int before = m_cur.error_count();
  const std::size_t group = m_rep.accepted.size();
  for (const auto* e : set) {
    auto one = propose::apply_edit(*e, m_work, m_scratch->path() / "rules", m_apply);
    if (!one || one->changed_files.empty()) continue;
    AcceptedEdit acc{*e, {}, before, t.state.error_count(), group, 1};
    for (const auto& f : one->changed_files)
      if (auto text = util::read_file(m_work / f); text) acc.snapshot.push_back({f, *text});
    m_rep.accepted.push_back(std::move(acc));
    m_settled.insert(e->change_id);
    step("accept", {{"iteration", iter}, {"change", e->change_id}, {"proposer", e->proposer}, {"title", e->title}});
  }
  for (std::size_t k = group; k < m_rep.accepted.size(); ++k) m_rep.accepted[k].group_size = m_rep.accepted.size() - group;
  if (auto w = adopt(t); !w) return unexpected(w.error());
  m_cur = std::move(t.state);
  m_progressed = true;
  for (const auto* e : set)
    if (auto f = follow_up(e->change_id, iter); !f) return f;
  return {};
}

// One change at a time, alternatives in order; keep the best that helps (a near miss that removes
// more errors than it adds is kept and refined by the next iteration).
util::Expected<void> PortSession::singles(EditGroups& groups, int iter) {
  // In the order the batch prefers (stated evidence before a guess, then the proposer table's),
  // so that of two proposers' answers for one name the better is tried first.
  std::vector<EditGroups::value_type*> order;
  for (auto& kv : groups) order.push_back(&kv);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return prefer(a->second.front(), b->second.front()); });
  // Every change's alternatives with stated evidence first, its guesses (a similar name, an
  // argument by type) only after: a learned change whose alternatives changed nothing must not let
  // its guess in before another proposer's rule for the same name.
  // A name one change fixed is not tried again by another's.
  std::set<std::string> fixed;
  for (bool guesses : {false, true})
    for (auto* kv : order) {
      std::vector<const propose::Edit*> part;
      for (const auto* e : kv->second)
        if (e->evidence.empty() == guesses) part.push_back(e);
      const std::string subject = subject_of(*kv->second.front());
      if (part.empty() || m_settled.count(kv->first) || (!subject.empty() && fixed.count(subject))) continue;
      if (over_budget()) return {};
      const std::size_t kept = m_rep.accepted.size();
      if (auto r = single_change(kv->first, part, iter); !r) return r;
      if (m_rep.accepted.size() > kept && !subject.empty()) fixed.insert(subject); // kept: that name is done
      if (m_cur.ok) return {};
    }
  return {};
}

util::Expected<void> PortSession::single_change(const std::string& id, const std::vector<const propose::Edit*>& alternatives,
                                                int iter) {
  const propose::Edit* best = nullptr;
  std::optional<Trial> best_trial;
  const propose::Edit* needs_include = nullptr; // fixed its errors, brought only undeclared names
  std::vector<core::Diagnostic> needed;
  int tries = 0;
  for (const auto* e : alternatives) {
    if (++tries > 3) break;
    auto t = trial({e});
    if (!t) return unexpected(t.error());
    tried({{"iteration", iter}, {"change", id}, {"rank", e->rank}, {"proposer", e->proposer}}, *t);
    if (!t->applied) continue;
    if (!needs_include && !t->state.ok) {
      std::vector<core::Diagnostic> fresh;
      bool only_names = true;
      for (const auto& d : t->state.errors)
        if (!m_cur.signatures.count(error_signature(d))) {
          fresh.push_back(d);
          only_names = only_names && (d.kind == core::DiagKind::implicit_function_declaration ||
                                      d.kind == core::DiagKind::undeclared_identifier);
        }
      bool fixed_some = std::any_of(m_cur.errors.begin(), m_cur.errors.end(),
                                    [&](const auto& d) { return !t->state.signatures.count(error_signature(d)); });
      if (only_names && fixed_some && !fresh.empty()) {
        needs_include = e;
        needed = std::move(fresh);
      }
    }
    bool clean = adds_no_error(m_cur, t->state);
    if (trial_score(m_cur, t->state) < m_cur.score() &&
        (!best_trial || trial_score(m_cur, t->state) < trial_score(m_cur, best_trial->state))) {
      best = e;
      best_trial = std::move(*t);
    }
    // First improvement that adds no new error wins: alternatives cost a build each.
    if (best && clean && best == e) break;
  }
  std::optional<propose::Edit> merged;
  if (!best && needs_include && !over_budget()) {
    auto t = with_include(id, *needs_include, needed, iter, merged);
    if (!t) return unexpected(t.error());
    if (*t) {
      best = &*merged;
      best_trial = std::move(**t);
    }
  }
  if (!best) {
    m_settled.insert(id);
    step("reject", {{"iteration", iter}, {"change", id}});
    return {};
  }
  if (auto k = keep_trial(*best, *best_trial, iter); !k) return unexpected(k.error());
  m_progressed = true;
  return {};
}

// An edit whose only new errors are names a kernel header it now reaches uses without including
// their header (6.12's <asm/intel-family.h> uses VFM_MAKE of <asm/cpu_device_id.h>): tried once
// more with the include header-fix finds for them. Returns the trial when it helps.
util::Expected<std::optional<Trial>> PortSession::with_include(const std::string& id, const propose::Edit& edit,
                                                               const std::vector<core::Diagnostic>& needed, int iter,
                                                               std::optional<propose::Edit>& merged) {
  std::error_code ec;
  std::optional<Trial> out;
  fs::path probe = m_scratch->path() / "needs-include";
  fs::remove_all(probe, ec);
  if (util::copy_tree(m_work, probe, util::SkipBuildProducts::yes) &&
      propose::apply_edit(edit, probe, m_scratch->path() / "rules", m_apply)) {
    auto pctx = m_ctx;
    pctx.tree = probe;
    auto fixes = propose::make_header_fix()->propose(needed, pctx);
    if (!fixes.empty()) {
      propose::fill_expectations(fixes.front(), probe);
      merged = edit;
      for (const auto& te : fixes.front().text_edits) merged->text_edits.push_back(te);
      merged->title += "; " + fixes.front().title;
      merged->description += " " + fixes.front().description;
      for (const auto& sym : fixes.front().symbols) merged->symbols.push_back(sym);
      auto t = trial({&*merged});
      if (!t) return unexpected(t.error());
      tried({{"iteration", iter}, {"change", id}, {"with", fixes.front().change_id}}, *t);
      if (t->applied && trial_score(m_cur, t->state) < m_cur.score()) out = std::move(*t);
    }
  }
  fs::remove_all(probe, ec);
  return out;
}

// ---- after the loop --------------------------------------------------------------------------

util::Expected<void> PortSession::conclude() {
  if (auto r = refresh(0); !r) return unexpected(r.error());
  if (m_cur.timed_out) cut_short(m_cur, *m_to);
  m_rep.final_errors = m_cur.error_count();
  m_rep.remaining = distinct_errors(m_cur.errors);
  m_rep.final_build = {{"ok", m_cur.ok}, {"kernel", m_to->release}, {"errors", diag_list(m_cur.errors)}};
  // No build on the target: does the unchanged driver build on its own kernel? If not, the port
  // had nothing sound to start from, and the verdict says so (its errors there are the remaining).
  if (m_cur.ok || !m_from || m_rep.status != "no-progress") return {};
  const fs::path& from_src = m_req.from_tree.empty() ? m_req.tree : m_req.from_tree;
  if (auto c = util::copy_tree(from_src, m_from_tree, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
  note(fmt::format("building the unchanged tree on {}", m_from->release));
  auto f = build(*m_from, m_from_tree, limit());
  if (!f) return unexpected(f.error());
  auto j = build_json(*f);
  j.update({{"kernel", m_from->release}, {"ok", f->ok}, {"errors", diag_list(f->errors)}});
  step("build-from", j);
  m_from_built = true;
  if (f->timed_out) {
    cut_short(*f, *m_from);
  } else if (!f->ok) {
    m_rep.status = "from-fails";
    m_rep.remaining = distinct_errors(f->errors);
  }
  return {};
}

gate::IntegrityInput PortSession::integrity_input(const fs::path& candidate) const {
  gate::IntegrityInput ii;
  ii.original = m_req.tree;
  ii.candidate = candidate;
  ii.diagnostics = m_original_diags;
  // The symbols whose API changed (as the accepted edits say) may be rewritten wherever they
  // occur, not only on the lines gcc reported (gcc reports an implicit declaration once).
  for (const auto& a : m_rep.accepted)
    for (const auto& sym : a.edit.symbols)
      if (sym.find(' ') == std::string::npos) ii.removed_symbols.push_back(sym);
  return ii;
}

util::Expected<void> PortSession::integrity() {
  const gate::IntegrityInput ii = integrity_input(m_work);
  auto integ = gate::check_integrity(ii);
  bool only_unrelated = !integ.ok && std::all_of(integ.violations.begin(), integ.violations.end(),
                                                 [](const auto& v) { return v.rule == "unrelated-change"; });
  if (only_unrelated)
    if (auto r = integrity_repair(ii, integ); !r) return unexpected(r.error());
  m_rep.integrity = gate::to_json(integ);
  step("integrity", {{"ok", integ.ok}, {"violations", integ.violations.size()}});
  m_rep.status = integ.ok ? "ported" : "integrity-rejected";
  m_rep.ok = integ.ok;
  return {};
}

// Edits accepted together with others may include one the build never needed (a compat shim
// deleted from code the configuration does not compile): when the gate only blames lines no
// diagnostic points at, drop each accepted edit that touched a blamed file in turn (at most three,
// one build each) and keep the first series that still builds and passes. True when one did.
util::Expected<bool> PortSession::integrity_repair(const gate::IntegrityInput& ii, gate::IntegrityReport& integ) {
  std::error_code ec;
  std::set<std::string> blamed;
  for (const auto& v : integ.violations) blamed.insert(v.file);
  int repairs = 0;
  for (std::size_t i = 0; i < m_rep.accepted.size() && repairs < 3; ++i) {
    bool touches = std::any_of(m_rep.accepted[i].snapshot.begin(), m_rep.accepted[i].snapshot.end(),
                               [&](const auto& f) { return blamed.count(f.first) > 0; });
    if (!touches || over_budget()) continue;
    ++repairs;
    fs::path alt_src = m_scratch->path() / "without-src";
    fs::path alt = m_scratch->path() / "without";
    auto kept = replay_without(m_rep.accepted, i, m_req.tree, alt_src, m_scratch->path(), m_apply);
    if (!kept) continue;
    // On the work tree's build: only the files the dropped edit touched recompile.
    fs::remove_all(alt, ec);
    if (auto c = util::stage_tree(alt_src, m_work, alt); !c) return unexpected(c.error());
    auto b = build(*m_to, alt, limit());
    if (!b) return unexpected(b.error());
    gate::IntegrityInput ai = ii;
    ai.candidate = alt;
    ai.removed_symbols.clear();
    for (const auto& a : *kept)
      for (const auto& sym : a.edit.symbols)
        if (sym.find(' ') == std::string::npos) ai.removed_symbols.push_back(sym);
    auto again = b->ok ? gate::check_integrity(ai) : gate::IntegrityReport{};
    step("integrity-repair",
         {{"dropped", m_rep.accepted[i].edit.change_id}, {"build_ok", b->ok}, {"integrity_ok", b->ok && again.ok}});
    if (!b->ok || !again.ok) continue;
    fs::remove_all(m_work, ec);
    if (auto c = util::copy_tree(alt, m_work, util::SkipBuildProducts::no); !c) return unexpected(c.error());
    m_rep.accepted = std::move(*kept);
    // Dropping an edit leaves no per-edit measurement standing: the figures are the series'.
    for (auto& a : m_rep.accepted) {
      a.group = 0;
      a.group_size = m_rep.accepted.size();
      a.errors_before = m_rep.initial_errors;
      a.errors_after = b->error_count();
    }
    m_cur = std::move(*b);
    integ = std::move(again);
    return true;
  }
  return false;
}

// Keep the old kernels building: wrap every change in LINUX_VERSION_CODE guards. The version is
// the boundary maintainers' own blocks give for the change (compat KB) when it lies after the old
// kernel and by the target, else the target's version (the change happened in between). Either
// way every kernel takes its own branch.
util::Expected<void> PortSession::compat() {
  if (!m_rep.ok || !m_req.compat) return {};
  std::error_code ec;
  std::string version = m_to->line + ".0";
  propose::Kb kb;
  fs::path kb_file = m_req.kb_path.empty() ? propose::default_kb_path() : m_req.kb_path;
  if (std::error_code kec; fs::exists(kb_file, kec)) {
    if (auto k = propose::load_kb(kb_file); k) kb = propose::without_packages(*k, m_req.kb_leave_out);
    else util::log_info("compat: {}", k.error().message);
  }
  auto guard_for = kb_guards(kb, m_newest_old, code_of(*m_to), version);
  nlohmann::json guards = nlohmann::json::array();
  fs::path ctree = m_scratch->path() / "compat";
  if (auto c = util::copy_tree(m_work, ctree, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
  for (const auto& rel : propose::c_files(m_work)) {
    auto orig = util::read_file(m_req.tree / rel);
    auto now = util::read_file(m_work / rel);
    if (!orig || !now || *orig == *now) continue;
    std::vector<Guard> written;
    if (auto w = util::write_file(ctree / rel, compat_merge(*orig, *now, guard_for, &written)); !w) return unexpected(w.error());
    for (const auto& g : written)
      guards.push_back({{"file", rel},
                        {"line", g.line},
                        {"version", g.choice.version},
                        {"guard", "LINUX_VERSION_CODE >= " + kernel_version_macro(g.choice.version)},
                        {"source", g.choice.source}});
  }
  // Each kernel's build starts from that kernel's earlier build of the tree where there is one
  // (the work tree on the target, the unchanged tree on --from): only guarded files recompile.
  auto build_on = [&](const core::Kernel& k, const fs::path& built) -> util::Expected<BuildState> {
    fs::path dir = m_scratch->path() / ("compat-" + k.release);
    fs::remove_all(dir, ec);
    if (auto c = util::stage_tree(ctree, built, dir); !c) return unexpected(c.error());
    auto b = build(k, dir, limit());
    fs::remove_all(dir, ec);
    return b;
  };
  auto on_to = build_on(*m_to, m_work);
  if (!on_to) return unexpected(on_to.error());
  nlohmann::json builds = {{m_to->release, on_to->ok}};
  bool all = on_to->ok;
  for (const auto& old : m_olds) {
    auto on_old = build_on(old, m_from_built && old.build_dir == m_from->build_dir ? m_from_tree : fs::path());
    if (!on_old) return unexpected(on_old.error());
    builds[old.release] = on_old->ok;
    all = all && on_old->ok;
  }
  m_rep.compat = {{"ok", all},        {"version", version}, {"guard", "LINUX_VERSION_CODE >= " + kernel_version_macro(version)},
                  {"guards", guards}, {"builds", builds},   {"verified_on_old_kernel", !m_olds.empty()}};
  step("compat", {{"ok", all}, {"builds", builds}});
  if (!all) {
    m_rep.ok = false;
    m_rep.status = "compat-failed";
    return {};
  }
  fs::remove_all(m_work, ec);
  if (auto c = util::copy_tree(ctree, m_work, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
  for (auto& a : m_rep.accepted)
    for (auto& [f, text] : a.snapshot)
      if (auto orig = util::read_file(m_req.tree / f); orig) text = compat_merge(*orig, text, guard_for);
  return {};
}

// --boot: the module loads in the target kernel under QEMU. A module the unchanged driver cannot
// load on its own kernel either (a required parameter, hardware it checks for) says nothing about
// the port: then the unchanged driver is loaded there too, and the same outcome is no failure.
util::Expected<void> PortSession::gates() {
  if (!m_rep.ok || !m_req.boot) return {};
  gate::CheckRequest cr;
  cr.tree = m_work;
  cr.root = m_work; // the copy is laid out already: no search for a root
  cr.subdir = m_req.subdir;
  cr.kernels = {m_req.to};
  if (m_req.compat)
    for (const auto& name : m_old_names) cr.kernels.push_back(name);
  cr.sparse = false;
  cr.boot = true;
  cr.device = m_req.device;
  cr.build_cmd = m_req.build_cmd;
  cr.build_deps = m_req.build_deps;
  cr.build_timeout = limit().timeout;
  cr.jobs = m_cpus;
  note("boot test on the target");
  auto chk = gate::run_check(cr, nullptr);
  if (!chk) return unexpected(chk.error());
  m_rep.gates = gate::to_json(*chk, cr);
  step("gates", {{"ok", chk->ok}});
  bool baseline_same = false;
  const std::string outcome = chk->ok ? "" : boot_outcome(m_rep.gates, m_to->release);
  if (!chk->ok && m_from && outcome == "insmod-failed") {
    note(fmt::format("the module does not load on {}: loading the unchanged driver on {}", m_to->release, m_from->release));
    gate::CheckRequest base = cr;
    base.tree = m_req.from_tree.empty() ? m_req.tree : m_req.from_tree;
    base.root = base.tree;
    base.kernels = {m_req.from};
    if (auto b = gate::run_check(base, nullptr)) {
      const std::string was = boot_outcome(gate::to_json(*b, base), m_from->release);
      step("baseline-load", {{"kernel", m_from->release}, {"outcome", was}});
      baseline_same = was == outcome;
      if (baseline_same)
        m_rep.gates["baseline"] = {{"kernel", m_from->release},
                                   {"outcome", was},
                                   {"note", "the unchanged driver does not load on its own kernel either: the load "
                                            "test cannot judge the port"}};
    }
  }
  if (!chk->ok && !baseline_same) {
    m_rep.ok = false;
    m_rep.status = "gates-failed";
  }
  // A crash on the target: what it is, where in the driver it points, and its repair.
  if (outcome == "panic" || outcome == "oops" || outcome == "kernel-warning")
    if (auto c = analyse_boot_crash(m_rep.gates, m_to->release, m_work, kernel::cached_source(*m_to))) {
      note(fmt::format("the target kernel crashed: {}", c->json.value("title", "")));
      step("crash", c->json);
      if (c->in_driver && m_req.crash_runs > 0) return repair_boot_crash(*c, cr);
      m_rep.gates["crash"] = c->json;
    }
  return {};
}

util::Expected<void> PortSession::repair_boot_crash(const BootCrash& c, const gate::CheckRequest& cr) {
  nlohmann::json crash = c.json;
  auto record = [&](const std::string& why) {
    crash["repair"] = why;
    m_rep.gates["crash"] = crash;
    return util::Expected<void>{};
  };
  // A bug the driver had before the port is not the port's to repair.
  if (m_from) {
    note(fmt::format("booting the unchanged driver on {} to see whether it crashes there too", m_from->release));
    gate::CheckRequest base = cr;
    base.tree = m_req.from_tree.empty() ? m_req.tree : m_req.from_tree;
    base.root = base.tree;
    base.kernels = {m_req.from};
    auto b = gate::run_check(base, nullptr);
    if (!b) return unexpected(b.error());
    const auto reports = boot_crash_reports(gate::to_json(*b, base), m_from->release);
    std::vector<std::string> titles;
    for (const auto& r : reports) titles.push_back(r.title);
    step("baseline-crash", {{"kernel", m_from->release}, {"titles", titles}});
    if (same_crash(c, reports))
      return record(fmt::format("not attempted: the unchanged driver crashes the same way on {} (a bug of the driver, not of "
                                "the port; autodriver crash --repair tries it)",
                                m_from->release));
  }
  CrashRepairRequest rr;
  rr.driver = m_work;
  rr.kernel = m_req.to;
  rr.device = m_req.device;
  rr.runs = m_req.crash_runs;
  rr.out = m_scratch->path() / "crash-repair";
  rr.build_timeout = limit().timeout;
  auto rep = repair_crash(rr, c.report, c.hyps, [this](const std::string& m) { note(m); });
  if (!rep) return unexpected(rep.error());
  crash["repair"] = *rep;
  step("crash-repair", {{"status", rep->value("status", "")}, {"reason", rep->value("reason", "")}});
  m_rep.gates["crash"] = crash;
  if (!rep->value("repaired", false)) return {};
  // The repair becomes the series' last patch, and the boot test of the repaired tree the verdict's.
  const auto& kept = (*rep)["repair"];
  const std::string file = kept.value("file", "");
  auto text = util::read_file(rr.out / "tree" / file);
  if (!text) return unexpected(text.error());
  if (auto w = util::write_file(m_work / file, *text); !w) return unexpected(w.error());
  propose::Edit e;
  e.proposer = "crash-repair";
  e.change_id = "crash:" + c.report.title;
  e.label = "crash-repair";
  e.title = kept.value("kind", "crash") + " in " + (c.hyps.empty() ? std::string("the driver") : c.hyps.front().function + "()");
  e.description = kept.value("description", "") +
                  fmt::format(". Found by booting {} in QEMU: '{}'; with this change the module ran clean {} of {} times.",
                              m_to->release, c.report.title, m_req.crash_runs, m_req.crash_runs);
  m_rep.accepted.push_back({e, {{file, *text}}, 0, 0, m_rep.accepted.size(), 1});
  step("accept", {{"change", e.change_id}, {"proposer", e.proposer}, {"title", e.title}});
  note("boot test of the repaired tree on the target");
  auto chk = gate::run_check(cr, nullptr);
  if (!chk) return unexpected(chk.error());
  auto again = gate::to_json(*chk, cr);
  again["crash"] = crash;
  m_rep.gates = std::move(again);
  step("gates", {{"ok", chk->ok}, {"after", "crash-repair"}});
  if (chk->ok) {
    m_rep.ok = true;
    m_rep.status = "ported";
  }
  return {};
}

// The series is made in scratch, then OUT/tree and OUT/patches are put in place together.
util::Expected<void> PortSession::series() {
  const fs::path patch_dir = m_scratch->path() / "patches";
  auto written = write_patch_series(m_req, m_rep, m_scratch->path() / "series", patch_dir);
  if (!written && written.error().kind == ErrorKind::io) return unexpected(written.error());
  if (!written) util::log_info("patch series not written: {}", written.error().message);
  if (auto w = finish_out(written && !written->empty() ? patch_dir : fs::path()); !w) return unexpected(w.error());
  if (written)
    for (const auto& p : *written)
      m_rep.patches.push_back((fs::absolute(m_req.out) / "patches" / fs::path(p).filename()).string());
  if (!m_rep.patches.empty()) {
    m_rep.checkpatch = checkpatch_series(m_rep.patches, kernel::cached_source(*m_to));
    step("checkpatch", m_rep.checkpatch);
  }
  return {};
}

} // namespace autodriver::loop
