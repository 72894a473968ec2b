// `autodriver kb cases`: collapsed-block benchmark cases (issue 5 item 4). Each maintainer's
// `#if LINUX_VERSION_CODE` block is collapsed to its old branch; a port must find the new branch.
// With --check-build only eligible cases are written: the package as shipped builds on the target
// (built once per package, timed) and the collapsed tree does not (else it is "already-builds").

#include "autodriver/cli/commands.hpp"
#include "autodriver/cli/kb_sources.hpp"
#include "autodriver/corpus/dkms.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/propose/kb/kb_cases.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::cli {

namespace fs = std::filesystem;

namespace {

struct Candidate {
  fs::path rel;
  std::string text; ///< the file as shipped
  propose::VersionBlock block;
};

/// The package's own build when it runs in the tree (dkms.conf MAKE[0] without the dkms build
/// path), else kbuild M= (the port's default).
std::string package_build_cmd(const fs::path& root) {
  auto conf = util::read_file(root / "dkms.conf");
  if (!conf) return "";
  auto cmd = corpus::dkms_build_command(corpus::parse_dkms_conf(*conf), "{tree}");
  if (cmd.find("{tree}") == std::string::npos && cmd.find("{kdir}") != std::string::npos) return cmd;
  return "";
}

/// Blocks of one package the mode selects, round-robin over its files so that a per-package cap
/// samples every file rather than the first one.
std::vector<Candidate> candidates_of(const propose::KbSource& src, const CasesOptions& o, const propose::KVersion& fv,
                                     const propose::KVersion& tv) {
  std::vector<std::vector<Candidate>> by_file;
  for (const auto& rel : util::list_files(src.root)) {
    if (rel.extension() != ".c" && rel.extension() != ".h") continue;
    auto text = util::read_file(src.root / rel);
    if (!text || text->find("LINUX_VERSION_CODE") == std::string::npos) continue;
    propose::ExtractStats st;
    std::vector<Candidate> here;
    for (const auto& b : propose::extract_version_blocks(*text, st)) {
      bool keep = o.older_than_target ? propose::block_changed_by(b, tv) : propose::block_spans(b, fv, tv);
      if (keep) here.push_back({rel, *text, b});
    }
    if (!here.empty()) by_file.push_back(std::move(here));
  }
  std::vector<Candidate> out;
  for (std::size_t i = 0;; ++i) {
    bool any = false;
    for (auto& f : by_file)
      if (i < f.size()) {
        out.push_back(std::move(f[i]));
        any = true;
      }
    if (!any) break;
  }
  return out;
}

/// The blocks of one case: one, or every selected block of one boundary (newest boundary first).
std::vector<std::vector<Candidate>> units_of(std::vector<Candidate> cands, bool by_boundary) {
  std::vector<std::vector<Candidate>> out;
  if (!by_boundary) {
    for (auto& c : cands) out.push_back({std::move(c)});
    return out;
  }
  std::map<propose::KVersion, std::vector<Candidate>, std::greater<>> by;
  for (auto& c : cands) by[c.block.boundary].push_back(std::move(c));
  for (auto& [_, u] : by) {
    std::stable_sort(u.begin(), u.end(), [](const Candidate& a, const Candidate& b) {
      return a.rel != b.rel ? a.rel < b.rel : a.block.line < b.block.line;
    });
    out.push_back(std::move(u));
  }
  return out;
}

/// A unit's files with its blocks collapsed, and each block's context in the expected text.
struct CollapsedUnit {
  std::map<fs::path, std::string> old_files;  ///< relative path -> collapsed text
  std::vector<propose::BlockContext> context; ///< parallel to the unit's blocks
};

CollapsedUnit collapse_unit(const std::vector<Candidate>& unit) {
  CollapsedUnit cu;
  cu.context.resize(unit.size());
  std::map<fs::path, std::vector<std::size_t>> files;
  for (std::size_t i = 0; i < unit.size(); ++i) files[unit[i].rel].push_back(i);
  for (const auto& [rel, idx] : files) {
    std::vector<propose::VersionBlock> blocks;
    for (auto i : idx) blocks.push_back(unit[i].block);
    auto f = propose::collapse_blocks(unit[idx.front()].text, blocks);
    cu.old_files[rel] = std::move(f.old_text);
    for (std::size_t k = 0; k < idx.size(); ++k) cu.context[idx[k]] = std::move(f.context[k]);
  }
  return cu;
}

/// Why a selected block is not a case (the keys of summary.json's "excluded").
struct Tally {
  std::map<std::string, int> excluded;
  int cases = 0;
};

struct PackageBuild {
  bool ok = false;
  double seconds = 0;
  std::string why; ///< set when not ok
};

double seconds_of(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

} // namespace

/// One case: the package's tree with the unit's blocks collapsed to their old form, and case.json
/// beside it (every block with its context; the first block's fields also at the top, as cases of
/// one block had them), in OUT/ID; returns the ID.
util::Expected<std::string> write_case(const CasesOptions& o, const propose::KbSource& src, const std::vector<Candidate>& unit,
                                       const CollapsedUnit& collapsed, const std::string& build_cmd, std::set<std::string>& ids) {
  std::error_code ec;
  const auto& first = unit.front();
  std::string id =
      o.by_boundary ? fmt::format("{}--B{}", src.package, first.block.boundary.str())
                    : fmt::format("{}--{}--L{}", src.package,
                                  std::regex_replace(first.rel.string(), std::regex("[^A-Za-z0-9_.-]"), "_"), first.block.line);
  // Two pairs of one `#elif` chain share the `#if` line.
  if (!ids.insert(id).second) id += fmt::format("-{}", first.block.boundary.str());
  fs::path dir = o.out / id;
  fs::remove_all(dir, ec);
  if (auto cp = util::copy_tree(src.root, dir / "tree", util::SkipBuildProducts::yes); !cp) return util::unexpected(cp.error());
  for (const auto& [rel, text] : collapsed.old_files) (void)util::write_file(dir / "tree" / rel, text);
  nlohmann::json blocks = nlohmann::json::array();
  for (std::size_t i = 0; i < unit.size(); ++i) {
    const auto& b = unit[i].block;
    blocks.push_back({{"file", unit[i].rel.string()},
                      {"line", b.line},
                      {"end_line", b.end_line},
                      {"boundary", b.boundary.str()},
                      {"old_code", b.old_code},
                      {"new_code", b.new_code},
                      {"context_before", collapsed.context[i].before},
                      {"context_after", collapsed.context[i].after}});
  }
  const auto& b = first.block;
  nlohmann::json j = {{"schema", "autodriver.kb-case"},
                      {"build_cmd", build_cmd},
                      {"schema_version", 2},
                      {"id", id},
                      {"package", src.package},
                      {"version", src.version},
                      {"file", first.rel.string()},
                      {"line", b.line},
                      {"end_line", b.end_line},
                      {"boundary", b.boundary.str()},
                      {"from", o.older_than_target ? std::string() : o.from},
                      {"to", o.to},
                      {"old_code", b.old_code},
                      {"new_code", b.new_code},
                      {"blocks", blocks}};
  (void)util::write_file_atomic(dir / "case.json", j.dump(2, ' ', false, util::json_bytes) + "\n");
  return id;
}

namespace {

/// The package as shipped, built once in a scratch copy (WORK) that every case of the package then
/// reuses: only the collapsed files (and what includes them) are recompiled. Sets SPEC's timeout
/// for the cases' builds.
util::Expected<PackageBuild> build_as_shipped(const CasesOptions& o, const propose::KbSource& src, const core::Kernel& to,
                                              gate::BuildSpec& spec, std::optional<util::TempDir>& work) {
  if (!gate::has_kbuild_makefile(src.root) && spec.build_cmd.empty()) return PackageBuild{false, 0, "no-makefile"};
  auto w = gate::make_scratch("kb-cases");
  if (!w) return util::unexpected(w.error());
  work.emplace(std::move(*w));
  if (auto cp = util::copy_tree(src.root, work->path() / "tree", util::SkipBuildProducts::yes); !cp)
    return util::unexpected(cp.error());
  if (o.max_package_build_s > 0) spec.timeout = std::chrono::seconds(o.max_package_build_s + 30);
  util::log_info("{}: building as shipped on {}", src.package, to.release);
  auto r = gate::build_tree(to, work->path() / "tree", spec);
  if (!r) return util::unexpected(r.error());
  PackageBuild pb{true, seconds_of(r->run.elapsed), ""};
  if (o.max_package_build_s > 0 && pb.seconds > o.max_package_build_s) pb = {false, pb.seconds, "package-too-slow"};
  else if (!r->run.ok()) pb = {false, pb.seconds, "package-fails-on-target"};
  // A root Makefile that only delegates (or a package that needs its configure step) can exit 0
  // with no module: then every collapsed tree would "build".
  else if (r->modules.empty()) pb = {false, pb.seconds, "package-builds-no-module"};
  // A case's incremental build is bounded by a full one.
  spec.timeout = std::chrono::seconds(static_cast<int>(pb.seconds) * 2 + 60);
  return pb;
}

/// Whether the scratch tree with the unit's files collapsed still builds on TO.
util::Expected<bool> collapsed_builds(const core::Kernel& to, const fs::path& tree, const std::vector<Candidate>& unit,
                                      const CollapsedUnit& cu, const gate::BuildSpec& spec) {
  for (const auto& [rel, text] : cu.old_files) (void)util::write_file(tree / rel, text);
  auto r = gate::build_tree(to, tree, spec);
  for (const auto& c : unit) (void)util::write_file(tree / c.rel, c.text);
  if (!r) return util::unexpected(r.error());
  return r->run.ok();
}

/// The cases of one package, printed and written; its summary entry. T counts them.
util::Expected<nlohmann::json> package_cases(const CasesOptions& o, const propose::KbSource& src, const core::Kernel& to,
                                             std::vector<Candidate> cands, std::set<std::string>& ids, Tally& t) {
  std::size_t blocks = cands.size();
  auto units = units_of(std::move(cands), o.by_boundary);
  std::string build_cmd = package_build_cmd(src.root);
  gate::BuildSpec spec{build_cmd, {}, std::chrono::seconds(600), 2};
  PackageBuild pb{true, 0, ""};
  std::optional<util::TempDir> work;
  if (o.check_build) {
    auto b = build_as_shipped(o, src, to, spec, work);
    if (!b) return util::unexpected(b.error());
    pb = *b;
  }
  for (const auto& unit : units) {
    if (!pb.ok) {
      ++t.excluded[pb.why];
      continue;
    }
    if (o.max_per_package > 0 && t.cases >= o.max_per_package) {
      ++t.excluded["over-package-cap"];
      continue;
    }
    auto collapsed = collapse_unit(unit);
    if (o.check_build) {
      auto builds = collapsed_builds(to, work->path() / "tree", unit, collapsed, spec);
      if (!builds) return util::unexpected(builds.error());
      if (*builds) {
        ++t.excluded["already-builds"];
        continue;
      }
    }
    auto id = write_case(o, src, unit, collapsed, build_cmd, ids);
    if (!id) return util::unexpected(id.error());
    fmt::print("{}\n", *id);
    ++t.cases;
  }
  nlohmann::json pj = {{"package", src.package},         {"version", src.version}, {"selected_blocks", blocks},
                       {"selected_cases", units.size()}, {"cases", t.cases},       {"excluded", t.excluded}};
  if (o.check_build) pj["build_s"] = pb.seconds;
  util::log_info("{}: {} block(s) in {} case(s) selected, {} written{}", src.package, blocks, units.size(), t.cases,
                 o.check_build ? fmt::format(", shipped build {:.1f} s", pb.seconds) : "");
  return pj;
}

} // namespace

int run_cases(const CasesOptions& o) {
  auto to = kernel::resolve_kernel(o.to);
  if (!to) {
    std::fprintf(stderr, "autodriver: error: --to %s: %s\n", o.to.c_str(), to.error().message.c_str());
    return k_exit_error;
  }
  propose::KVersion fv;
  if (!o.older_than_target) {
    auto from = kernel::resolve_kernel(o.from);
    if (!from) {
      std::fprintf(stderr, "autodriver: error: --from %s: %s\n", o.from.c_str(), from.error().message.c_str());
      return k_exit_error;
    }
    fv = kernel_version(*from);
  }
  auto tv = kernel_version(*to);
  auto sources = gather(o.sources, to->suite);
  if (!sources) {
    std::fprintf(stderr, "autodriver: error: %s\n", sources.error().message.c_str());
    return k_exit_error;
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  Tally all;
  std::size_t blocks = 0;
  std::set<std::string> ids;
  nlohmann::json packages = nlohmann::json::array();
  for (const auto& src : *sources) {
    auto cands = candidates_of(src, o, fv, tv);
    if (cands.empty()) continue;
    blocks += cands.size();
    Tally t;
    auto pj = package_cases(o, src, *to, std::move(cands), ids, t);
    if (!pj) {
      std::fprintf(stderr, "autodriver: error: %s\n", pj.error().message.c_str());
      return k_exit_error;
    }
    packages.push_back(std::move(*pj));
    all.cases += t.cases;
    for (const auto& [k, n] : t.excluded) all.excluded[k] += n;
  }
  int selected = all.cases;
  for (const auto& [_, n] : all.excluded) selected += n;
  nlohmann::json summary = {{"schema", "autodriver.kb-cases-summary"},
                            {"schema_version", 1},
                            {"mode", o.older_than_target ? "older-than-target" : "from-to"},
                            {"to", o.to},
                            {"to_version", tv.str()},
                            {"check_build", o.check_build},
                            {"max_per_package", o.max_per_package},
                            {"by_boundary", o.by_boundary},
                            {"max_package_build_s", o.max_package_build_s},
                            {"selected_blocks", blocks},
                            {"selected_cases", selected},
                            {"cases", all.cases},
                            {"excluded", all.excluded},
                            {"packages", packages}};
  if (!o.older_than_target) summary["from"] = o.from;
  (void)util::write_file_atomic(o.out / "summary.json", summary.dump(2, ' ', false, util::json_bytes) + "\n");
  std::string why;
  for (const auto& [k, n] : all.excluded) why += fmt::format(", {} {}", k, n);
  std::fprintf(stderr, "autodriver: %zu block(s) selected in %d case(s), %d written%s (%s)\n", blocks, selected, all.cases,
               why.c_str(), (o.out / "summary.json").string().c_str());
  return k_exit_ok;
}

} // namespace autodriver::cli
