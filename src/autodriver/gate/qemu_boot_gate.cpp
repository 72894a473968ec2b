// Gate "boot": boot the target kernel in QEMU (PVH + qboot), load the driver's dependencies and
// the driver, optionally on an emulated PCI device, and classify what the kernel said.

#include "autodriver/gate/console_parser.hpp"
#include "autodriver/gate/gate.hpp"
#include "autodriver/gate/initramfs.hpp"
#include "autodriver/gate/qemu.hpp"
#include "autodriver/gate/repro.hpp"
#include "autodriver/kernel/modules_dep.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace autodriver::gate {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

/// `modinfo -F depends` of a built module: the modules it needs (names, normalized).
std::vector<std::string> module_depends(const fs::path& ko) {
  util::RunRequest req;
  req.argv = {"modinfo", "-F", "depends", ko.string()};
  req.timeout = 20s;
  auto r = util::run(req);
  std::vector<std::string> out;
  if (!r || !r->ok()) {
    // modinfo may live in /sbin only.
    req.argv[0] = "/sbin/modinfo";
    r = util::run(req);
    if (!r || !r->ok()) return out;
  }
  std::string s(util::trim(r->out));
  std::size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    auto comma = s.find(',', pos);
    std::string name = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!name.empty()) out.push_back(kernel::normalize_module_name(name));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

class QemuBootGate final : public Gate {
public:
  std::string_view id() const override { return "boot"; }

  core::GateResult run(const GateInput& in) override {
    core::GateResult g;
    g.gate = "boot";
    g.kernel = in.kernel.release;
    auto start = std::chrono::steady_clock::now();
    auto finish = [&](core::GateResult& r) -> core::GateResult {
      r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      return r;
    };
    const core::GateResult* build = find_result(in.earlier, "build");
    if (!build || !build->ok) {
      g.skipped = true;
      g.summary = "skipped: the build failed";
      return finish(g);
    }
    if (!in.kernel.has_image()) {
      g.infra_error = fmt::format("the {} kernel image is not in the cache: run `autodriver kernel fetch {}`", in.kernel.release,
                                  in.kernel.name);
      g.summary = g.infra_error.value();
      return finish(g);
    }
    auto busybox = find_static_busybox();
    if (!busybox) {
      g.infra_error = busybox.error().message;
      g.summary = g.infra_error.value();
      return finish(g);
    }
    auto deps = kernel::ModulesDep::load(in.kernel.modules_dir);
    if (!deps) {
      g.infra_error = "cannot read the image's modules.dep: " + deps.error().message;
      g.summary = g.infra_error.value();
      return finish(g);
    }

    // The driver's own modules, ordered so that a module follows the ones of ours it needs.
    std::map<std::string, fs::path> ours;
    std::map<std::string, std::vector<std::string>> needs;
    for (const auto& rel : build->details.value("modules", std::vector<std::string>{})) {
      fs::path ko = in.work_tree / rel;
      std::string name = kernel::module_name_from_path(ko.string());
      ours[name] = ko;
      needs[name] = module_depends(ko);
    }
    std::vector<std::string> own_order;
    std::set<std::string> placed;
    std::function<void(const std::string&)> place = [&](const std::string& n) {
      if (!ours.count(n) || !placed.insert(n).second) return;
      for (const auto& d : needs[n]) place(d);
      own_order.push_back(n);
    };
    for (const auto& [n, _] : ours) place(n);
    std::vector<std::string> external;
    for (const auto& n : own_order)
      for (const auto& d : needs[n])
        if (!ours.count(d)) external.push_back(d);

    InitramfsSpec spec;
    std::vector<std::string> missing;
    // pvpanic first, so that a panic ends QEMU with a distinct exit status.
    std::vector<std::string> helpers;
    bool pvpanic = deps->contains("pvpanic_pci");
    if (pvpanic) helpers.push_back("pvpanic_pci");
    for (const auto& n : deps->load_order(helpers, missing))
      spec.preload.push_back({n, in.kernel.modules_dir / deps->path_of(n)});
    std::vector<std::string> ext_missing;
    std::set<std::string> preloaded;
    for (const auto& p : spec.preload) preloaded.insert(p.name);
    for (const auto& n : deps->load_order(external, ext_missing))
      if (!preloaded.count(n)) spec.preload.push_back({n, in.kernel.modules_dir / deps->path_of(n)});
    for (const auto& n : own_order) spec.modules.push_back({n, ours[n]});
    std::string repro_kind;
    if (!in.request.repro.empty()) {
      auto prog = prepare_repro(in.request.repro, in.scratch / "repro");
      if (!prog) {
        g.infra_error = prog.error().message;
        g.summary = g.infra_error.value();
        return finish(g);
      }
      spec.repro = std::move(prog->bytes);
      spec.repro_executable = prog->executable;
      repro_kind = prog->kind;
    }

    auto cpio = build_initramfs(spec, *busybox);
    if (!cpio) {
      g.infra_error = "cannot build the initramfs: " + cpio.error().message;
      g.summary = g.infra_error.value();
      return finish(g);
    }
    fs::path initrd = in.scratch / "initramfs.cpio";
    if (auto w = util::write_file(initrd, *cpio); !w) {
      g.infra_error = w.error().describe();
      g.summary = g.infra_error.value();
      return finish(g);
    }

    BootRequest boot;
    boot.vmlinux = in.kernel.vmlinux;
    boot.initrd = initrd;
    boot.device = in.request.device;
    boot.pvpanic = pvpanic;
    boot.timeout = in.request.boot_timeout;
    // A unix socket's path has at most 107 bytes; a deeper scratch folder boots without the NMI.
    if (fs::path qmp = in.scratch / "qmp.sock"; qmp.string().size() < 100) boot.qmp_socket = qmp;
    auto booted = boot_qemu(boot);
    if (!booted) {
      g.infra_error = booted.error().describe();
      g.summary = "QEMU could not run: " + booted.error().message;
      return finish(g);
    }
    ConsoleReport rep = parse_console(booted->console);
    fill_verdict(g, in, spec, rep, *booted, ext_missing);
    if (!repro_kind.empty())
      g.details["repro"] = {{"kind", repro_kind},
                            {"ran", rep.repro_rc.has_value()},
                            {"rc", rep.repro_rc ? nlohmann::json(*rep.repro_rc) : nlohmann::json(nullptr)}};
    return finish(g);
  }

private:
  static void fill_verdict(core::GateResult& g, const GateInput& in, const InitramfsSpec& spec, const ConsoleReport& rep,
                           const BootResult& booted, const std::vector<std::string>& missing_deps) {
    std::set<std::string> own;
    for (const auto& m : spec.modules) own.insert(m.name);

    nlohmann::json insmod = nlohmann::json::object();
    bool all_loaded = !rep.insmods.empty();
    for (const auto& [name, rc] : rep.insmods) {
      auto out_it = rep.insmod_output.find(name);
      insmod[name] = {{"rc", rc}, {"output", out_it == rep.insmod_output.end() ? "" : out_it->second}};
      if (rc != 0) all_loaded = false;
    }
    if (rep.insmods.size() != spec.modules.size()) all_loaded = false;
    nlohmann::json rmmod = nlohmann::json::object();
    for (const auto& [name, rc] : rep.rmmods) rmmod[name] = rc;
    nlohmann::json preload = nlohmann::json::object();
    for (const auto& [name, rc] : rep.preloads) preload[name] = rc;

    nlohmann::json pci = nlohmann::json::array();
    bool bound = false;
    for (const auto& b : rep.pci_after) {
      pci.push_back(to_json(b));
      if (own.count(kernel::normalize_module_name(b.module))) bound = true;
    }
    nlohmann::json other_buses = nlohmann::json::array();
    for (const auto& b : rep.bound_after) {
      other_buses.push_back(to_json(b));
      if (own.count(kernel::normalize_module_name(b.module))) bound = true;
    }
    nlohmann::json findings = nlohmann::json::array();
    std::map<std::string, int> counts;
    bool fatal_finding = false;
    for (const auto& f : rep.findings) {
      findings.push_back(to_json(f));
      ++counts[std::string(to_string(f.kind))];
      // A report from before the driver's modules began loading (an RCU stall of a starved
      // emulated CPU during boot) is the machine's, not the driver's; panics still end the boot.
      bool machine = f.before_driver && !own.count(kernel::normalize_module_name(f.module));
      if (f.kind != FindingKind::unknown_symbol && f.kind != FindingKind::invalid_module_format && !machine) fatal_finding = true;
    }
    bool panicked = booted.panic_exit || counts.count("panic");

    std::string outcome;
    if (booted.run.timed_out || booted.nmi_injected) outcome = rep.reached_init ? "hung" : "boot-hung";
    else if (panicked) outcome = "panic";
    else if (!rep.reached_init) outcome = "boot-failed";
    else if (counts.count("oops") || counts.count("bug") || counts.count("kasan")) outcome = "oops";
    else if (!all_loaded) outcome = "insmod-failed";
    else if (fatal_finding) outcome = "kernel-warning";
    else if (!in.request.device.empty() && !bound) outcome = "not-bound";
    else if (!rep.finished) outcome = "incomplete";
    else outcome = "ok";

    g.ok = outcome == "ok";
    nlohmann::json taint = nullptr;
    if (rep.tainted) taint = {{"value", *rep.tainted}, {"flags", decode_taint(*rep.tainted)}};
    g.details = {{"outcome", outcome},
                 {"accel", booted.accel},
                 {"qemu",
                  {{"command", util::render_argv(booted.run.argv)},
                   {"exit_code", booted.run.exit_code},
                   {"timed_out", booted.run.timed_out},
                   {"nmi_injected", booted.nmi_injected},
                   {"elapsed_ms", booted.run.elapsed.count()}}},
                 {"device", in.request.device},
                 {"preload", preload},
                 {"missing_dependencies", missing_deps},
                 {"insmod", insmod},
                 {"bound", in.request.device.empty() ? nlohmann::json(nullptr) : nlohmann::json(bound)},
                 {"pci", pci},
                 {"other_buses", other_buses},
                 {"rmmod", rmmod},
                 {"tainted", taint},
                 {"findings", findings},
                 {"finding_counts", counts},
                 {"reached_init", rep.reached_init},
                 {"finished", rep.finished},
                 {"console", util::tail_capped(booted.run.out, 64 * 1024)}};
    if (outcome == "ok")
      g.summary =
          fmt::format("loaded {}{} and unloaded cleanly in {:.1f} s", fmt::join(own, ", "),
                      in.request.device.empty() ? "" : ", bound to " + in.request.device, booted.run.elapsed.count() / 1000.0);
    else if ((outcome == "hung" || outcome == "boot-hung") && booted.nmi_injected && !rep.findings.empty())
      g.summary = fmt::format("the guest hung; an NMI {} s before the timeout showed where: {}", BootRequest{}.nmi_before.count(),
                              rep.findings.back().line);
    else if (outcome == "hung")
      g.summary = fmt::format("the guest hung and was killed {} s after its init started", in.request.boot_timeout.count());
    else if (outcome == "boot-hung")
      g.summary = fmt::format("the kernel did not reach the guest's init within {} s",
                              (BootRequest{}.boot_allowance + in.request.boot_timeout).count());
    else if (!rep.findings.empty()) g.summary = fmt::format("{}: {}", outcome, rep.findings.front().line);
    else if (outcome == "insmod-failed") {
      std::string why;
      for (const auto& [n, rc] : rep.insmods)
        if (rc != 0) why = std::string(util::trim(rep.insmod_output.count(n) ? rep.insmod_output.at(n) : ""));
      g.summary = "insmod failed: " + why;
    } else if (outcome == "not-bound")
      g.summary = fmt::format("loaded, but the driver did not bind to the {} device", in.request.device);
    else g.summary = outcome;
  }
};

} // namespace

std::unique_ptr<Gate> make_qemu_boot_gate() { return std::make_unique<QemuBootGate>(); }

} // namespace autodriver::gate
