// `autodriver check DIR --kernel K [...]`: the validation gates on one driver tree.

#include "autodriver/cli/commands.hpp"
#include "autodriver/gate/check.hpp"
#include "autodriver/gate/repro.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <iostream>

namespace autodriver::cli {

std::optional<std::string> repro_error(const std::string& repro) {
  if (repro.empty()) return std::nullopt;
  auto dir = gate::make_scratch("repro");
  if (!dir) return dir.error().message;
  auto p = gate::prepare_repro(repro, dir->path());
  if (!p) return p.error().message;
  return std::nullopt;
}

static void print_human(const gate::CheckReport& report) {
  for (const auto& kc : report.kernels) {
    fmt::print("{} ({}): {}\n", kc.kernel, kc.release, kc.ok ? "OK" : "FAILED");
    for (const auto& g : kc.gates) {
      const char* mark = g.skipped ? "skip" : g.ok ? "ok" : "FAIL";
      fmt::print("  {:<7}{:<5} {} ({:.1f} s)\n", g.gate, mark, g.summary, g.elapsed.count() / 1000.0);
      if (!g.ok && !g.skipped) {
        int shown = 0;
        for (const auto& d : g.diagnostics) {
          if (d.severity == core::Severity::warning && g.gate == "build") continue;
          if (++shown > 10) {
            fmt::print("         ... {} more (use --json for all)\n", g.diagnostics.size() - 10);
            break;
          }
          fmt::print("         {}:{}:{}: [{}] {}\n", d.file, d.line, d.column, core::to_string(d.kind), d.message);
        }
      }
    }
  }
  fmt::print("{} in {:.1f} s\n", report.ok ? "ok" : "not ok", report.elapsed.count() / 1000.0);
}

Command check_command() {
  return {
      "check", "Run the validation gates on a driver tree: build, sparse, and (--boot) a QEMU load test",
      [](CLI::App& sub) -> std::function<int()> {
        auto req = std::make_shared<gate::CheckRequest>();
        auto json = std::make_shared<bool>(false);
        auto no_sparse = std::make_shared<bool>(false);
        auto build_timeout = std::make_shared<int>(600);
        auto boot_timeout = std::make_shared<int>(60);
        sub.add_option("dir", req->tree, "Driver source tree (never written: gates run in a scratch copy)")->required();
        sub.add_option("--root", req->root,
                       "Folder holding DIR that is copied with it, for a driver whose Makefile builds files of a sibling "
                       "folder (../common/...); default: found from DIR's Makefiles, at most 3 folders up. Never written");
        sub.add_option("-k,--kernel", req->kernels, "Target kernel: 6.1, 6.12 or a kernel build dir (repeatable)")->required();
        sub.add_flag("--boot", req->boot, "Boot the kernel in QEMU and load the module");
        sub.add_option("--device", req->device, "QEMU -device to probe the driver on (e.g. rtl8139, e1000)");
        sub.add_option("--repro", req->repro,
                       "With --boot: run this in the guest once the module is loaded, before it is unloaded: a C file "
                       "(compiled statically with gcc in the sandbox), a static executable, a script for busybox sh, or "
                       "a shell command ('ip link set eth0 up')");
        sub.add_option("--build-cmd", req->build_cmd,
                       "Build command run in the tree copy instead of kbuild M=; {kdir} is the kernel build "
                       "dir and {kver} its release, e.g. 'make KERNELDIR={kdir}'; DKMS's $kernelver, "
                       "$kernel_source_dir and $arch work too, so a dkms.conf MAKE line runs as written");
        add_build_deps_option(sub, req->build_deps);
        sub.add_option("--baseline", req->baseline,
                       "Tree whose sparse findings do not count; also the original that "
                       "the integrity gate compares DIR (the port) with");
        sub.add_flag("--no-sparse", *no_sparse, "Skip the sparse gate");
        sub.add_option("--build-timeout", *build_timeout, "Seconds before a build is killed")
            ->capture_default_str()
            ->check(positive());
        sub.add_option("--boot-timeout", *boot_timeout,
                       "Seconds the guest has from its init on before it is killed as hung (the kernel's own boot before init "
                       "may take 120 s more)")
            ->capture_default_str()
            ->check(positive());
        sub.add_option("-j,--jobs", req->jobs, "make -j (default: the CPUs this process may use)")->transform(jobs_cap());
        sub.add_flag("--json", *json, "Print the versioned JSON verdict (docs/check-json.md)");
        return [=]() -> int {
          req->sparse = !*no_sparse;
          if (auto bad = repro_error(req->repro)) {
            std::fprintf(stderr, "autodriver: error: %s\n", bad->c_str());
            return k_exit_error;
          }
          req->build_timeout = std::chrono::seconds(*build_timeout);
          req->boot_timeout = std::chrono::seconds(*boot_timeout);
          if (*json)
            util::set_log_level(std::max(util::log_level(), util::LogLevel::quiet) == util::LogLevel::debug
                                    ? util::LogLevel::debug
                                    : util::LogLevel::quiet);
          auto report = gate::run_check(*req, [&](const std::string& kernel, const core::GateResult& g) {
            util::log_info("{}: {} {}: {}", kernel, g.gate, g.skipped ? "skipped" : g.ok ? "ok" : "FAILED", g.summary);
          });
          // A gate killed by Ctrl-C or SIGTERM says nothing about the driver: no verdict.
          if (util::interrupted() || (!report && report.error().kind == util::ErrorKind::interrupted)) {
            std::fprintf(stderr, "autodriver: interrupted\n");
            return k_exit_interrupted;
          }
          if (!report) {
            std::fprintf(stderr, "autodriver: error: %s\n", report.error().message.c_str());
            return k_exit_error;
          }
          if (*json) std::cout << gate::to_json(*report, *req).dump(2, ' ', false, util::json_bytes) << "\n";
          else print_human(*report);
          return report->ok ? k_exit_ok : k_exit_failed;
        };
      }};
}

} // namespace autodriver::cli
