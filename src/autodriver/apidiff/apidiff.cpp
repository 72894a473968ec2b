#include "autodriver/apidiff/apidiff.hpp"

#include "autodriver/apidiff/diff.hpp"
#include "autodriver/apidiff/kbuild_flags.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"

#include <fmt/format.h>

#include <future>
#include <set>
#include <tuple>

namespace fs = std::filesystem;

namespace autodriver::apidiff {

namespace {

struct KernelBuild {
  std::optional<util::TempDir> scratch;
  Capture capture;
  std::map<std::string, std::vector<std::string>> by_rel; ///< relative source path -> gcc argv
};

util::Expected<KernelBuild> build_for(const ApidiffRequest& req, const core::Kernel& k) {
  if (!k.has_headers())
    return util::unexpected(util::ErrorKind::not_found,
                            fmt::format("kernel {} has no build directory at {}: run `autodriver kernel fetch {}`", k.name,
                                        k.build_dir.string(), k.name));
  auto scratch = util::TempDir::create(util::scratch_root(), "apidiff-");
  if (!scratch) return util::unexpected(scratch.error());
  KernelBuild kb;
  fs::path dir = scratch->path();
  kb.scratch.emplace(std::move(*scratch));
  if (auto c = util::copy_tree(req.tree, dir, util::SkipBuildProducts::yes); !c) return util::unexpected(c.error());
  CaptureSpec spec{req.build_cmd, req.build_timeout, req.subdir};
  auto cap = capture_compile_commands(k, dir, spec);
  if (!cap) return util::unexpected(cap.error());
  kb.capture = std::move(*cap);
  std::string prefix = dir.string() + "/";
  for (auto& [file, argv] : kb.capture.commands) {
    // Only the driver's own files: not kbuild's generated <module>.mod.c.
    if (!file.starts_with(prefix) || !fs::exists(req.tree / file.substr(prefix.size()))) continue;
    // Paths into the scratch copy (the source, -I$(src)) point back into the user's tree.
    for (auto& a : argv)
      if (auto pos = a.find(dir.string()); pos != std::string::npos) a.replace(pos, dir.string().size(), req.tree.string());
    kb.by_rel[file.substr(prefix.size())] = std::move(argv);
  }
  return kb;
}

util::Expected<std::pair<DeclSet, KernelParse>> parse_for(const ApidiffRequest& req, const core::Kernel& k,
                                                          const std::string& rel, const std::vector<std::string>& argv) {
  KernelParse kp;
  kp.release = k.release;
  kp.clang_args = to_clang_args(argv, k.build_dir);
  ParseOptions po = req.parse;
  po.exclude_root = req.tree;
  auto set = read_declarations(req.tree / rel, kp.clang_args, po);
  if (!set) return util::unexpected(set.error());
  kp.declarations = set->decls.size();
  kp.parse_errors = set->parse_errors;
  kp.error_samples = set->error_samples;
  return std::make_pair(std::move(*set), std::move(kp));
}

} // namespace

util::Expected<ApidiffReport> run_apidiff(const ApidiffRequest& request) {
  auto t0 = std::chrono::steady_clock::now();
  ApidiffRequest req = request;
  std::error_code ec;
  if (!fs::is_directory(req.tree, ec))
    return util::unexpected(util::ErrorKind::config, fmt::format("{} is not a directory", req.tree.string()));
  req.tree = fs::canonical(req.tree, ec);

  ApidiffReport report;
  report.tree = req.tree;
  report.from = req.from;
  report.to = req.to;
  // Two kbuild runs at once: each is mostly waiting on make and gcc.
  auto fut_from = std::async(std::launch::async, [&] { return build_for(req, req.from); });
  auto built_to = build_for(req, req.to);
  auto built_from = fut_from.get();
  if (!built_from) return util::unexpected(built_from.error());
  if (!built_to) return util::unexpected(built_to.error());
  report.build_from = built_from->capture.command;
  report.build_to = built_to->capture.command;

  std::set<std::string> files;
  for (const auto& [rel, _] : built_from->by_rel) files.insert(rel);
  for (const auto& [rel, _] : built_to->by_rel) files.insert(rel);
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (const auto& rel : files) {
    auto a = built_from->by_rel.find(rel);
    auto b = built_to->by_rel.find(rel);
    if (a == built_from->by_rel.end() || b == built_to->by_rel.end()) {
      report.skipped.push_back(
          fmt::format("{}: no compile command on {}", rel, a == built_from->by_rel.end() ? req.from.name : req.to.name));
      continue;
    }
    util::log_info("apidiff: parsing {} for {} and {}", rel, req.from.release, req.to.release);
    auto fut = std::async(std::launch::async, [&] { return parse_for(req, req.from, rel, a->second); });
    auto pt = parse_for(req, req.to, rel, b->second);
    auto pf = fut.get();
    if (!pf || !pt) {
      report.skipped.push_back(fmt::format("{}: {}", rel, (!pf ? pf.error() : pt.error()).message));
      continue;
    }
    FileReport fr;
    fr.file = rel;
    fr.identifiers = pf->first.used.size();
    fr.from = std::move(pf->second);
    fr.to = std::move(pt->second);
    fr.changes = diff_declarations(pf->first, pt->first, pf->first.used);
    for (const auto& c : fr.changes)
      if (seen.insert({c.symbol, c.member, static_cast<int>(c.kind)}).second) report.changes.push_back(c);
    report.files.push_back(std::move(fr));
  }
  if (report.files.empty())
    return util::unexpected(
        util::ErrorKind::config,
        fmt::format("no C file of {} was compiled by kbuild on both {} and {} ({} exited {}, {} exited {}): does it "
                    "have a Makefile with obj-m, or give --build-cmd",
                    req.tree.string(), req.from.name, req.to.name, report.build_from, built_from->capture.exit_code,
                    report.build_to, built_to->capture.exit_code));
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  return report;
}

nlohmann::json to_json(const ApidiffReport& r) {
  auto kernel = [](const core::Kernel& k, const std::string& build) {
    return nlohmann::json{{"name", k.name}, {"release", k.release}, {"build_dir", k.build_dir.string()}, {"build", build}};
  };
  auto parse = [](const KernelParse& p) {
    return nlohmann::json{{"release", p.release},
                          {"declarations", p.declarations},
                          {"parse_errors", p.parse_errors},
                          {"error_samples", p.error_samples},
                          {"clang_args", p.clang_args}};
  };
  nlohmann::json j = {{"schema", "autodriver.apidiff"},
                      {"schema_version", k_json_schema_version},
                      {"tree", r.tree.string()},
                      {"from", kernel(r.from, r.build_from)},
                      {"to", kernel(r.to, r.build_to)},
                      {"elapsed_ms", r.elapsed.count()},
                      {"skipped", r.skipped}};
  j["files"] = nlohmann::json::array();
  for (const auto& f : r.files) {
    nlohmann::json fj = {{"file", f.file}, {"identifiers", f.identifiers}, {"from", parse(f.from)}, {"to", parse(f.to)}};
    fj["changes"] = nlohmann::json::array();
    for (const auto& c : f.changes) fj["changes"].push_back(core::to_json(c));
    j["files"].push_back(std::move(fj));
  }
  j["changes"] = nlohmann::json::array();
  for (const auto& c : r.changes) j["changes"].push_back(core::to_json(c));
  return j;
}

} // namespace autodriver::apidiff
