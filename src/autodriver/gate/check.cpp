#include "autodriver/gate/check.hpp"

#include "autodriver/gate/build_root.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace autodriver::gate {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

const std::vector<GateEntry>& gate_table() {
  static const std::vector<GateEntry> k_table = {
      {"build", "compile against the target kernel (kbuild M= or --build-cmd)", &make_kbuild_gate},
      {"sparse", "sparse via C=2 CHECK=sparse; with --baseline only new findings count", &make_sparse_gate},
      {"boot", "boot the target kernel in QEMU, load the module (and probe a device)", &make_qemu_boot_gate},
      {"integrity",
       "with --baseline ORIGINAL: reject deleted/stubbed/disabled code, dropped objects, suppressed "
       "warnings, silencing casts, removed ops and edits no diagnostic points at",
       &make_integrity_gate},
  };
  return k_table;
}

const core::GateResult* find_result(const std::vector<core::GateResult>& results, std::string_view id) {
  for (const auto& r : results)
    if (r.gate == id) return &r;
  return nullptr;
}

static util::Expected<void> validate(const CheckRequest& req, std::vector<core::Kernel>& kernels) {
  std::error_code ec;
  if (!fs::exists(req.tree, ec)) return unexpected(ErrorKind::not_found, fmt::format("{}: no such directory", req.tree.string()));
  if (!fs::is_directory(req.tree, ec))
    return unexpected(ErrorKind::config, fmt::format("{}: not a directory", req.tree.string()));
  if (auto loop = util::refuse_symlink_loop(req.tree); !loop) return unexpected(loop.error());
  if (req.build_cmd.empty() && !has_kbuild_makefile(req.tree / req.subdir))
    return unexpected(ErrorKind::config, fmt::format("{}: no Makefile or Kbuild: not a kernel module tree "
                                                     "(give --build-cmd if it builds another way)",
                                                     (req.tree / req.subdir).string()));
  if (!req.baseline.empty() && !fs::is_directory(req.baseline, ec))
    return unexpected(ErrorKind::not_found, fmt::format("--baseline {}: no such directory", req.baseline.string()));
  if (req.kernels.empty()) return unexpected(ErrorKind::config, "no kernel given: use --kernel 6.1, --kernel 6.12 or a path");
  for (const auto& name : req.kernels) {
    auto k = kernel::resolve_kernel(name);
    if (!k) return unexpected(k.error());
    if (k->has_headers())
      k = kernel::with_build_deps(std::move(*k), req.build_deps, [](const std::string& m) { util::log_info("{}", m); });
    if (!k) return unexpected(k.error());
    if (!k->has_headers())
      return unexpected(ErrorKind::not_found, fmt::format("kernel {}: no build directory at {}: run `autodriver kernel fetch {}`",
                                                          name, k->build_dir.string(), name));
    if (req.boot && !k->has_image())
      return unexpected(ErrorKind::not_found, fmt::format("kernel {}: the image is not in the cache ({}): run "
                                                          "`autodriver kernel fetch {}`",
                                                          name, kernel::kernel_cache_dir(k->release).string(), name));
    kernels.push_back(*k);
  }
  return {};
}

util::Expected<CheckReport> run_check(const CheckRequest& given, const GateProgressFn& progress) {
  CheckRequest request = given;
  if (request.subdir.empty()) {
    std::error_code ec;
    if (!fs::exists(given.tree, ec))
      return unexpected(ErrorKind::not_found, fmt::format("{}: no such directory", given.tree.string()));
    if (!fs::is_directory(given.tree, ec))
      return unexpected(ErrorKind::config, fmt::format("{}: not a directory", given.tree.string()));
    auto located = find_build_root(given.tree, given.root);
    if (!located) return unexpected(located.error());
    for (const auto& line : describe(*located, given.tree)) util::log_info("{}", line);
    request.tree = located->root;
    request.subdir = located->subdir;
    if (!request.subdir.empty() && !request.baseline.empty() && !fs::is_directory(request.baseline / request.subdir, ec)) {
      // The original laid out like the driver: the same root around it.
      auto base = find_build_root(request.baseline, {});
      if (!base || base->subdir != request.subdir)
        return unexpected(ErrorKind::config,
                          fmt::format("--baseline {}: with the root {}, give the original root (holding {})",
                                      request.baseline.string(), request.tree.string(), request.subdir.string()));
      request.baseline = base->root;
    }
  }
  std::vector<core::Kernel> kernels;
  if (auto v = validate(request, kernels); !v) return unexpected(v.error());
  auto start = std::chrono::steady_clock::now();
  auto scratch = make_scratch("check-");
  if (!scratch) return unexpected(scratch.error());
  if (const char* keep = std::getenv("AUTODRIVER_KEEP_SCRATCH"); keep && std::string(keep) == "1") {
    scratch->keep();
    util::log_info("keeping scratch dir {}", scratch->path().string());
  }
  CheckReport report;
  report.ok = true;
  report.tree = fs::absolute(request.subdir.empty() ? request.tree : request.tree / request.subdir).lexically_normal();
  if (!request.subdir.empty()) report.root = fs::absolute(request.tree).lexically_normal();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const core::Kernel& k = kernels[i];
    KernelCheck kc;
    kc.kernel = request.kernels[i];
    kc.release = k.release;
    fs::path kdir = scratch->path() / fmt::format("{}-{}", i, k.release);
    fs::path work = kdir / "tree";
    if (auto c = util::copy_tree(request.tree, work, util::SkipBuildProducts::yes); !c) return unexpected(c.error());
    for (const auto& entry : gate_table()) {
      if (entry.id == "sparse" && !request.sparse) continue;
      if (entry.id == "boot" && !request.boot) continue;
      if (entry.id == "integrity" && request.baseline.empty()) continue;
      if (util::interrupted()) return unexpected(ErrorKind::interrupted, "interrupted");
      auto gate = entry.make();
      GateInput in{k, request, work, kdir, kc.gates};
      core::GateResult r = gate->run(in);
      if (progress) progress(kc.kernel, r);
      kc.gates.push_back(std::move(r));
    }
    kc.ok = true;
    for (const auto& g : kc.gates)
      if (!g.ok) kc.ok = false;
    report.ok = report.ok && kc.ok;
    report.kernels.push_back(std::move(kc));
  }
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  return report;
}

nlohmann::json to_json(const CheckReport& report, const CheckRequest& request) {
  nlohmann::json gates = nlohmann::json::object();
  for (const auto& entry : gate_table()) {
    bool requested = entry.id == "build" || (entry.id == "sparse" && request.sparse) || (entry.id == "boot" && request.boot) ||
                     (entry.id == "integrity" && !request.baseline.empty());
    nlohmann::json by_kernel = nlohmann::json::object();
    bool ok = requested;
    for (const auto& kc : report.kernels) {
      const core::GateResult* g = find_result(kc.gates, entry.id);
      if (!g) continue;
      by_kernel[kc.release] = core::to_json(*g);
      if (!g->ok) ok = false;
    }
    gates[std::string(entry.id)] = {
        {"requested", requested}, {"ok", requested ? nlohmann::json(ok) : nlohmann::json(nullptr)}, {"by_kernel", by_kernel}};
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& kc : report.kernels) {
    nlohmann::json summary = nlohmann::json::object();
    for (const auto& g : kc.gates) summary[g.gate] = {{"ok", g.ok}, {"skipped", g.skipped}, {"summary", g.summary}};
    kernels.push_back({{"kernel", kc.kernel}, {"release", kc.release}, {"ok", kc.ok}, {"gates", summary}});
  }
  nlohmann::json out = {{"schema", "autodriver.check"},
                        {"schema_version", k_check_schema_version},
                        {"ok", report.ok},
                        {"tree", report.tree.empty() ? fs::absolute(request.tree).string() : report.tree.string()},
                        {"elapsed_ms", report.elapsed.count()},
                        {"kernels", kernels},
                        {"gates", gates}};
  if (!report.root.empty()) out["root"] = report.root.string();
  return out;
}

} // namespace autodriver::gate
