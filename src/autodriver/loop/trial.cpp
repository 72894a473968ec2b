#include "autodriver/loop/trial.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/loop/trial_objects.hpp"
#include "autodriver/util/log.hpp"

#include <map>

namespace autodriver::loop {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;
using Clock = std::chrono::steady_clock;

util::Expected<Trial> try_edits(const std::vector<const propose::Edit*>& edits, const TrialSetup& setup, const BuildLimit& limit,
                                const BuildState& cur) {
  const fs::path& work = setup.work;
  const core::Kernel& to = setup.kernel;
  Builder& builder = setup.builder;
  auto dir = util::TempDir::create(setup.scratch, "trial-");
  if (!dir) return unexpected(dir.error());
  fs::path t = dir->path() / "tree";
  auto t0 = Clock::now();
  if (auto c = util::copy_tree(work, t, util::SkipBuildProducts::no); !c) return unexpected(c.error());
  Trial trial;
  auto ms_since = [](Clock::time_point a) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - a).count();
  };
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
    auto a = propose::apply_edit(*e, t, dir->path() / "rules", setup.apply_options);
    if (!a) {
      util::log_debug("apply failed: {}", a.error().message);
      continue;
    }
    for (const auto& f : a->changed_files) {
      changed.insert(f);
      if (!texts.count(f)) texts[f] = text_of(work / f);
      std::string now = text_of(t / f);
      for (const auto& fn : csrc::changed_functions(texts[f], now)) trial.touched.back().insert(f + "|" + fn);
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
  if (builder.single_objects() && !cur.ok && !cur.timed_out) picked = trial_objects(changed, cur.errors, work, setup.subdir);
  if (!picked.objects.empty()) {
    auto o = builder.build(to, t, limit, picked.objects);
    if (!o) return unexpected(o.error());
    if (o->timed_out) {
      s = std::move(o);
    } else if (!o->exited_ok && o->errors.empty()) {
      // make failed without a compiler error (a target kbuild did not know): the whole module.
      s = builder.build(to, t, limit, {});
    } else {
      BuildState merged = std::move(*o);
      merged.objects_only = true;
      merged.sampled = picked.sampled || cur.sampled;
      merged.ok = false;
      merged.signatures.clear();
      for (const auto& d : merged.errors) merged.signatures.insert(error_signature(d));
      // The other files' diagnostics as the current build has them; the changed files' (and a
      // changed header's, whoever reported them) and those of the C files just compiled (a
      // header's users: their errors may be gone) come from the objects just compiled.
      for (const auto& d : cur.all) {
        if (changed.count(tree_relative(d.file, gate::k_sandbox_tree))) continue;
        if (picked.units.count(reporting_unit(d, gate::k_sandbox_tree, setup.subdir))) continue;
        merged.all.push_back(d);
        count_diagnostic(merged, d);
      }
      if (merged.errors.empty()) {
        s = builder.build(to, t, limit, {});
        if (s) s->compiled += merged.compiled, s->ms += merged.ms;
      } else {
        s = std::move(merged);
      }
    }
  } else {
    s = builder.build(to, t, limit, {});
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

util::Expected<std::vector<AcceptedEdit>> replay_without(const std::vector<AcceptedEdit>& accepted, std::size_t skip,
                                                         const fs::path& original, const fs::path& tree, const fs::path& scratch,
                                                         const propose::ApplyOptions& options) {
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

} // namespace autodriver::loop
