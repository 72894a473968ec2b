#include "autodriver/gate/initramfs.hpp"

#include "autodriver/util/cpio.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

namespace autodriver::gate {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string init_script(const InitramfsSpec& spec) {
  std::string s = R"SH(#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo "@@AD init"
# The kernel booted quietly (loglevel=4); from here on every message reaches the console: the
# hung-task detector prints a blocked task's stack at KERN_INFO, and without it a mutex left held
# in probe names no function.
echo 7 > /proc/sys/kernel/printk
pci() {
  for d in /sys/bus/pci/devices/*; do
    [ -e "$d/driver" ] || continue
    drv=$(basename "$(readlink "$d/driver")")
    mod=""
    [ -e "/sys/bus/pci/drivers/$drv/module" ] && mod=$(basename "$(readlink "/sys/bus/pci/drivers/$drv/module")")
    echo "@@AD pci $(basename "$d") vendor=$(cat "$d/vendor") device=$(cat "$d/device") driver=$drv module=$mod"
  done
}
# Drivers of modules bound on the other buses (a virtio driver binds the virtio device behind
# virtio-pci; a platform or ISA driver its own device).
bound() {
  for drv in /sys/bus/*/drivers/*; do
    [ -e "$drv/module" ] || continue
    bus=$(basename "$(dirname "$(dirname "$drv")")")
    [ "$bus" = pci ] && continue
    mod=$(basename "$(readlink "$drv/module")")
    for d in "$drv"/*; do
      [ -L "$d" ] || continue
      case "$(basename "$d")" in module|bind|unbind|uevent|new_id|remove_id) continue;; esac
      echo "@@AD bound $bus/$(basename "$d") driver=$(basename "$drv") module=$mod"
    done
  done
}
)SH";
  for (const auto& m : spec.preload)
    s += fmt::format("insmod /lib/ad/{0}.ko >/dev/null 2>&1; echo \"@@AD preload {0} rc=$?\"\n", m.name);
  s += "echo \"@@AD pci-before\"\npci\n";
  for (const auto& m : spec.modules)
    s += fmt::format("echo \"@@AD insmod-begin {0}\"\ninsmod /lib/ad/{0}.ko 2>&1\necho \"@@AD insmod {0} rc=$?\"\n", m.name);
  s += fmt::format("sleep {:.1f}\n", spec.settle_seconds);
  s += "echo \"@@AD pci-after\"\npci\nbound\n";
  s += "echo \"@@AD tainted $(cat /proc/sys/kernel/tainted)\"\n";
  if (!spec.repro.empty())
    s += fmt::format("echo \"@@AD repro-begin\"\ntimeout {} {}/bin/ad-repro 2>&1\necho \"@@AD repro rc=$?\"\n",
                     spec.repro_timeout_s, spec.repro_executable ? "" : "/bin/sh ");
  if (spec.unload)
    for (auto it = spec.modules.rbegin(); it != spec.modules.rend(); ++it)
      s += fmt::format("grep -q '^{0} ' /proc/modules && {{ rmmod {0} 2>&1; echo \"@@AD rmmod {0} rc=$?\"; }}\n", it->name);
  if (spec.unload && !spec.modules.empty()) s += fmt::format("sleep {:.1f}\n", spec.unload_settle_seconds);
  s += "echo \"@@AD dmesg-begin\"\ndmesg\necho \"@@AD dmesg-end\"\necho \"@@AD done\"\npoweroff -f\n";
  return s;
}

static util::Expected<std::string> module_bytes(const fs::path& p) {
  std::string name = p.filename().string();
  std::vector<std::string> argv;
  if (name.ends_with(".ko.xz")) argv = {"xz", "-dc", p.string()};
  else if (name.ends_with(".ko.zst")) argv = {"zstd", "-dcq", p.string()};
  else if (name.ends_with(".ko.gz")) argv = {"gzip", "-dc", p.string()};
  else return util::read_file(p);
  util::RunRequest req;
  req.argv = argv;
  req.timeout = 60s;
  req.output_cap = std::size_t(256) << 20;
  auto r = util::run(req);
  if (!r) return util::unexpected(r.error());
  if (!r->ok()) return util::unexpected(util::ErrorKind::io, fmt::format("cannot decompress {}: {}", p.string(), r->err));
  return std::move(r->out);
}

util::Expected<std::string> build_initramfs(const InitramfsSpec& spec, const fs::path& busybox) {
  util::CpioWriter w;
  for (const char* d : {"bin", "dev", "proc", "sys", "lib", "lib/ad", "tmp"}) w.add_directory(d);
  w.add_char_device("dev/console", 5, 1);
  w.add_char_device("dev/null", 1, 3, 0666);
  auto bb = util::read_file(busybox);
  if (!bb) return util::unexpected(bb.error());
  w.add_file("bin/busybox", *bb, 0755);
  // What /init needs, and what a reproducer script may use.
  for (const char* applet :
       {"sh",    "mount", "insmod",  "rmmod", "dmesg",    "poweroff", "cat",  "basename", "readlink", "sleep", "grep",  "echo",
        "ls",    "lsmod", "timeout", "ip",    "ifconfig", "dd",       "head", "tail",     "printf",   "test",  "[",     "true",
        "false", "seq",   "mknod",   "mkdir", "rm",       "cp",       "mv",   "chmod",    "kill",     "ps",    "uname", "wc",
        "sed",   "awk",   "find",    "xargs", "tee",      "touch",    "sync", "usleep",   "hexdump"})
    w.add_symlink(std::string("bin/") + applet, "busybox");
  if (!spec.repro.empty()) w.add_file("bin/ad-repro", spec.repro, 0755);
  for (const auto* list : {&spec.preload, &spec.modules}) {
    for (const auto& m : *list) {
      auto bytes = module_bytes(m.host_path);
      if (!bytes) return util::unexpected(bytes.error());
      w.add_file("lib/ad/" + m.name + ".ko", *bytes);
    }
  }
  w.add_file("init", init_script(spec), 0755);
  return w.finish();
}

util::Expected<fs::path> find_static_busybox() {
  for (const char* p : {"/bin/busybox", "/usr/bin/busybox"}) {
    if (!fs::exists(p)) continue;
    auto data = util::read_file(p);
    if (!data) continue;
    // A dynamically linked busybox names its ELF interpreter; it would not run in our initramfs.
    if (data->find("/lib64/ld-linux-x86-64.so") == std::string::npos) return fs::path(p);
  }
  return util::unexpected(util::ErrorKind::not_found,
                          "no statically linked busybox: install it with `apt-get install busybox-static`");
}

} // namespace autodriver::gate
