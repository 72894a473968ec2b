#include "autodriver/gate/qemu.hpp"

#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/sandbox.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <mutex>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace autodriver::gate {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// slub_debug=FZP poisons freed slab objects and checks frees and red zones (+20 % guest time,
// docs/benchmarks.md; init_on_free=1, which would clear freed pages too, cost 14 % more boot time
// for memory slub_debug mostly poisons already, and is left out). KFENCE (built into Debian's
// 6.12+ images, off until given an interval) guards one allocation per millisecond with its own
// pages: a read of such an object after its free faults with a report naming the free, where
// poisoned slab memory is only data (+2.5 % boot time). A task blocked in D
// state for 15 s (a mutex never released) is reported by the hung-task detector, checked every 5 s,
// instead of after Debian's 120 s, so the report lands inside the boot timeout, with every CPU's
// backtrace. An NMI from the host (a guest still running near the timeout) panics with a trace of
// where the CPU was. Kernels without one of these ignore it.
/// What the initramfs's /init prints first (gate/initramfs.cpp): the kernel's own boot is over.
static constexpr const char* k_init_marker = "@@AD init";

static constexpr const char* k_guest_cmdline =
    "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 slub_debug=FZP kfence.sample_interval=1 "
    "sysctl.kernel.hung_task_timeout_secs=15 sysctl.kernel.hung_task_check_interval_secs=5 "
    "sysctl.kernel.hung_task_all_cpu_backtrace=1 unknown_nmi_panic=1";

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
  if (!r.qmp_socket.empty()) a.insert(a.end(), {"-qmp", "unix:" + r.qmp_socket.string() + ",server=on,wait=off"});
  if (!r.device.empty()) {
    // A sound card (AC97, ES1370, intel-hda) opens the host's audio backend by default and the
    // guest never starts without one (sandboxed, headless): a null backend, which QEMU takes for
    // every device that names none.
    a.insert(a.end(), {"-audiodev", "none,id=ad-none", "-device", r.device});
  }
  return a;
}

namespace {

/// Sends QMP's handshake and then `commands` (one JSON object per line) to the socket; true when
/// QEMU answered each without error.
bool qmp_send(const fs::path& socket_path, const std::string& commands) {
  sockaddr_un addr{};
  if (socket_path.string().size() >= sizeof(addr.sun_path)) return false;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  const std::string cmds = "{\"execute\":\"qmp_capabilities\"}\n" + commands;
  const auto answers = std::count(cmds.begin(), cmds.end(), '\n') + 1; // the greeting too
  std::string got;
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ok = ok && write(fd, cmds.data(), cmds.size()) == static_cast<ssize_t>(cmds.size());
  for (auto until = std::chrono::steady_clock::now() + 3s; ok && std::chrono::steady_clock::now() < until;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
    if (std::count(got.begin(), got.end(), '\n') >= answers) break;
  }
  close(fd);
  return ok && got.find("\"error\"") == std::string::npos && std::count(got.begin(), got.end(), '\n') >= answers;
}

/// The guest's deadline: `boot_allowance + timeout` from the start until the console shows its
/// /init, then `timeout` from that moment. `nmi_before` the deadline the guest gets an NMI, at the
/// deadline QEMU is told to quit (both through QMP; without a socket the run's own timeout, the
/// longest deadline, is all there is).
class Watchdog {
public:
  explicit Watchdog(const BootRequest& r) : m_start(std::chrono::steady_clock::now()) {
    if (r.qmp_socket.empty()) return;
    m_thread = std::thread([this, r] { watch(r); });
  }
  ~Watchdog() { stop(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// The console showed the guest's /init (called from the output reader).
  void saw_init() {
    std::lock_guard lock(m_mutex);
    if (!m_init) m_init = std::chrono::steady_clock::now();
  }
  struct Outcome {
    bool nmi = false;  ///< the NMI went in
    bool quit = false; ///< QEMU was told to quit at the deadline
  };
  Outcome stop() {
    {
      std::lock_guard lock(m_mutex);
      m_stopped = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
    std::lock_guard lock(m_mutex);
    return {m_nmi, m_quit};
  }

private:
  void watch(const BootRequest& r) {
    bool nmi_tried = r.timeout <= 2 * r.nmi_before; // too short a run for an NMI to help
    std::unique_lock lock(m_mutex);
    while (!m_stopped) {
      auto deadline = m_init ? *m_init + r.timeout : m_start + r.boot_allowance + r.timeout;
      auto now = std::chrono::steady_clock::now();
      if (!nmi_tried && now >= deadline - r.nmi_before) {
        nmi_tried = true;
        lock.unlock();
        // pvpanic's notifier runs before a panic in NMI context has flushed its console output:
        // QEMU must not exit on it, the guest's own reboot (panic=-1, -no-reboot) ends the run.
        bool sent = qmp_send(r.qmp_socket, "{\"execute\":\"set-action\",\"arguments\":{\"panic\":\"none\"}}\n"
                                           "{\"execute\":\"inject-nmi\"}\n");
        util::log_debug("qemu: NMI injected: {}", sent);
        lock.lock();
        m_nmi = sent;
        continue;
      }
      if (now >= deadline) {
        lock.unlock();
        bool sent = qmp_send(r.qmp_socket, "{\"execute\":\"quit\"}\n");
        util::log_debug("qemu: told to quit at the deadline: {}", sent);
        lock.lock();
        m_quit = true;
        return;
      }
      m_cv.wait_for(lock, 200ms);
    }
  }

  std::chrono::steady_clock::time_point m_start;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stopped = false;
  bool m_nmi = false;
  bool m_quit = false;
  std::optional<std::chrono::steady_clock::time_point> m_init;
  std::thread m_thread;
};

} // namespace

static util::Expected<util::RunResult> run_qemu(const BootRequest& r, const std::string& accel, std::chrono::seconds timeout,
                                                std::function<void(std::string_view)> on_output = {}) {
  util::RunRequest req;
  req.on_output = std::move(on_output);
  req.argv = qemu_argv(r, accel);
  req.timeout = timeout;
  req.stderr_mode = util::Stderr::merge;
  req.output_cap = 4 * 1024 * 1024;
  util::log_debug("qemu: {}", util::render_argv(req.argv));
  // QEMU runs the driver's module (in its guest) and reads the guest's devices: sandboxed too,
  // the host read-only but the folder of its QMP socket, no network, no capability (as root it
  // keeps uid 0 for /dev/kvm).
  util::SandboxSpec sandbox;
  sandbox.read_only = {r.vmlinux, r.initrd};
  if (!r.qmp_socket.empty()) sandbox.writable = {r.qmp_socket.parent_path()};
  if (accel == "kvm") sandbox.devices = {"/dev/kvm"};
  sandbox.root_runs = util::SandboxSpec::RootRuns::root_without_caps;
  if (auto s = util::sandbox_request(req, sandbox); !s) return util::unexpected(s.error());
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
  bool works = res && !res->timed_out && res->out.find(k_init_marker) != std::string::npos;
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
  Watchdog dog(r);
  const std::string marker = k_init_marker;
  auto res =
      run_qemu(r, out.accel, r.boot_allowance + r.timeout, [&dog, &marker, tail = std::string()](std::string_view chunk) mutable {
        tail.append(chunk);
        if (tail.find(marker) != std::string::npos) dog.saw_init();
        if (tail.size() > marker.size()) tail.erase(0, tail.size() - marker.size());
      });
  auto watched = dog.stop();
  out.nmi_injected = watched.nmi;
  if (!r.qmp_socket.empty()) {
    std::error_code ec;
    fs::remove(r.qmp_socket, ec);
  }
  if (!res) return util::unexpected(res.error());
  out.run = std::move(*res);
  if (watched.quit) out.run.timed_out = true; // told to quit at the deadline: a timeout like the run's own
  if (!out.run.timed_out && out.run.exit_code != 0 && out.run.out.find(k_init_marker) == std::string::npos &&
      out.run.out.find("Linux version") == std::string::npos && out.run.out.find("qemu-system") != std::string::npos)
    return util::unexpected(util::ErrorKind::spawn,
                            "qemu failed to start: " + std::string(util::trim(util::tail_capped(out.run.out, 400))));
  out.console = out.run.out;
  out.panic_exit = r.pvpanic && !out.run.timed_out && out.run.exit_code == 1;
  return out;
}

} // namespace autodriver::gate
