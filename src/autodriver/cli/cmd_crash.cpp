// `autodriver crash LOG`: a kernel crash report read, symbolized against the driver's modules and
// localized in the driver's source, with --repair repaired where QEMU confirms it.

#include "autodriver/cli/commands.hpp"
#include "autodriver/crash/localize.hpp"
#include "autodriver/crash/report.hpp"
#include "autodriver/crash/symbolize.hpp"
#include "autodriver/crash/teardown.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/loop/crash_repair.hpp"
#include "autodriver/loop/output_dir.hpp"
#include "autodriver/store/run_store.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <set>

namespace autodriver::cli {

namespace fs = std::filesystem;

namespace {

struct CrashOptions {
  fs::path log;
  fs::path driver;
  std::string kernel;
  std::vector<std::string> modules; ///< NAME=KO
  fs::path vmlinux;
  bool json = false;
  bool repair = false;
  fs::path out;
  std::string device;
  std::string repro;
  int runs = 3;
};

/// Builds DIR against K in a scratch copy; the modules by load name ('-' as '_') and their .ko.
util::Expected<std::vector<std::pair<std::string, fs::path>>> build_modules(const CrashOptions& o, const core::Kernel& k,
                                                                            std::optional<util::TempDir>& work) {
  auto w = gate::make_scratch("crash");
  if (!w) return util::unexpected(w.error());
  work.emplace(std::move(*w));
  if (auto cp = util::copy_tree(o.driver, work->path() / "tree", util::SkipBuildProducts::yes); !cp)
    return util::unexpected(cp.error());
  util::log_info("building {} on {} for its debug info", o.driver.string(), k.release);
  gate::BuildSpec spec;
  auto r = gate::build_tree(k, work->path() / "tree", spec);
  if (!r) return util::unexpected(r.error());
  if (!r->run.ok() || r->modules.empty())
    return util::unexpected(util::ErrorKind::config, fmt::format("{} does not build on {} ({}): fix the build first "
                                                                 "(autodriver port), then symbolize",
                                                                 o.driver.string(), k.release, r->run.status_text()));
  std::vector<std::pair<std::string, fs::path>> mods;
  for (const auto& m : r->modules) mods.emplace_back(crash::module_name(m.stem().string()), work->path() / "tree" / m);
  return mods;
}

/// The human answer: each report, the driver's lines and the hypotheses, the repair.
void print_human(const CrashOptions& o, const std::vector<crash::CrashReport>& reports, const std::vector<crash::Location>& cands,
                 const std::vector<crash::Hypothesis>& hyps, int resolved, const std::set<std::string>& driver_modules,
                 const nlohmann::json& rep) {
  const bool in_driver = !cands.empty();
  for (const auto& r : reports)
    fmt::print("{}{}\n  kind {}, task {} (pid {}), kernel {}{}\n", r.title, r.truncated ? " (log cut short)" : "",
               crash::to_string(r.kind), r.task.empty() ? "?" : r.task, r.pid, r.release.empty() ? "?" : r.release,
               r.panicked ? ", then panic" : "");
  if (in_driver) {
    fmt::print("localized in the driver ({} frame(s) symbolized from debug info):\n", resolved);
    for (const auto& c : cands)
      fmt::print("  {}{} {}:{}  [{}]{}\n", c.function, c.module.empty() ? "" : " [" + c.module + "]",
                 c.file.empty() ? "?" : c.file, c.line, c.why,
                 c.from_debug_info     ? ""
                 : !c.inferred.empty() ? "  (inferred from the trace and the source: " + c.inferred + ")"
                 : c.role == "cause"   ? "  (from the source)"
                                       : "  (its definition: no line info)");
    for (const auto& h : hyps) fmt::print("hypothesis ({}): {}\n", h.kind, h.statement);
  } else {
    fmt::print("the crash is in the kernel, not in the driver's modules{}: nothing to localize in the driver\n",
               driver_modules.empty() ? "" : " (" + fmt::format("{}", fmt::join(driver_modules, ", ")) + ")");
  }
  if (rep.is_null()) {
    fmt::print("repair: not attempted (--repair -o OUT tries it)\n");
  } else {
    fmt::print("repair: {}{}\n", rep.value("status", ""), rep.contains("reason") ? " (" + rep.value("reason", "") + ")" : "");
    for (const auto& c : rep.value("candidates", nlohmann::json::array())) {
      fmt::print("  {} {}: {} ({}/{} clean run(s))\n", c.value("kept", false) ? "kept" : "refused", c.value("kind", ""),
                 c.value("description", ""), c.value("clean_runs", 0), o.runs);
      if (c.contains("integrity") && !c["integrity"].value("ok", true))
        for (const auto& v : c["integrity"].value("violations", nlohmann::json::array()))
          fmt::print("    integrity: {} at {}:{}: {}\n", v.value("rule", ""), v.value("file", ""), v.value("line", 0),
                     v.value("detail", ""));
    }
    if (rep.value("repaired", false))
      fmt::print("  tree: {}\n  patch: {}\n", (o.out / "tree").string(), (o.out / "repair.patch").string());
  }
}

/// The run in the run store: a `crash` run with one step per stage and the document as artifact.
/// A store that cannot be written is logged and the command goes on (its answer matters more).
class CrashRecord {
public:
  explicit CrashRecord(const CrashOptions& o) {
    auto st = store::RunStore::open(store_path_option().empty() ? store::default_store_path() : store_path_option());
    if (!st) {
      util::log_warn("run store: {}", st.error().message);
      return;
    }
    m_store.emplace(std::move(*st));
    store::RunInfo info;
    info.command = "crash";
    info.args = {{"log", fs::absolute(o.log).string()},
                 {"driver", o.driver.string()},
                 {"kernel", o.kernel},
                 {"modules", o.modules},
                 {"repair", o.repair},
                 {"device", o.device},
                 {"runs", o.runs},
                 {"out", o.out.string()}};
    info.tree = o.driver.empty() ? std::string() : fs::absolute(o.driver).string();
    if (auto id = m_store->begin_run(info)) m_id = *id;
    else m_store.reset();
  }
  void step(const std::string& kind, const nlohmann::json& output) {
    if (!m_store) return;
    store::StepRow s;
    s.run_id = m_id;
    s.kind = kind;
    s.component = "crash";
    s.output = output;
    s.started_at = store::now_iso();
    if (auto r = m_store->add_step(s); !r) util::log_warn("run store: {}", r.error().message);
  }
  void end(bool ok, const nlohmann::json& summary, const nlohmann::json& document, const std::string& patch) {
    if (!m_store) return;
    (void)m_store->add_artifact(m_id, "crash.json", "verdict", document.dump(2, ' ', false, util::json_bytes));
    if (!patch.empty()) (void)m_store->add_artifact(m_id, "repair.patch", "patch", patch);
    (void)m_store->end_run(m_id, ok ? store::RunStatus::ok : store::RunStatus::failed, summary);
  }
  std::int64_t id() const { return m_store ? m_id : 0; }

private:
  std::optional<store::RunStore> m_store;
  std::int64_t m_id = 0;
};

/// The report's frames already carry source lines (a decoded report, as syzbot publishes them).
static bool decoded(const crash::CrashReport& r) {
  if (r.rip && !r.rip->file.empty()) return true;
  for (const auto& f : r.trace)
    if (f.reliable && !f.file.empty()) return true;
  return false;
}

int run_crash(const CrashOptions& o) {
  auto text = util::read_file(o.log);
  if (!text) {
    std::fprintf(stderr, "autodriver: error: %s: %s\n", o.log.string().c_str(), text.error().message.c_str());
    return k_exit_error;
  }
  auto reports = crash::parse_reports(*text);
  if (reports.empty()) {
    std::fprintf(stderr,
                 "autodriver: error: %s: no crash report in it (looked for oops, BUG, WARNING, KASAN, UBSAN, lockdep, "
                 "soft lockup, hung task and panic reports)\n",
                 o.log.string().c_str());
    return k_exit_error;
  }
  std::optional<core::Kernel> kernel;
  bool foreign = false; // a decoded report from another kernel than --kernel
  if (!o.kernel.empty()) {
    auto k = kernel::resolve_kernel(o.kernel);
    if (!k) {
      std::fprintf(stderr, "autodriver: error: --kernel %s: %s\n", o.kernel.c_str(), k.error().message.c_str());
      return k_exit_error;
    }
    kernel = *k;
    const auto& rel = reports.front().release;
    if (!rel.empty() && rel != k->release) {
      if (!decoded(reports.front())) {
        std::fprintf(stderr, "autodriver: error: %s is from kernel %s, not %s (--kernel %s): symbols would not match\n",
                     o.log.string().c_str(), rel.c_str(), k->release.c_str(), o.kernel.c_str());
        return k_exit_error;
      }
      // A decoded report (syzbot's) names its source lines: nothing to symbolize; K's source
      // still says how the kernel's drivers use the calls involved.
      std::fprintf(stderr, "autodriver: %s is from kernel %s and its frames name their source lines: not symbolized\n",
                   o.log.string().c_str(), rel.c_str());
      foreign = true;
    }
  }
  std::vector<std::pair<std::string, fs::path>> modules;
  for (const auto& m : o.modules) {
    auto eq = m.find('=');
    fs::path ko = eq == std::string::npos ? fs::path(m) : fs::path(m.substr(eq + 1));
    const std::string name = crash::module_name(eq == std::string::npos ? ko.stem().string() : m.substr(0, eq));
    if (!fs::exists(ko)) {
      std::fprintf(stderr, "autodriver: error: --module %s: no such file\n", ko.string().c_str());
      return k_exit_error;
    }
    modules.emplace_back(name, ko);
  }
  std::optional<util::TempDir> work;
  if (!o.driver.empty() && kernel && modules.empty() && !foreign) {
    auto built = build_modules(o, *kernel, work);
    if (!built) {
      std::fprintf(stderr, "autodriver: error: %s\n", built.error().message.c_str());
      return k_exit_error;
    }
    modules = *built;
  }
  std::set<std::string> driver_modules;
  for (const auto& [n, _] : modules) driver_modules.insert(n);
  int resolved = 0;
  for (auto& r : reports) resolved += crash::symbolize_report(r, modules, o.vmlinux, gate::k_sandbox_tree);
  const auto& primary = reports.front();
  const fs::path kernel_src = kernel ? kernel::cached_source(*kernel) : fs::path();
  auto cands = crash::localize(primary, driver_modules, o.driver, gate::k_sandbox_tree, kernel_src);
  auto hyps =
      crash::hypothesize(primary, cands, o.driver, crash::release_oracle(kernel_src), crash::pair_oracle(kernel_src),
                         crash::undo_oracle(kernel_src), crash::teardown_oracle(kernel_src), crash::value_oracle(kernel_src),
                         crash::managed_oracle(kernel_src), crash::init_oracle(kernel_src), crash::alloc_oracle(kernel_src));
  crash::rank_by_hypotheses(cands, hyps);
  const bool in_driver = !cands.empty();

  CrashRecord record(o);
  {
    nlohmann::json titles = nlohmann::json::array();
    for (const auto& r : reports) titles.push_back(r.title);
    record.step("parse", {{"reports", titles}, {"symbolized_frames", resolved}});
  }
  nlohmann::json j = {{"schema", "autodriver.crash"}, {"schema_version", 1}, {"log", o.log.string()}};
  j["reports"] = nlohmann::json::array();
  for (const auto& r : reports) j["reports"].push_back(crash::to_json(r));
  j["symbolized_frames"] = resolved;
  j["localized"] = nlohmann::json::array();
  for (const auto& c : cands) j["localized"].push_back(crash::to_json(c));
  j["hypotheses"] = nlohmann::json::array();
  for (const auto& h : hyps) j["hypotheses"].push_back(crash::to_json(h));
  j["in_driver"] = in_driver;
  record.step("localize", {{"localized", j["localized"]}, {"in_driver", in_driver}});
  record.step("hypothesize", {{"hypotheses", j["hypotheses"]}});
  j["repair"] = "not attempted (--repair -o OUT tries the repairs and validates them by reproduction)";
  nlohmann::json rep;
  if (o.repair && in_driver) {
    loop::CrashRepairRequest rr;
    rr.driver = o.driver;
    rr.kernel = o.kernel;
    rr.device = o.device;
    rr.repro = o.repro;
    rr.runs = o.runs;
    rr.out = o.out;
    auto r = loop::repair_crash(rr, primary, hyps, [&](const std::string& m) { util::log_info("{}", m); });
    if (!r) {
      std::fprintf(stderr, "autodriver: error: %s\n", r.error().message.c_str());
      return k_exit_error;
    }
    rep = *r;
    j["repair"] = rep;
    nlohmann::json tried = nlohmann::json::array();
    for (const auto& c : rep.value("candidates", nlohmann::json::array()))
      tried.push_back(
          {{"kind", c.value("kind", "")}, {"kept", c.value("kept", false)}, {"clean_runs", c.value("clean_runs", 0)}});
    record.step("repair",
                {{"status", rep.value("status", "")}, {"before", rep.value("before", nlohmann::json())}, {"candidates", tried}});
    std::error_code ec;
    fs::create_directories(o.out, ec);
    (void)util::write_file_atomic(o.out / "repair.json", rep.dump(2, ' ', false, util::json_bytes) + "\n");
  }
  const bool ok = rep.is_null() ? in_driver : rep.value("repaired", false);
  record.end(
      ok,
      {{"outcome", rep.is_null() ? (in_driver ? "localized" : "outside-driver") : rep.value("status", "")},
       {"title", primary.title}},
      j, rep.is_null() ? std::string() : util::json_get(rep.value("repair", nlohmann::json::object()), "patch", std::string()));
  if (record.id()) j["run"] = record.id();
  if (o.json) {
    std::cout << j.dump(2, ' ', false, util::json_bytes) << "\n";
  } else {
    print_human(o, reports, cands, hyps, resolved, driver_modules, rep);
  }
  if (!o.json && record.id()) fmt::print("run: {} (autodriver show {})\n", record.id(), record.id());
  if (!rep.is_null()) return rep.value("repaired", false) ? k_exit_ok : k_exit_failed;
  return in_driver ? k_exit_ok : k_exit_failed;
}

} // namespace

Command crash_command() {
  return {"crash",
          "Read a kernel crash report (oops, KASAN, WARNING, BUG, lockdep, hangs): its kind and normalized title, "
          "frames symbolized from the driver's debug info, the driver lines it points at and what happened there; "
          "with --repair, repairs kept only when QEMU confirms them",
          [](CLI::App& sub) -> std::function<int()> {
            auto o = std::make_shared<CrashOptions>();
            sub.add_option("log", o->log, "Console log or crash report (QEMU serial output, dmesg, a syzbot report)")->required();
            sub.add_option("--driver", o->driver,
                           "Driver source tree (never written): with --kernel it is built in a scratch copy for "
                           "its debug info, and frames without line info are placed at their function's definition")
                ->check(CLI::ExistingDirectory);
            sub.add_option("--kernel,-k", o->kernel,
                           "Kernel the log comes from (6.12, 7.3, a release, host or a build dir); a log of another "
                           "kernel is refused");
            sub.add_option("--module", o->modules,
                           "A built module with debug info, NAME=FILE.ko or FILE.ko (repeatable); "
                           "instead of building --driver");
            sub.add_option("--vmlinux", o->vmlinux, "A vmlinux with debug info, for the kernel's own frames")
                ->check(CLI::ExistingFile);
            sub.add_flag("--json", o->json, "Print the versioned JSON document");
            sub.add_flag("--repair", o->repair,
                         "Try repairs for the hypotheses (use-before-set, use-after-release, double-release, double-acquire, "
                         "missing-unlock, missing-cleanup, missing-teardown, unchecked-result): "
                         "reproduce the crash with the "
                         "unchanged driver, then keep a repair only when --runs boots of it are all clean; needs --driver, "
                         "--kernel and -o");
            sub.add_option("-o,--out", o->out, "With --repair: OUT/tree, OUT/repair.patch, OUT/repair.json");
            sub.add_option("--device", o->device, "With --repair: the QEMU -device the driver probes on (e.g. edu)");
            sub.add_option("--repro", o->repro,
                           "With --repair: what makes the crash happen once the module is loaded (check --boot's --repro: "
                           "a C file, a static executable, a script or a shell command); default: loading and unloading");
            sub.add_option("--runs", o->runs, "With --repair: boots of a candidate that must all be clean")
                ->check(CLI::Range(1, 20))
                ->capture_default_str();
            return [o]() -> int {
              if (o->repair && (o->driver.empty() || o->kernel.empty() || o->out.empty())) {
                std::fprintf(stderr, "autodriver: error: --repair needs --driver DIR, --kernel K and -o OUT\n");
                return k_exit_error;
              }
              // A refused -o writes nothing; OUT is never inside the driver's tree.
              if (o->repair)
                if (auto out = loop::check_output_dir(o->out, loop::trees_read(o->driver, {})); !out) {
                  std::fprintf(stderr, "autodriver: error: %s\n", out.error().message.c_str());
                  return k_exit_error;
                }
              if (!o->repro.empty() && !o->repair) {
                std::fprintf(stderr, "autodriver: error: --repro is for --repair (the log is the crash already)\n");
                return k_exit_error;
              }
              if (auto bad = repro_error(o->repro)) {
                std::fprintf(stderr, "autodriver: error: %s\n", bad->c_str());
                return k_exit_error;
              }
              if (o->json && util::log_level() != util::LogLevel::debug) util::set_log_level(util::LogLevel::quiet);
              return run_crash(*o);
            };
          }};
}

} // namespace autodriver::cli
