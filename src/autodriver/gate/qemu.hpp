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
  /// The guest's time from its /init on ("@@AD init" on the console): the driver's part.
  std::chrono::seconds timeout{60};
  /// Time the kernel's own boot may take before /init, on top of `timeout`: the machine's part,
  /// not the driver's (an emulated CPU on a loaded host boots several times slower).
  std::chrono::seconds boot_allowance{120};
  int memory_mb = 512;
  /// QMP socket (in the run's scratch folder; empty: none). With it, a guest still running
  /// `nmi_before` its deadline gets an NMI: the guest (unknown_nmi_panic=1) panics and prints
  /// where its CPU was, the one trace a hang with interrupts off leaves (no watchdog can fire);
  /// at the deadline QEMU is told to quit. Without it the deadline is the longest one
  /// (`boot_allowance + timeout` from the start).
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
