#include "autodriver/corpus/unit_worker.hpp"

#include "autodriver/corpus/case_format.hpp"
#include "autodriver/corpus/runtime.hpp"
#include "autodriver/corpus/split.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

namespace autodriver::corpus {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

std::string source_tree_version(const fs::path& tree) {
  auto text = util::read_file(tree / "Makefile");
  if (!text) return {};
  std::map<std::string, std::string> v;
  static const std::regex k_re(R"(^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d+))");
  for (auto line : util::split_lines(*text)) {
    std::string l(line);
    std::smatch m;
    if (std::regex_search(l, m, k_re)) v.emplace(m[1].str(), m[2].str());
    if (v.size() == 3) break;
  }
  return fmt::format("{}.{}.{}", v["VERSION"], v["PATCHLEVEL"], v["SUBLEVEL"]);
}

namespace {

std::string first_error(const gate::BuildRun& br) {
  if (br.run.timed_out) return "build timed out";
  for (const auto& d : br.diagnostics)
    if (d.severity == core::Severity::error || d.severity == core::Severity::fatal)
      return fmt::format("{}:{}: {}", d.file, d.line, d.message);
  if (br.run.ok() && br.modules.empty()) return "the build produced no .ko";
  auto lines = util::split_lines(br.run.out);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (!util::trim(*it).empty()) return std::string(util::trim(*it));
  return br.run.status_text();
}

bool built(const gate::BuildRun& br) { return br.run.ok() && !br.modules.empty(); }

Outcome not_buildable(std::string reason) { return {{"outcome", "not-buildable"}, {"reason", std::move(reason)}}; }

util::Expected<gate::BuildRun> build(const core::Kernel& k, const fs::path& tree, const ScanContext& ctx,
                                     const std::string& cmd = {}) {
  gate::BuildSpec spec;
  spec.jobs = 1; // units run in parallel; one make job each
  spec.timeout = ctx.build_timeout;
  spec.build_cmd = cmd;
  auto br = gate::build_tree(k, tree, spec);
  if (!br) return br;
  if (br->run.interrupted) return unexpected(ErrorKind::interrupted, "interrupted");
  return br;
}

struct DriverText {
  std::vector<std::string> sources; ///< .c and .h texts
  long c_lines = 0;
  std::size_t files = 0;
  std::vector<PciId> pci_ids;
};

DriverText read_driver(const fs::path& root, const std::map<std::string, unsigned>& pci_defines) {
  DriverText t;
  std::map<std::string, unsigned> defines = pci_defines;
  std::map<std::string, std::string> macros;
  std::vector<std::string> c_files;
  for (const auto& rel : util::list_files(root)) {
    auto ext = rel.extension().string();
    if (ext != ".c" && ext != ".h") continue;
    auto text = util::read_file(root / rel);
    if (!text) continue;
    ++t.files;
    t.c_lines += std::count(text->begin(), text->end(), '\n');
    collect_numeric_defines(*text, defines);
    collect_function_macros(*text, macros);
    t.sources.push_back(std::move(*text));
  }
  for (const auto& s : t.sources)
    for (const auto& id : pci_ids_in(s, defines, macros))
      if (std::find(t.pci_ids.begin(), t.pci_ids.end(), id) == t.pci_ids.end()) t.pci_ids.push_back(id);
  return t;
}

nlohmann::json kernel_json(const core::Kernel& k, const std::string& version) {
  return {{"line", k.line}, {"release", k.release}, {"source_version", version}};
}

/// Shared tail of in-tree and DKMS cases: diagnostics, taxonomy, runtime, metadata, write.
util::Expected<Outcome> finish_case(const ScanContext& ctx, nlohmann::json meta, const fs::path& before, const fs::path& golden,
                                    const gate::BuildRun& old_build, const gate::BuildRun& new_build) {
  auto text = read_driver(before, ctx.pci_defines);
  auto cls = classify(new_build.diagnostics, ctx.from_headers, ctx.to_headers, text.sources);
  auto runtime = runtime_testability(text.sources, text.pci_ids);

  nlohmann::json diags = nlohmann::json::array();
  int errors = 0, warnings = 0;
  std::map<std::string, int> kinds;
  for (const auto& d : new_build.diagnostics) {
    diags.push_back(core::to_json(d));
    if (d.severity == core::Severity::error || d.severity == core::Severity::fatal) {
      ++errors;
      ++kinds[std::string(core::to_string(d.kind))];
    } else if (d.severity == core::Severity::warning) {
      ++warnings;
    }
  }
  std::set<std::string> symbols;
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : cls.changes) {
    changes.push_back(to_json(c));
    if (c.symbol != "(unnamed)") symbols.insert(c.symbol);
  }
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& id : text.pci_ids) {
    if (ids.size() >= 64) break;
    ids.push_back(fmt::format("{:04x}:{:04x}", id.vendor, id.device));
  }
  nlohmann::json rt = to_json(runtime);
  rt["pci_ids"] = ids;

  const std::string path = meta["unit"]["path"].get<std::string>();
  meta["id"] = case_id_from_path(path);
  meta["from"] = kernel_json(ctx.from, ctx.from_version);
  meta["to"] = kernel_json(ctx.to, ctx.to_version);
  meta["size"] = {{"c_lines", text.c_lines}, {"files", text.files}};
  meta["before_build"] = {{"command", old_build.command}, {"modules", nlohmann::json::array()}};
  for (const auto& m : old_build.modules) meta["before_build"]["modules"].push_back(m.string());
  meta["diagnostics"] = {{"errors", errors},   {"warnings", warnings},
                         {"kinds", kinds},     {"distinct_symbols", symbols.size()},
                         {"symbols", symbols}, {"first_error", first_error(new_build)}};
  meta["change_types"] = cls.labels;
  meta["changes"] = changes;
  meta["description"] = cls.description;
  meta["split"] = split_of(path);
  meta["runtime"] = rt;
  meta["files"] = {{"before", "before/"},
                   {"golden", golden.empty() ? nlohmann::json() : nlohmann::json("golden/")},
                   {"diagnostics", "diagnostics.json"},
                   {"api_delta", "api_delta.patch"}};
  meta["created_by"] = "autodriver 0.1.0";

  CaseFiles files;
  files.metadata = meta;
  files.before = before;
  files.golden = golden;
  files.diagnostics = std::move(diags);
  files.api_delta = cls.api_delta;
  auto written = write_case(ctx.corpus, files);
  if (!written) return unexpected(written.error());
  return Outcome{{"outcome", "case"},
                 {"case_id", meta["id"]},
                 {"subsystem", meta["subsystem"]},
                 {"change_types", cls.labels},
                 {"runtime", runtime.kind},
                 {"qemu_device", runtime.qemu_device},
                 {"golden", meta["golden"].value("status", "none")},
                 {"distinct_symbols", symbols.size()},
                 {"errors", errors},
                 {"split", meta["split"]},
                 {"c_lines", text.c_lines}};
}

} // namespace

util::Expected<Outcome> decide_in_tree_unit(const ScanContext& ctx, const DriverUnit& unit) {
  if (!unit.problems.empty()) return not_buildable("Makefile: " + unit.problems.front());
  auto plan = plan_unit(ctx.from_tree, unit, "Linux " + ctx.from_version);
  if (!plan.problems.empty()) return not_buildable(plan.problems.front());
  auto scratch = gate::make_scratch("corpus");
  if (!scratch) return unexpected(scratch.error());
  const fs::path before = scratch->path() / "before";
  if (auto r = materialize_unit(ctx.from_tree, unit, plan, before); !r) return unexpected(r.error());

  auto b1 = build(ctx.from, before, ctx);
  if (!b1) return unexpected(b1.error());
  if (!built(*b1)) {
    std::string reason = first_error(*b1);
    if (!plan.outside.empty()) reason += " (includes files outside its directory: " + plan.outside.front() + ")";
    return not_buildable(reason);
  }
  gate::clean_build_products(before);
  auto b2 = build(ctx.to, before, ctx);
  if (!b2) return unexpected(b2.error());
  if (built(*b2)) return Outcome{{"outcome", "builds-both"}};
  if (b2->run.timed_out) return Outcome{{"outcome", "new-build-timeout"}, {"reason", "build timed out"}};
  gate::clean_build_products(before);

  // Golden: the same unit in the new tree, or the one module of that name elsewhere (moved).
  nlohmann::json golden = {{"status", "removed"}};
  fs::path golden_dir;
  const DriverUnit* g = nullptr;
  if (auto it = ctx.to_units_by_path.find(unit.path()); it != ctx.to_units_by_path.end()) {
    g = &it->second;
  } else if (auto m = ctx.to_paths_by_module.find(unit.module); m != ctx.to_paths_by_module.end() && m->second.size() == 1) {
    g = &ctx.to_units_by_path.at(m->second.front());
    golden["moved_from"] = unit.path();
  }
  if (g) {
    golden["path"] = g->path();
    golden["config_value"] = g->config_value;
    auto gplan = plan_unit(ctx.to_tree, *g, "Linux " + ctx.to_version);
    golden_dir = scratch->path() / "golden";
    if (auto r = materialize_unit(ctx.to_tree, *g, gplan, golden_dir); !r) return unexpected(r.error());
    if (!g->problems.empty() || !gplan.problems.empty()) {
      golden["status"] = "not-buildable-out-of-tree";
      golden["reason"] = !g->problems.empty() ? g->problems.front() : gplan.problems.front();
    } else {
      auto gb = build(ctx.to, golden_dir, ctx);
      if (!gb) return unexpected(gb.error());
      golden["status"] = built(*gb) ? (golden.contains("moved_from") ? "moved-builds" : "builds") : "fails";
      if (!built(*gb)) golden["first_error"] = first_error(*gb);
      gate::clean_build_products(golden_dir);
    }
  }

  nlohmann::json meta = {{"origin", "in-tree"},
                         {"subsystem", subsystem_of(unit.dir)},
                         {"unit",
                          {{"path", unit.path()},
                           {"dir", unit.dir},
                           {"module", unit.module},
                           {"config", unit.config},
                           {"config_value_from", unit.config_value},
                           {"objects", unit.objects},
                           {"files", plan.files},
                           {"build_command", "make -C {kdir} M=<before> modules"}}},
                         {"golden", golden}};
  return finish_case(ctx, std::move(meta), before, golden_dir, *b1, *b2);
}

util::Expected<Outcome> decide_dkms_unit(const ScanContext& ctx, const std::string& package) {
  auto src = fetch_dkms_source(package, dkms_suite(ctx.to.suite));
  if (!src) return unexpected(src.error());
  auto scratch = gate::make_scratch("corpus-dkms");
  if (!scratch) return unexpected(scratch.error());
  const fs::path before = scratch->path() / "before";
  if (auto r = util::copy_tree(src->source, before, util::SkipBuildProducts::yes); !r) return unexpected(r.error());

  // Plain kbuild M= first (what most DKMS Makefiles support), then dkms.conf's MAKE[0].
  std::string cmd_template;
  std::optional<gate::BuildRun> b1;
  if (gate::has_kbuild_makefile(before)) {
    auto r = build(ctx.from, before, ctx);
    if (!r) return unexpected(r.error());
    b1 = std::move(*r);
  }
  const std::string dkms_cmd = dkms_build_command(src->conf, "{tree}");
  if ((!b1 || !built(*b1)) && !dkms_cmd.empty()) {
    gate::clean_build_products(before);
    auto r = build(ctx.from, before, ctx, util::substitute(dkms_cmd, {{"tree", before.string()}}));
    if (!r) return unexpected(r.error());
    if (built(*r) || !b1) {
      b1 = std::move(*r);
      cmd_template = dkms_cmd;
    }
  }
  if (!b1) return not_buildable("no Makefile and no usable MAKE[0] in dkms.conf");
  if (!built(*b1)) return not_buildable(first_error(*b1));
  gate::clean_build_products(before);
  auto cmd = cmd_template.empty() ? std::string() : util::substitute(cmd_template, {{"tree", before.string()}});
  auto b2 = build(ctx.to, before, ctx, cmd);
  if (!b2) return unexpected(b2.error());
  if (built(*b2)) return Outcome{{"outcome", "builds-both"}};
  if (b2->run.timed_out) return Outcome{{"outcome", "new-build-timeout"}, {"reason", "build timed out"}};
  gate::clean_build_products(before);

  std::string name = package.substr(0, package.size() - std::string("-dkms").size());
  nlohmann::json meta = {{"origin", "dkms"},
                         {"subsystem", "dkms"},
                         {"unit",
                          {{"path", "dkms/" + name},
                           {"dir", "."},
                           {"module", src->conf.module_names.empty() ? name : src->conf.module_names.front()},
                           {"modules", src->conf.module_names},
                           {"package", package},
                           {"deb", src->version},
                           {"suite", src->suite},
                           {"build_command", cmd_template.empty() ? "make -C {kdir} M=<before> modules" : cmd_template}}},
                         {"golden", {{"status", "none"}, {"reason", "out-of-tree driver: success is build + load"}}}};
  return finish_case(ctx, std::move(meta), before, {}, *b1, *b2);
}

} // namespace autodriver::corpus
