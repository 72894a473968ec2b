#pragma once
// A driver function the call trace lost to a tail call: when the driver's last statement is a call
// (`free_netdev(dev);` ending a remove function), gcc jumps to it and the driver's frame is gone
// from the trace. The kernel frame below the callee then called the driver through a function
// pointer: which members it calls (`drv->remove(pdev)` in pci_device_remove) is read from the
// kernel's source, the driver's function assigned to such a member (`.remove = cp_remove_one`)
// whose last statement calls the callee is the lost frame.

#include "autodriver/crash/report.hpp"

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace autodriver::crash {

/// The members `->m(...)` the kernel function `name` calls, read from its definition under the
/// code folders of `kernel_src`; kept for the process.
std::set<std::string> members_called_by(const std::filesystem::path& kernel_src, const std::string& name);

struct TailCall {
  std::string function; ///< the driver's function
  std::string file;     ///< relative to the tree
  int line = 0;         ///< its last statement, the call
  std::string callee;   ///< the kernel function it tail-calls
  std::string caller;   ///< the kernel function that called it
  std::string member;   ///< through this member
};

/// The one driver function of `tree` that fits a caller/callee pair of the report's kernel frames,
/// innermost pair first; nullopt when none or several fit, or when the trace has driver frames.
std::optional<TailCall> lost_tail_call(const CrashReport& r, const std::filesystem::path& tree,
                                       const std::filesystem::path& kernel_src);

/// With driver frames in the trace: the driver function the outermost of them was tail-called
/// from, when the kernel frame below it calls the driver through a member (`drv->remove`) that
/// function is not assigned to, and exactly one driver function assigned to such a member ends
/// calling it (`.remove = bochs_pci_remove`, whose last statement is `bochs_hw_fini(dev);`).
std::optional<TailCall> lost_tail_caller(const CrashReport& r, const std::filesystem::path& tree,
                                         const std::filesystem::path& kernel_src);

} // namespace autodriver::crash
