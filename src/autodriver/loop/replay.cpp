#include "autodriver/loop/replay.hpp"

#include "autodriver/gate/kbuild.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/store/kb.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"

#include <fmt/format.h>

#include <optional>

namespace autodriver::loop {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;
using Clock = std::chrono::steady_clock;

util::Expected<std::int64_t> write_checkpoint(store::RunStore& st, std::int64_t run_id, std::int64_t until_step,
                                              const fs::path& tree, int& applied) {
  // A rerun starts from its parent's checkpoint; follow the chain (bounded: a cycle is corruption).
  std::vector<std::pair<std::int64_t, std::int64_t>> chain{{run_id, until_step}};
  for (int depth = 0;; ++depth) {
    if (depth > 100) return unexpected(ErrorKind::parse, fmt::format("run {}: rerun chain too deep", run_id));
    auto r = st.run(chain.back().first);
    if (!r) return unexpected(r.error());
    if (!*r) return unexpected(ErrorKind::not_found, fmt::format("run {} is not in {}", chain.back().first, st.path().string()));
    auto cp = (*r)->args.value("checkpoint_step", std::int64_t{0});
    if (!(*r)->parent_run || cp <= 0) break;
    chain.emplace_back(*(*r)->parent_run, cp);
  }
  std::int64_t last = 0;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    auto [id, upto] = *it;
    auto steps = st.steps(id);
    if (!steps) return unexpected(steps.error());
    auto arts = st.artifacts(id);
    if (!arts) return unexpected(arts.error());
    std::vector<store::Artifact> accepted;
    for (const auto& a : *arts)
      if (a.kind == "accepted") accepted.push_back(a);
    std::size_t k = 0;
    for (const auto& s : *steps) {
      if (s.kind != "accept") continue;
      if (s.seq > upto) break;
      if (k >= accepted.size())
        return unexpected(
            ErrorKind::not_found,
            fmt::format("run {}: step {} has no recorded edit (the run did not finish): use an earlier step", id, s.seq));
      auto text = st.blob(accepted[k].hash);
      if (!text) return unexpected(text.error());
      auto j = *text ? nlohmann::json::parse(**text, nullptr, false) : nlohmann::json();
      const nlohmann::json files = j.is_object() ? j.value("files", nlohmann::json::object()) : nlohmann::json::object();
      for (const auto& [f, h] : files.items()) {
        if (!h.is_string()) continue;
        fs::path rel = f;
        if (rel.is_absolute() || rel.lexically_normal().string().starts_with(".."))
          return unexpected(ErrorKind::parse, fmt::format("run {}: accepted edit names a file outside the tree: {}", id, f));
        auto content = st.blob(h.get<std::string>());
        if (!content) return unexpected(content.error());
        if (!*content) return unexpected(ErrorKind::not_found, fmt::format("run {}: blob {} missing", id, h.get<std::string>()));
        if (auto w = util::write_file(tree / rel, **content); !w) return unexpected(w.error());
      }
      if (id == run_id) last = s.seq;
      ++k;
      ++applied;
    }
  }
  return last;
}

namespace {

/// The kbuild gate on one kernel of the run: error signatures of a build in place.
ReplayBuildFn real_builder(const std::string& kernel_name, const nlohmann::json& args, std::chrono::seconds timeout) {
  return [=](const fs::path& tree) -> util::Expected<std::set<std::string>> {
    if (kernel_name.empty()) return unexpected(ErrorKind::config, "the run names no kernel for this build");
    auto k = kernel::resolve_kernel(kernel_name);
    if (!k) return unexpected(k.error());
    if (!k->has_headers()) return unexpected(ErrorKind::not_found, fmt::format("kernel {}: no build directory", kernel_name));
    k = kernel::with_build_deps(std::move(*k), args.value("build_deps", std::vector<std::string>{}), nullptr);
    if (!k) return unexpected(k.error());
    gate::BuildSpec spec;
    spec.build_cmd = args.value("build_cmd", "");
    if (fs::path root = args.value("root", ""); !root.empty())
      spec.subdir = fs::path(args.value("original_tree", args.value("tree", ""))).lexically_relative(root);
    // The run's own --build-timeout when it gave one (0: the loop's default, derived per run).
    auto recorded = std::chrono::seconds(args.value("build_timeout_s", 0));
    spec.timeout = recorded.count() > 0 ? std::min(timeout, recorded) : timeout;
    gate::clean_build_products(tree);
    auto r = gate::build_tree(*k, tree, spec);
    if (!r) return unexpected(r.error());
    if (r->run.timed_out)
      return unexpected(ErrorKind::timeout, fmt::format("the build timed out after {} s", spec.timeout.count()));
    std::set<std::string> sigs;
    for (const auto& d : r->diagnostics)
      if (d.severity == core::Severity::error || d.severity == core::Severity::fatal)
        sigs.insert(store::diagnostic_signature(core::to_json(d)));
    if (sigs.empty() && (!r->run.ok() || r->modules.empty())) sigs.insert("build failed: " + r->run.status_text());
    return sigs;
  };
}

nlohmann::json verdict(const std::string& result, const std::string& why, nlohmann::json builds = nlohmann::json::array()) {
  return {{"result", result}, {"why", why}, {"builds", std::move(builds)}};
}

} // namespace

void replay_attributions(store::RunStore& st, const store::RunRow& run, nlohmann::json& doc, const ReplayOptions& opt,
                         const ReplayBuildFn& build, const ReplayBuildFn& build_from) {
  doc["replays"] = 0;
  if (!doc.contains("attribute") || !doc["attribute"].is_array()) return;
  fs::path original = run.args.value("original_tree", run.args.value("tree", ""));
  // A driver copied with a root (a sibling folder its Makefile compiles): the root is copied, and
  // the run's edits are paths in it.
  if (fs::path root = run.args.value("root", ""); !root.empty()) original = root;
  ReplayBuildFn on_to = build ? build : real_builder(run.args.value("to", ""), run.args, opt.build_timeout);
  ReplayBuildFn on_from = build_from ? build_from : real_builder(run.args.value("from", ""), run.args, opt.build_timeout);
  auto deadline = Clock::now() + opt.total;
  int done = 0;
  for (auto& a : doc["attribute"]) {
    std::string cause = a.value("cause", "");
    const nlohmann::json& step = a["step"];
    const nlohmann::json& ev = a["evidence"];
    bool regression = cause == "proposer-regression" && step.is_object() && step.value("kind", "") == "accept" &&
                      ev.is_object() && ev.contains("signature");
    bool mapping = (cause == "missing-mapping" || cause == "wrong-mapping") && ev.is_object() && ev.contains("signature");
    bool input = cause == "input";
    if (!regression && !mapping && !input) continue;
    if (done >= opt.max_replays) {
      a["replay"] = verdict("skipped", fmt::format("at most {} replay(s) per explain", opt.max_replays));
      continue;
    }
    if (Clock::now() > deadline) {
      a["replay"] = verdict("skipped", fmt::format("the replay time ({} s) is used up", opt.total.count()));
      continue;
    }
    if (original.empty() || !fs::is_directory(original)) {
      a["replay"] = verdict("skipped", fmt::format("the run's driver tree {} is gone", original.string()));
      continue;
    }
    ++done;
    auto dir = util::TempDir::create(util::scratch_root(), "replay-");
    if (!dir) {
      a["replay"] = verdict("skipped", dir.error().message);
      continue;
    }
    // One copy of the original tree at a checkpoint, built; nullopt + `why` when that failed.
    std::string why;
    auto tree_at = [&](const std::string& name, std::optional<std::int64_t> until,
                       const ReplayBuildFn& fn) -> std::optional<std::set<std::string>> {
      fs::path tree = dir->path() / name / original.filename();
      if (auto c = util::copy_tree(original, tree, util::SkipBuildProducts::yes); !c) {
        why = c.error().message;
        return std::nullopt;
      }
      int applied = 0;
      if (until && (*until > 0 || run.parent_run))
        if (auto w = write_checkpoint(st, run.id, *until, tree, applied); !w) {
          why = w.error().message;
          return std::nullopt;
        }
      auto sigs = fn(tree);
      if (!sigs) {
        why = sigs.error().message;
        return std::nullopt;
      }
      return *sigs;
    };
    if (regression) {
      std::string sig = ev.value("signature", "");
      std::int64_t seq = step.value("seq", std::int64_t{0});
      util::log_info("explain: replaying the build before and after step {}", seq);
      auto before = tree_at("before", seq - 1, on_to);
      auto after = before ? tree_at("after", seq, on_to) : std::nullopt;
      if (!before || !after) {
        a["replay"] = verdict("skipped", why);
        continue;
      }
      bool was = before->count(sig) > 0, is = after->count(sig) > 0;
      nlohmann::json builds = {{{"tree", fmt::format("before step {}", seq)}, {"errors", before->size()}, {"has_error", was}},
                               {{"tree", fmt::format("after step {}", seq)}, {"errors", after->size()}, {"has_error", is}}};
      a["replay"] =
          !was && is
              ? verdict("confirmed", fmt::format("the error is absent before step {}'s edit and present after it", seq), builds)
              : verdict("refuted",
                        fmt::format("the error is {} before step {}'s edit and {} after it", was ? "present" : "absent", seq,
                                    is ? "present" : "absent"),
                        builds);
      continue;
    }
    if (mapping) {
      std::string sig = ev.value("signature", "");
      util::log_info("explain: replaying the build of the unchanged tree");
      auto orig = tree_at("original", 0, on_to);
      if (!orig) {
        a["replay"] = verdict("skipped", why);
        continue;
      }
      bool has = orig->count(sig) > 0;
      a["replay"] = verdict(has ? "confirmed" : "refuted",
                            has ? "the unchanged driver already has this error on the target: the API change is not handled"
                                : "the unchanged driver does not have this error on the target: an edit introduced it",
                            nlohmann::json::array({{{"tree", "original"}, {"errors", orig->size()}, {"has_error", has}}}));
      continue;
    }
    // input: the unchanged driver on its own (--from) kernel.
    util::log_info("explain: replaying the build of the unchanged tree on its own kernel");
    auto orig = tree_at("from", std::nullopt, on_from);
    if (!orig) {
      a["replay"] = verdict("skipped", why);
      continue;
    }
    a["replay"] = verdict(orig->empty() ? "refuted" : "confirmed",
                          orig->empty() ? "the unchanged driver builds on its own kernel now (a transient failure?)"
                                        : "the unchanged driver still fails on its own kernel",
                          nlohmann::json::array({{{"tree", "original on --from"}, {"errors", orig->size()}}}));
  }
  doc["replays"] = done;
}

} // namespace autodriver::loop
