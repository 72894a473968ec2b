#include "autodriver/gate/qemu.hpp"

#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace autodriver::gate {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// slub_debug=FZP poisons freed slab objects and checks frees and red zones (+20 % guest time,
// docs/benchmarks.md). A task blocked in D state for 15 s (a mutex never released) is reported by
// the hung-task detector, checked every 5 s, instead of after Debian's 120 s, so the report lands
// inside the boot timeout.
static constexpr const char* k_guest_cmdline =
    "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 slub_debug=FZP sysctl.kernel.hung_task_timeout_secs=15 "
    "sysctl.kernel.hung_task_check_interval_secs=5";

std::vector<std::string> qemu_argv(const BootRequest& r, const std::string& accel) {
  std::vector<std::string> a = {"qemu-system-x86_64",
                                "-nodefaults",
                                "-no-user-config",
                                "-display",
                                "none",
                                "-serial",
                                "stdio",
                                "-no-reboot",
                                "-m",
                                std::to_string(r.memory_mb),
                                "-smp",
                                "1",
                                "-bios",
                                "/usr/share/qemu/qboot.rom",
                                "-kernel",
                                r.vmlinux.string(),
                                "-initrd",
                                r.initrd.string(),
                                "-append",
                                k_guest_cmdline};
  if (accel == "kvm") {
    a.insert(a.end(), {"-accel", "kvm", "-cpu", "host"});
  } else {
    a.insert(a.end(), {"-accel", "tcg", "-cpu", "max"});
  }
  if (r.pvpanic) a.insert(a.end(), {"-device", "pvpanic-pci", "-action", "panic=exit-failure"});
  if (!r.device.empty()) a.insert(a.end(), {"-device", r.device});
  return a;
}

static util::Expected<util::RunResult> run_qemu(const BootRequest& r, const std::string& accel, std::chrono::seconds timeout) {
  util::RunRequest req;
  req.argv = qemu_argv(r, accel);
  req.timeout = timeout;
  req.stderr_mode = util::Stderr::merge;
  req.output_cap = 4 * 1024 * 1024;
  util::log_debug("qemu: {}", util::render_argv(req.argv));
  return util::run(req);
}

static std::string boot_id() {
  auto id = util::read_file("/proc/sys/kernel/random/boot_id");
  return id ? std::string(util::trim(*id)) : "unknown";
}

std::string choose_accel(const BootRequest& r) {
  if (const char* env = std::getenv("AUTODRIVER_ACCEL"); env && (std::string(env) == "kvm" || std::string(env) == "tcg"))
    return env;
  int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (fd < 0) return "tcg";
  close(fd);
  // /dev/kvm can exist and still hang a guest: boot this very guest once with a short timeout.
  fs::path cache = kernel::cache_root() / "kvm-probe.json";
  std::string id = boot_id();
  auto lock = util::FileLock::acquire(kernel::cache_root() / "locks" / "kvm-probe.lock", 120s);
  if (auto text = util::read_file(cache); text) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_discarded() && j.value("boot_id", "") == id) return j.value("accel", "tcg");
  }
  BootRequest probe = r;
  probe.device.clear();
  auto res = run_qemu(probe, "kvm", 8s);
  bool works = res && !res->timed_out && res->out.find("@@AD init") != std::string::npos;
  std::string accel = works ? "kvm" : "tcg";
  nlohmann::json j = {{"schema_version", 1}, {"boot_id", id}, {"accel", accel}, {"probe_ms", res ? res->elapsed.count() : -1}};
  (void)util::write_file_atomic(cache, j.dump(2, ' ', false, util::json_bytes) + "\n");
  util::log_debug("KVM probe: {}", accel);
  return accel;
}

util::Expected<BootResult> boot_qemu(const BootRequest& r) {
  if (util::find_program("qemu-system-x86_64").empty())
    return util::unexpected(util::ErrorKind::not_found, "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)");
  if (!fs::exists("/usr/share/qemu/qboot.rom"))
    return util::unexpected(util::ErrorKind::not_found,
                            "/usr/share/qemu/qboot.rom is missing (apt-get install qemu-system-data)");
  BootResult out;
  out.accel = choose_accel(r);
  auto res = run_qemu(r, out.accel, r.timeout);
  if (!res) return util::unexpected(res.error());
  out.run = std::move(*res);
  if (!out.run.timed_out && out.run.exit_code != 0 && out.run.out.find("@@AD init") == std::string::npos &&
      out.run.out.find("Linux version") == std::string::npos && out.run.out.find("qemu-system") != std::string::npos)
    return util::unexpected(util::ErrorKind::spawn,
                            "qemu failed to start: " + std::string(util::trim(util::tail_capped(out.run.out, 400))));
  out.console = out.run.out;
  out.panic_exit = r.pvpanic && !out.run.timed_out && out.run.exit_code == 1;
  return out;
}

} // namespace autodriver::gate
