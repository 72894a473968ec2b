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
};

struct BootResult {
  util::RunResult run;     ///< run.out holds the serial console
  std::string console;     ///< same as run.out
  std::string accel;       ///< "kvm" or "tcg"
  bool panic_exit = false; ///< QEMU exited through the pvpanic action
};

/// The qemu-system-x86_64 argv for a request and an accelerator.
std::vector<std::string> qemu_argv(const BootRequest& r, const std::string& accel);

/// Boot once; a QEMU that cannot start is an Error, anything the guest does is data.
util::Expected<BootResult> boot_qemu(const BootRequest& r);

/// "kvm" when /dev/kvm boots this kernel quickly (probed once per host boot, cached), else "tcg".
/// AUTODRIVER_ACCEL=kvm|tcg overrides.
std::string choose_accel(const BootRequest& r);

} // namespace autodriver::gate
