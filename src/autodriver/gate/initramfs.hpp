#pragma once
// The boot test's initramfs: static busybox, the modules to load, and an /init that reports
// each step with "@@AD" markers on the serial console (parsed by console_parser).

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::gate {

struct ModuleFile {
  std::string name;                ///< module name (normalized)
  std::filesystem::path host_path; ///< .ko, .ko.xz, .ko.zst or .ko.gz on the host
};

struct InitramfsSpec {
  std::vector<ModuleFile> preload; ///< helpers (pvpanic) and dependencies, in load order
  std::vector<ModuleFile> modules; ///< the driver's own modules, in load order
  bool unload = true;              ///< rmmod the driver's modules (reverse order) after the checks
  double settle_seconds = 0.3;     ///< wait after insmod so that deferred probes can run
  /// Wait after the unload so that a timer or work the module left armed fires while the machine
  /// still runs (drivers' watchdogs rearm every 2 s, rounded up to a whole second).
  double unload_settle_seconds = 3.0;
  /// A reproducer run once the modules are loaded: a static executable, or a script run by sh.
  std::string repro;
  bool repro_executable = false;
  int repro_timeout_s = 30;
};

/// The /init shell script for `spec`.
std::string init_script(const InitramfsSpec& spec);

/// A newc cpio archive (uncompressed; the kernel unpacks it directly).
util::Expected<std::string> build_initramfs(const InitramfsSpec& spec, const std::filesystem::path& busybox);

/// /bin/busybox if it is statically linked (busybox-static), else an error that says what to install.
util::Expected<std::filesystem::path> find_static_busybox();

} // namespace autodriver::gate
