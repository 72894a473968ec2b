// `autodriver kb build|cases|compare`: the compat knowledge base learned from maintainers'
// `#if LINUX_VERSION_CODE` blocks, and the collapsed-block benchmark cases made from them.

#include "autodriver/cli/commands.hpp"
#include "autodriver/cli/kb_sources.hpp"
#include "autodriver/corpus/dkms.hpp"
#include "autodriver/corpus/git_repo.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/propose/kb/kb_cases.hpp"
#include "autodriver/propose/kb/kb_file.hpp"
#include "autodriver/propose/kb/kb_rewrite.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <set>

namespace autodriver::cli {

namespace fs = std::filesystem;
using propose::Kb;
using propose::KbSource;

void add_source_options(CLI::App& sub, SourceOptions& o) {
  sub.add_option("--source", o.source_dirs, "A driver source directory to learn from (repeatable)");
  sub.add_option("--package", o.packages, "A Debian *-dkms package, fetched into the cache (repeatable)");
  sub.add_flag("--dkms", o.dkms, "Every *-dkms package of the Debian release (downloaded into the cache, never installed)");
  sub.add_option("--suite", o.suite,
                 "The Debian release(s) whose *-dkms packages --package/--dkms mean: one (bullseye, bookworm, trixie, "
                 "sid), several comma-separated, or 'all' (the four; a package version two suites share is read once); "
                 "default: the target kernel's release, else the host's");
}

namespace {
/// The package a directory belongs to: <cache>/dkms/<suite>/<pkg>/root/usr/src/<dir> -> <pkg>, else its name.
std::string package_of(const fs::path& dir) {
  auto abs = fs::weakly_canonical(dir).string();
  static const std::regex k_cached(R"(/dkms/(?:[^/]+/)?([^/]+)/root/usr/src/)");
  std::smatch m;
  if (std::regex_search(abs, m, k_cached)) return m[1].str();
  return fs::path(abs).filename().string();
}
} // namespace

util::Expected<std::vector<KbSource>> gather(const SourceOptions& o, const std::string& default_suite) {
  std::vector<KbSource> out;
  for (const auto& d : o.source_dirs) {
    if (!fs::is_directory(d))
      return util::unexpected(util::ErrorKind::not_found, fmt::format("--source {}: no such directory", d));
    out.push_back({package_of(d), "", d});
  }
  if (!o.dkms && o.packages.empty()) return out;
  std::vector<std::string> suites;
  if (o.suite == "all") suites = {"bullseye", "bookworm", "trixie", "sid"};
  else if (!o.suite.empty())
    for (std::size_t at = 0; at <= o.suite.size();) {
      std::size_t comma = std::min(o.suite.find(',', at), o.suite.size());
      suites.emplace_back(util::trim(std::string_view(o.suite).substr(at, comma - at)));
      at = comma + 1;
    }
  else suites = {corpus::dkms_suite(default_suite)};
  std::erase_if(suites, [](const std::string& s) { return s.empty(); });
  if (suites.empty()) return util::unexpected(util::ErrorKind::config, "no Debian release for the DKMS packages: give --suite");
  std::set<std::pair<std::string, std::string>> seen; // (package, version): read once
  for (const auto& suite : suites) {
    std::vector<std::string> pkgs = o.packages;
    if (o.dkms) {
      auto all = corpus::list_dkms_packages(suite);
      if (!all) return util::unexpected(all.error());
      pkgs.insert(pkgs.end(), all->begin(), all->end());
    }
    for (const auto& p : pkgs) {
      util::log_info("fetching {} ({})", p, suite);
      auto s = corpus::fetch_dkms_source(p, suite);
      if (!s) {
        // One unavailable package does not spoil the others; say which and go on.
        std::fprintf(stderr, "autodriver: warning: %s (%s): %s\n", p.c_str(), suite.c_str(), s.error().message.c_str());
        continue;
      }
      if (seen.insert({s->package, s->version}).second) out.push_back({s->package, s->version, s->source});
    }
  }
  return out;
}

propose::KVersion kernel_version(const core::Kernel& k) {
  if (long c = propose::linux_version_code(k.build_dir); c > 0)
    return {static_cast<int>(c >> 16), static_cast<int>((c >> 8) & 0xff), static_cast<int>(c & 0xff)};
  return propose::parse_kversion(k.release);
}

namespace {

/// A git repository as a KB source: every committed version of its C files (HEAD's history),
/// named by the repository's folder (`lkrg.git` -> `lkrg`).
util::Expected<KbSource> git_source(const fs::path& dir) {
  auto repo = corpus::git::open_repository(dir);
  if (!repo) return util::unexpected(repo.error());
  auto head = corpus::git::resolve_commit(repo->get(), "HEAD");
  if (!head) return util::unexpected(util::ErrorKind::config, fmt::format("--git {}: {}", dir.string(), head.error().message));
  std::string name = fs::weakly_canonical(dir).filename().string();
  if (name.ends_with(".git")) name.resize(name.size() - 4);
  KbSource s{name, "git " + corpus::git::to_hex(*git_commit_id(head->get())).substr(0, 12), dir, {}};
  s.texts = [dir](const propose::KbTextVisitor& visit) {
    auto r = corpus::git::open_repository(dir);
    if (!r) return;
    auto n = corpus::git::each_file_version(
        r->get(), "HEAD", [](std::string_view p) { return p.ends_with(".c") || p.ends_with(".h"); },
        [&](const std::string& path, const std::string& commit, std::string_view text) {
          visit(path, "git " + commit.substr(0, 12), text);
        });
    if (n) util::log_info("kb build: {}: {} commits read", dir.string(), *n);
    else std::fprintf(stderr, "autodriver: warning: --git %s: %s\n", dir.string().c_str(), n.error().message.c_str());
  };
  return s;
}

int run_build(const SourceOptions& so, const std::vector<std::string>& trees, const std::vector<std::string>& git_dirs,
              const std::vector<std::string>& leave_out, const fs::path& out, bool json) {
  auto sources = gather(so);
  if (!sources) {
    std::fprintf(stderr, "autodriver: error: %s\n", sources.error().message.c_str());
    return k_exit_error;
  }
  for (const auto& g : git_dirs) {
    auto s = git_source(g);
    if (!s) {
      std::fprintf(stderr, "autodriver: error: --git %s: %s\n", g.c_str(), s.error().message.c_str());
      return k_exit_error;
    }
    sources->push_back(std::move(*s));
  }
  for (const auto& t : trees) {
    auto k = kernel::resolve_kernel(t);
    if (!k) {
      std::fprintf(stderr, "autodriver: error: --kernel-tree %s: %s\n", t.c_str(), k.error().message.c_str());
      return k_exit_error;
    }
    auto src = kernel::ensure_source(*k, [](const std::string& m) { util::log_info("{}", m); });
    if (!src) {
      std::fprintf(stderr, "autodriver: error: --kernel-tree %s: %s\n", t.c_str(), src.error().message.c_str());
      return k_exit_error;
    }
    sources->push_back({"linux-" + k->line, k->release, *src});
  }
  std::vector<KbSource> kept;
  for (auto& s : *sources)
    if (std::find(leave_out.begin(), leave_out.end(), s.package) == leave_out.end()) kept.push_back(s);
  if (kept.empty()) {
    std::fprintf(stderr, "autodriver: error: nothing to learn from: give --source DIR, --git REPO, --package PKG, --dkms or "
                         "--kernel-tree K\n");
    return k_exit_error;
  }
  Kb kb = propose::build_kb(kept);
  if (auto w = propose::save_kb(kb, out); !w) {
    std::fprintf(stderr, "autodriver: error: %s\n", w.error().message.c_str());
    return k_exit_error;
  }
  if (json) {
    auto j = propose::to_json(kb);
    j.erase("entries");
    j["entry_count"] = kb.entries.size();
    j["out"] = fs::absolute(out).string();
    std::cout << j.dump(2, ' ', false, util::json_bytes) << "\n";
    return k_exit_ok;
  }
  std::map<std::string, int> by_kind;
  for (const auto& e : kb.entries) ++by_kind[e.change.kind];
  const auto& s = kb.stats;
  fmt::print("{}: {} entries from {} source(s)\n", out.string(), kb.entries.size(), kb.sources.size());
  for (const auto& [k, n] : by_kind) fmt::print("  {:14} {}\n", k, n);
  fmt::print("  conditionals {}, blocks {}, skipped: complex {}, nested {}, big {}, unclassified {}\n", s.conditionals, s.blocks,
             s.complex, s.nested, s.big, s.unclassified);
  return k_exit_ok;
}

int run_compare(const fs::path& case_dir, const fs::path& ported_tree) {
  auto text = util::read_file(case_dir / "case.json");
  if (!text) {
    std::fprintf(stderr, "autodriver: error: %s\n", text.error().message.c_str());
    return k_exit_error;
  }
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || j.value("schema", "") != "autodriver.kb-case") {
    std::fprintf(stderr, "autodriver: error: %s: not a kb case (case.json)\n", case_dir.string().c_str());
    return k_exit_error;
  }
  std::string file = j.value("file", "");
  nlohmann::json out = {{"id", j.value("id", "")}, {"file", file}};
  bool identical = false;
  if (j.contains("blocks") && j["blocks"].is_array() && !j["blocks"].empty()) {
    // Every block of the case (one boundary's whole port) where it was, in its context.
    int same = 0;
    for (const auto& b : j["blocks"]) {
      auto ported = util::read_file(ported_tree / b.value("file", ""));
      propose::BlockContext c;
      if (b.contains("context_before") && b["context_before"].is_array())
        c.before = b["context_before"].get<std::vector<std::string>>();
      if (b.contains("context_after") && b["context_after"].is_array())
        c.after = b["context_after"].get<std::vector<std::string>>();
      if (ported && propose::matches_in_context(*ported, c, b.value("new_code", ""))) ++same;
    }
    identical = same == static_cast<int>(j["blocks"].size());
    out["blocks"] = j["blocks"].size();
    out["blocks_identical"] = same;
  } else if (auto ported = util::read_file(ported_tree / file)) {
    propose::CollapsedCase c; // a case of schema 1: the whole text around its one block
    c.before = j.value("before", "");
    c.after = j.value("after", "");
    identical = propose::matches_new_branch(*ported, c, j.value("new_code", ""));
  }
  out["identical"] = identical;
  std::cout << out.dump(-1, ' ', false, util::json_bytes) << "\n";
  return identical ? k_exit_ok : k_exit_failed;
}

/// Leave-one-source-out replay: every derived block's old branch is rewritten with the rules the
/// KB learned from the *other* packages (best-supported rule per symbol, then the next two) and
/// compared on tokens with the maintainers' new branch. Needs no kernel.
int run_eval(const SourceOptions& so, const fs::path& kb_path) {
  auto kb = propose::load_kb(kb_path);
  if (!kb) {
    std::fprintf(stderr, "autodriver: error: %s\n", kb.error().message.c_str());
    return k_exit_error;
  }
  auto sources = gather(so);
  if (!sources) {
    std::fprintf(stderr, "autodriver: error: %s\n", sources.error().message.c_str());
    return k_exit_error;
  }
  auto tokens = [](const std::string& t) {
    std::string o;
    for (const auto& x : csrc::tokenize(t))
      o += (x.kind == csrc::TokKind::pp_line ? propose::normalize_ws(x.text) : x.text) + " ";
    return o;
  };
  int blocks = 0, with_rule = 0, best_same = 0, top3_same = 0;
  std::map<std::string, std::pair<int, int>> by_kind; // kind -> (blocks, reproduced by best)
  for (const auto& src : *sources) {
    auto others = propose::without_packages(*kb, {src.package});
    for (const auto& rel : util::list_files(src.root)) {
      if (rel.extension() != ".c" && rel.extension() != ".h") continue;
      auto text = util::read_file(src.root / rel);
      if (!text || text->find("LINUX_VERSION_CODE") == std::string::npos) continue;
      propose::ExtractStats st;
      for (const auto& b : propose::extract_version_blocks(*text, st)) {
        auto changes = propose::derive_changes(b, st);
        if (changes.size() != 1 || changes[0].kind == "include" || changes[0].symbols.empty()) continue;
        const auto& want = changes[0];
        ++blocks;
        ++by_kind[want.kind].first;
        std::map<std::string, std::set<std::string>> support; // kind|old|new -> packages
        std::map<std::string, const propose::KbChange*> rule;
        for (const auto& e : others.entries)
          if (!e.change.symbols.empty() && e.change.symbols[0] == want.symbols[0]) {
            auto key = e.change.kind + "|" + e.change.old_form + "|" + e.change.new_form;
            support[key].insert(e.provenance.package);
            rule[key] = &e.change;
          }
        if (rule.empty()) continue;
        ++with_rule;
        std::vector<std::string> keys;
        for (const auto& [k, _] : rule) keys.push_back(k);
        std::stable_sort(keys.begin(), keys.end(),
                         [&](const auto& a, const auto& c) { return support[a].size() > support[c].size(); });
        std::string expected = propose::normalize_ws(b.new_code);
        // Like the proposer: rules that find nothing to rewrite are not alternatives.
        std::vector<std::string> applying;
        for (const auto& k : keys)
          if (propose::rewrite_text(b.old_code, *rule[k]).sites > 0) applying.push_back(k);
        keys = applying;
        for (std::size_t i = 0; i < keys.size() && i < 3; ++i) {
          auto r = propose::rewrite_text(b.old_code, *rule[keys[i]]);
          bool same = r.sites > 0 && propose::normalize_ws(r.text) == expected;
          if (!same && r.sites > 0) same = tokens(r.text) == tokens(b.new_code);
          if (!same) {
            util::log_debug("kb eval: {}:{}: {} gives `{}`, maintainers wrote `{}`", rel.string(), b.line, keys[i],
                            propose::normalize_ws(r.text), expected);
            continue;
          }
          if (i == 0) {
            ++best_same;
            ++by_kind[want.kind].second;
          }
          ++top3_same;
          break;
        }
      }
    }
  }
  auto pct = [&](int k) { return blocks ? 100.0 * k / blocks : 0.0; };
  fmt::print("{} single-change blocks; a rule from another package for the symbol: {} ({:.0f} %); "
             "best rule reproduces the new branch: {} ({:.0f} %); one of the top 3: {} ({:.0f} %)\n",
             blocks, with_rule, pct(with_rule), best_same, pct(best_same), top3_same, pct(top3_same));
  for (const auto& [k, v] : by_kind) fmt::print("  {:14} {} blocks, {} reproduced\n", k, v.first, v.second);
  return k_exit_ok;
}

} // namespace

Command kb_command() {
  return {"kb", "Compat knowledge base learned from maintainers' #if LINUX_VERSION_CODE blocks",
          [](CLI::App& sub) -> std::function<int()> {
            sub.require_subcommand(1);
            auto so = std::make_shared<SourceOptions>();
            auto trees = std::make_shared<std::vector<std::string>>();
            auto leave_out = std::make_shared<std::vector<std::string>>();
            auto git_dirs = std::make_shared<std::vector<std::string>>();
            auto out = std::make_shared<fs::path>();
            auto json = std::make_shared<bool>(false);
            auto* build = sub.add_subcommand(
                "build", "Extract KB entries (old form, new form, boundary, provenance) into a versioned JSON file");
            add_source_options(*build, *so);
            build->add_option("--kernel-tree", *trees, "Also learn from a kernel's source tree (6.1, 6.12)");
            build->add_option("--git", *git_dirs,
                              "A driver's git repository (a clone): every version of its C files in HEAD's history is "
                              "learned from, so blocks its maintainers dropped later still teach old API changes; the "
                              "source is named by the repository's folder (repeatable)");
            build->add_option("--leave-out", *leave_out, "Never learn from this package (repeatable)");
            build->add_option("-o,--out", *out, "KB file to write (default: the cache's compat-kb.json)");
            build->add_flag("--json", *json, "Print a JSON summary");

            auto co = std::make_shared<CasesOptions>();
            auto* cases = sub.add_subcommand(
                "cases", "Collapsed-block cases: each block whose boundary lies in (FROM, TO] "
                         "(or, with --older-than-target, every change TO compiles) collapsed to its old branch");
            add_source_options(*cases, co->sources);
            cases->add_option("--from", co->from, "Kernel whose branch the case keeps")->capture_default_str();
            cases->add_option("--to", co->to, "Kernel whose branch is the expected answer")->capture_default_str();
            cases->add_flag("--older-than-target", co->older_than_target,
                            "Every block whose new branch TO compiles (boundary <= TO), collapsed to the branch just below it; "
                            "no --from kernel needed");
            cases->add_flag("--check-build", co->check_build,
                            "Keep only eligible cases: the package as shipped builds on TO and the collapsed tree does not");
            cases->add_flag("--by-boundary", co->by_boundary,
                            "One case per boundary: every selected block of the package with that boundary collapsed "
                            "together (the maintainers' whole port to that kernel), newest boundary first");
            cases->add_option("--max-per-package", co->max_per_package,
                              "With --check-build: at most N eligible cases per package (0: all)");
            cases->add_option("--max-package-build-s", co->max_package_build_s,
                              "With --check-build: skip packages whose own build on TO takes longer (0: no limit)");
            cases->add_option("-o,--out", co->out, "Directory of cases (<id>/tree, <id>/case.json, summary.json)")->required();

            auto case_dir = std::make_shared<fs::path>();
            auto ported = std::make_shared<fs::path>();
            auto* compare =
                sub.add_subcommand("compare", "Is the maintainers' new branch where the block was? (exit 0 yes, 1 no)");
            compare->add_option("case", *case_dir, "A case directory from `kb cases`")->required();
            compare->add_option("tree", *ported, "The ported tree")->required();

            auto eso = std::make_shared<SourceOptions>();
            auto eval_kb = std::make_shared<fs::path>();
            auto* eval =
                sub.add_subcommand("eval", "Leave-one-source-out replay of the KB on the blocks it came from (no kernel needed)");
            add_source_options(*eval, *eso);
            eval->add_option("--kb", *eval_kb, "KB file (default: the cache's compat-kb.json)");

            auto store_kb = setup_kb_store(sub); // export|import: the run store's KB (cmd_store_kb.cpp)
            return [=, &sub]() -> int {
              if (int rc = store_kb(); rc >= 0) return rc;
              if (eval->parsed()) return run_eval(*eso, eval_kb->empty() ? propose::default_kb_path() : *eval_kb);
              if (build->parsed())
                return run_build(*so, *trees, *git_dirs, *leave_out, out->empty() ? propose::default_kb_path() : *out, *json);
              if (cases->parsed()) return run_cases(*co);
              if (compare->parsed()) return run_compare(*case_dir, *ported);
              (void)sub;
              return k_exit_error;
            };
          }};
}

} // namespace autodriver::cli
