#pragma once
// Running QEMU: the PVH + qboot recipe, KVM only when a probe proves it works.

#include "autodriver/util/expected.hpp"
#include "autodriver/util/subprocess.hpp"

#include <chrono>
#include <filesystem>
#include <string>

namespace autodriver::gate {

struct BootRequest {
  std::filesystem::path vmlinux;
  std::filesystem::path initrd;
  std::string device;  ///< extra -device, may be empty
  bool pvpanic = true; ///< add -device pvpanic-pci and make a panic exit QEMU with failure
  std::chrono::seconds timeout{60};
  int memory_mb = 512;
  /// QMP socket (in the run's scratch folder; empty: none). With it, a guest still running
  /// `nmi_before` the timeout gets an NMI: the guest (unknown_nmi_panic=1) panics and prints
  /// where its CPU was, the one trace a hang with interrupts off leaves (no watchdog can fire).
  std::filesystem::path qmp_socket;
  std::chrono::seconds nmi_before{10};
};

struct BootResult {
  util::RunResult run;       ///< run.out holds the serial console
  std::string console;       ///< same as run.out
  std::string accel;         ///< "kvm" or "tcg"
  bool panic_exit = false;   ///< QEMU exited through the pvpanic action
  bool nmi_injected = false; ///< the guest was still running near the timeout and got an NMI
};

/// The qemu-system-x86_64 argv for a request and an accelerator.
std::vector<std::string> qemu_argv(const BootRequest& r, const std::string& accel);

/// Boot once; a QEMU that cannot start is an Error, anything the guest does is data.
util::Expected<BootResult> boot_qemu(const BootRequest& r);

/// "kvm" when /dev/kvm boots this kernel quickly (probed once per host boot, cached), else "tcg".
/// AUTODRIVER_ACCEL=kvm|tcg overrides.
std::string choose_accel(const BootRequest& r);

} // namespace autodriver::gate
