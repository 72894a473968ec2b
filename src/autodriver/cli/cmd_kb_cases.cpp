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

/// One case: the package's tree with the block collapsed to its old form, and case.json beside it,
/// in OUT/ID; returns the ID.
util::Expected<std::string> write_case(const CasesOptions& o, const propose::KbSource& src, const Candidate& c,
                                       const propose::CollapsedCase& collapsed, const std::string& build_cmd,
                                       std::set<std::string>& ids) {
  std::error_code ec;
  std::string id = fmt::format("{}--{}--L{}", src.package, std::regex_replace(c.rel.string(), std::regex("[^A-Za-z0-9_.-]"), "_"),
                               c.block.line);
  // Two pairs of one `#elif` chain share the `#if` line.
  if (!ids.insert(id).second) id += fmt::format("-{}", c.block.boundary.str());
  fs::path dir = o.out / id;
  fs::remove_all(dir, ec);
  if (auto cp = util::copy_tree(src.root, dir / "tree", util::SkipBuildProducts::yes); !cp) return util::unexpected(cp.error());
  (void)util::write_file(dir / "tree" / c.rel, collapsed.old_text);
  const auto& b = c.block;
  nlohmann::json j = {{"schema", "autodriver.kb-case"},
                      {"build_cmd", build_cmd},
                      {"schema_version", 1},
                      {"id", id},
                      {"package", src.package},
                      {"version", src.version},
                      {"file", c.rel.string()},
                      {"line", b.line},
                      {"end_line", b.end_line},
                      {"boundary", b.boundary.str()},
                      {"from", o.older_than_target ? std::string() : o.from},
                      {"to", o.to},
                      {"old_code", b.old_code},
                      {"new_code", b.new_code},
                      {"before", collapsed.before},
                      {"after", collapsed.after}};
  (void)util::write_file_atomic(dir / "case.json", j.dump(2, ' ', false, util::json_bytes) + "\n");
  return id;
}

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
  std::set<std::string> ids;
  nlohmann::json packages = nlohmann::json::array();
  for (const auto& src : *sources) {
    auto cands = candidates_of(src, o, fv, tv);
    if (cands.empty()) continue;
    std::string build_cmd = package_build_cmd(src.root);
    gate::BuildSpec spec{build_cmd, {}, std::chrono::seconds(600), 2};
    Tally t;
    PackageBuild pb{true, 0, ""};
    std::optional<util::TempDir> work;
    if (o.check_build) {
      // The package as shipped, built once in a scratch copy that every case of the package then
      // reuses: only the collapsed file (and what includes it) is recompiled.
      if (!gate::has_kbuild_makefile(src.root) && build_cmd.empty()) pb = {false, 0, "no-makefile"};
      if (pb.ok) {
        auto w = gate::make_scratch("kb-cases");
        if (!w) {
          std::fprintf(stderr, "autodriver: error: %s\n", w.error().message.c_str());
          return k_exit_error;
        }
        work.emplace(std::move(*w));
        if (auto cp = util::copy_tree(src.root, work->path() / "tree", util::SkipBuildProducts::yes); !cp) {
          std::fprintf(stderr, "autodriver: error: %s\n", cp.error().message.c_str());
          return k_exit_error;
        }
        if (o.max_package_build_s > 0) spec.timeout = std::chrono::seconds(o.max_package_build_s + 30);
        util::log_info("{}: building as shipped on {}", src.package, to->release);
        auto r = gate::build_tree(*to, work->path() / "tree", spec);
        if (!r) {
          std::fprintf(stderr, "autodriver: error: %s\n", r.error().message.c_str());
          return k_exit_error;
        }
        pb.seconds = seconds_of(r->run.elapsed);
        if (o.max_package_build_s > 0 && pb.seconds > o.max_package_build_s) pb = {false, pb.seconds, "package-too-slow"};
        else if (!r->run.ok()) pb = {false, pb.seconds, "package-fails-on-target"};
        // A root Makefile that only delegates (or a package that needs its configure step) can
        // exit 0 with no module: then every collapsed tree would "build".
        else if (r->modules.empty()) pb = {false, pb.seconds, "package-builds-no-module"};
        // A case's incremental build is bounded by a full one.
        spec.timeout = std::chrono::seconds(static_cast<int>(pb.seconds) * 2 + 60);
      }
    }
    for (const auto& c : cands) {
      if (!pb.ok) {
        ++t.excluded[pb.why];
        continue;
      }
      if (o.max_per_package > 0 && t.cases >= o.max_per_package) {
        ++t.excluded["over-package-cap"];
        continue;
      }
      auto collapsed = propose::collapse_block(c.text, c.block);
      if (o.check_build) {
        fs::path file = work->path() / "tree" / c.rel;
        (void)util::write_file(file, collapsed.old_text);
        auto r = gate::build_tree(*to, work->path() / "tree", spec);
        (void)util::write_file(file, c.text);
        if (!r) {
          std::fprintf(stderr, "autodriver: error: %s\n", r.error().message.c_str());
          return k_exit_error;
        }
        if (r->run.ok()) {
          ++t.excluded["already-builds"];
          continue;
        }
      }
      auto id = write_case(o, src, c, collapsed, build_cmd, ids);
      if (!id) {
        std::fprintf(stderr, "autodriver: error: %s\n", id.error().message.c_str());
        return k_exit_error;
      }
      fmt::print("{}\n", *id);
      ++t.cases;
    }
    int selected = static_cast<int>(cands.size());
    nlohmann::json pj = {{"package", src.package},
                         {"version", src.version},
                         {"selected_blocks", selected},
                         {"cases", t.cases},
                         {"excluded", t.excluded}};
    if (o.check_build) pj["build_s"] = pb.seconds;
    packages.push_back(pj);
    util::log_info("{}: {} block(s), {} case(s){}", src.package, selected, t.cases,
                   o.check_build ? fmt::format(", shipped build {:.1f} s", pb.seconds) : "");
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
                            {"max_package_build_s", o.max_package_build_s},
                            {"selected_blocks", selected},
                            {"cases", all.cases},
                            {"excluded", all.excluded},
                            {"packages", packages}};
  if (!o.older_than_target) summary["from"] = o.from;
  (void)util::write_file_atomic(o.out / "summary.json", summary.dump(2, ' ', false, util::json_bytes) + "\n");
  std::string why;
  for (const auto& [k, n] : all.excluded) why += fmt::format(", {} {}", k, n);
  std::fprintf(stderr, "autodriver: %d block(s) selected, %d case(s)%s (%s)\n", selected, all.cases, why.c_str(),
               (o.out / "summary.json").string().c_str());
  return k_exit_ok;
}

} // namespace autodriver::cli
