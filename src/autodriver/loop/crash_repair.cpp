#include "autodriver/loop/crash_repair.hpp"

#include "autodriver/loop/boot_crash.hpp"

#include "autodriver/crash/repair.hpp"
#include "autodriver/gate/check.hpp"
#include "autodriver/gate/integrity.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <set>

namespace autodriver::loop {

namespace fs = std::filesystem;

namespace {

/// One boot of `tree`: the boot gate's outcome and the crash reports on its console.
struct Run {
  std::string outcome;
  std::string summary; ///< the boot gate's summary, or its infrastructure error
  std::vector<crash::CrashReport> reports;
  bool ok = false;
  bool loaded = false; ///< every module's insmod succeeded

  std::vector<std::string> titles() const {
    std::vector<std::string> out;
    for (const auto& rep : reports) out.push_back(rep.title);
    return out;
  }
};

util::Expected<Run> boot_once(const CrashRepairRequest& req, const core::Kernel& k, const fs::path& tree) {
  gate::CheckRequest cr;
  cr.tree = tree;
  cr.kernels = {req.kernel};
  cr.sparse = false;
  cr.boot = true;
  cr.device = req.device;
  cr.repro = req.repro;
  cr.build_timeout = req.build_timeout;
  auto chk = gate::run_check(cr, nullptr);
  if (!chk) return util::unexpected(chk.error());
  auto j = gate::to_json(*chk, cr);
  const auto& bk = j["gates"]["boot"]["by_kernel"];
  Run r;
  r.ok = chk->ok;
  if (bk.is_object() && bk.contains(k.release)) {
    r.outcome = boot_outcome(j, k.release);
    const auto& infra = bk[k.release]["infra_error"];
    r.summary = infra.is_string() && !infra.get<std::string>().empty() ? infra.get<std::string>()
                                                                       : util::json_get(bk[k.release], "summary", "");
    r.reports = boot_crash_reports(j, k.release);
    const auto details = util::json_get(bk[k.release], "details", nlohmann::json::object());
    const auto insmod = util::json_get(details, "insmod", nlohmann::json::object());
    r.loaded = insmod.is_object() && !insmod.empty();
    for (const auto& [name, one] : insmod.items()) r.loaded = r.loaded && util::json_get(one, "rc", -1) == 0;
  } else {
    // No boot: the build failed.
    r.outcome = "build-failed";
  }
  return r;
}

} // namespace

bool reproduced(const crash::CrashReport& report, const std::vector<crash::Hypothesis>& hyps,
                const std::vector<crash::CrashReport>& again) {
  auto any = [&](auto pred) { return std::any_of(again.begin(), again.end(), pred); };
  if (any([&](const crash::CrashReport& a) { return same_crash_title(a.title, report.title); })) return true;
  // Memory sized too small is found by whichever check reaches it first (a red zone at its free
  // one boot, the slab's padding or metadata the next) or breaks whatever lies next to it (the
  // kernel's BUG in the neighbour's own code, a pointer read from it): any crash reproduces it,
  // and the repair must still boot clean every time.
  if (!hyps.empty() && hyps.front().kind == "alloc-size") return !again.empty();
  // Freed memory used is found by whichever detector reaches it first: KFENCE's report one boot (it
  // samples allocations), the WARNING or fault the poisoned value causes the next. For a release
  // out of order, any report whose innermost driver frame is the same function reproduces it. So
  // for memory given back with another allocator's release (vfree() of kmalloc()'s warns in
  // vfree() one boot, in remove_vm_area() the next) and a member never initialised (a zeroed work
  // item trips whichever of the workqueue's checks comes first).
  static const std::set<std::string> k_by_driver_frame = {"use-after-release", "double-release", "foreign-release",
                                                          "never-initialised"};
  if (!hyps.empty() && k_by_driver_frame.count(hyps.front().kind)) {
    const auto in_driver = [](const crash::CrashReport& a) -> std::string {
      if (a.rip && !a.rip->module.empty()) return a.rip->function;
      for (const auto& f : a.trace)
        if (f.reliable && !f.module.empty()) return f.function;
      return {};
    };
    const std::string here = in_driver(report);
    if (!here.empty() && any([&](const crash::CrashReport& a) { return in_driver(a) == here; })) return true;
  }
  // A crash in code or data of a module that is gone (what a missing cleanup or teardown leaves)
  // faults wherever the freed memory is next touched: any such fault reproduces it. So does any
  // crash while the module unloads when the cause is a teardown it lacks: what it left registered
  // is reached by whichever path gets there first (the kernel's BUG in free_netdev() one boot, a
  // transmit through the unmapped registers the next).
  if (hyps.empty() || (hyps.front().kind != "missing-cleanup" && hyps.front().kind != "missing-teardown")) return false;
  const auto gone = [](const crash::CrashReport& a) { return crash::module_address(a); };
  if (crash::module_address(report) && any(gone)) return true;
  return hyps.front().kind == "missing-teardown" && !report.unloading.empty() &&
         any([](const crash::CrashReport& a) { return !a.unloading.empty() || crash::module_address(a); });
}

namespace {

/// The crash's places as the diagnostics the integrity gate weighs edits against: a repair may
/// change the functions the hypotheses name, and the integrity rules (no deleted or stubbed
/// function, no disabled code, ...) apply as they do to a port.
std::vector<core::Diagnostic> crash_diagnostics(const std::vector<crash::Hypothesis>& hyps) {
  std::vector<core::Diagnostic> out;
  for (const auto& h : hyps) {
    if (h.file.empty()) continue;
    core::Diagnostic d;
    d.tool = "crash";
    d.file = h.file;
    d.line = h.line;
    d.function = h.function;
    d.message = h.statement;
    d.symbols = {h.function};
    if (!h.variable.empty()) d.symbols.push_back(h.variable);
    out.push_back(std::move(d));
  }
  return out;
}

} // namespace

util::Expected<nlohmann::json> repair_crash(const CrashRepairRequest& req, const crash::CrashReport& report,
                                            const std::vector<crash::Hypothesis>& hyps,
                                            const std::function<void(const std::string&)>& note) {
  auto k = kernel::resolve_kernel(req.kernel);
  if (!k) return util::unexpected(k.error());
  nlohmann::json j = {{"schema", "autodriver.crash-repair"},
                      {"schema_version", 1},
                      {"title", report.title},
                      {"kernel", k->release},
                      {"runs", req.runs},
                      {"repaired", false}};
  j["candidates"] = nlohmann::json::array();
  auto repairs = crash::propose_repairs(hyps, req.driver, kernel::cached_source(*k));
  if (repairs.empty()) {
    j["status"] = "no-repair";
    j["reason"] = "no repair class covers these hypotheses (repairs exist for use-before-set, use-after-release, double-release, "
                  "double-acquire, missing-unlock, missing-cleanup, missing-teardown, teardown-order, managed-release, "
                  "loop-bound, alloc-size, never-set, never-initialised, sleep-in-atomic, foreign-release, buffer-size and "
                  "unchecked-result)";
    return j;
  }
  note(fmt::format("reproducing '{}' with the unchanged driver on {}", report.title, k->release));
  auto before = boot_once(req, *k, req.driver);
  if (!before) return util::unexpected(before.error());
  j["before"] = {{"outcome", before->outcome}, {"titles", before->titles()}, {"summary", before->summary}};
  if (!reproduced(report, hyps, before->reports)) {
    j["status"] = "does-not-reproduce";
    j["reason"] = fmt::format("the unchanged driver booted on {} did not crash with '{}' (outcome {}: {}): nothing to "
                              "validate a repair against",
                              k->release, report.title, before->outcome.empty() ? "none" : before->outcome,
                              before->summary.empty() ? "no summary" : before->summary);
    return j;
  }
  auto scratch = gate::make_scratch("crash-repair");
  if (!scratch) return util::unexpected(scratch.error());
  for (const auto& e : repairs) {
    const fs::path tree = scratch->path() / fmt::format("candidate-{}", j["candidates"].size());
    if (auto c = util::copy_tree(req.driver, tree, util::SkipBuildProducts::yes); !c) return util::unexpected(c.error());
    if (auto w = util::write_file(tree / e.file, e.new_text); !w) return util::unexpected(w.error());
    nlohmann::json cj = {{"kind", e.kind}, {"file", e.file}, {"description", e.description}};
    cj["runs"] = nlohmann::json::array();
    gate::IntegrityInput ii;
    ii.original = req.driver;
    ii.candidate = tree;
    ii.diagnostics = crash_diagnostics(hyps);
    // The other places the repair changes for the same hypothesis (a managed object's other releases).
    for (const auto& [line, function] : e.also) {
      core::Diagnostic d;
      d.tool = "crash";
      d.file = e.file;
      d.line = line;
      d.function = function;
      d.message = e.description;
      d.symbols = {function};
      ii.diagnostics.push_back(std::move(d));
    }
    auto integrity = gate::check_integrity(ii);
    cj["integrity"] = gate::to_json(integrity);
    int clean = 0;
    for (int i = 0; i < req.runs && integrity.ok; ++i) {
      note(fmt::format("candidate {} ({}): run {}/{}", j["candidates"].size() + 1, e.kind, i + 1, req.runs));
      auto r = boot_once(req, *k, tree);
      if (!r) return util::unexpected(r.error());
      cj["runs"].push_back({{"outcome", r->outcome}, {"titles", r->titles()}});
      // A module whose init failed before the crash too (missing cleanup) may go on failing to
      // load, now without the crash.
      const bool as_before = !before->loaded && r->outcome == "insmod-failed";
      // Any crash report ends it, the original crash's or another.
      if ((!r->ok && !as_before) || !r->reports.empty()) break;
      ++clean;
    }
    cj["clean_runs"] = clean;
    cj["kept"] = clean == req.runs;
    cj["patch"] = util::unified_diff(req.driver, tree, e.file);
    j["candidates"].push_back(cj);
    if (clean != req.runs) continue;
    std::error_code ec;
    fs::remove_all(req.out / "tree", ec);
    fs::create_directories(req.out, ec);
    if (auto c = util::copy_tree(tree, req.out / "tree", util::SkipBuildProducts::yes); !c) return util::unexpected(c.error());
    if (auto w = util::write_file_atomic(req.out / "repair.patch", cj["patch"].get<std::string>()); !w)
      return util::unexpected(w.error());
    j["repaired"] = true;
    j["status"] = "repaired";
    j["repair"] = cj;
    return j;
  }
  j["status"] = "not-repaired";
  j["reason"] = fmt::format("{} candidate(s), none ran clean {} time(s) of {}", repairs.size(), req.runs, req.runs);
  return j;
}

} // namespace autodriver::loop
