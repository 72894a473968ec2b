#pragma once
// The gate interface and the explicit gate table (one gate = one file = one row).

#include "autodriver/core/kernel.hpp"
#include "autodriver/core/verdict.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::gate {

/// What the user asked `check` (or the port loop) to validate.
struct CheckRequest {
  std::filesystem::path tree; ///< the user's driver tree (never written); with a root, the root
  /// --root: a folder holding `tree`, copied with it; empty: found from the tree's build files
  /// (gate/build_root.hpp). run_check makes it the tree and sets `subdir`.
  std::filesystem::path root;
  std::filesystem::path subdir;     ///< the driver's folder inside `tree` once tree is a root; set: no search
  std::vector<std::string> kernels; ///< "6.1", "6.12" or paths
  bool sparse = true;
  bool boot = false;
  std::string device; ///< QEMU -device for the boot gate, optional
  /// --repro: run in the guest once the modules are loaded (before they are unloaded): a C file
  /// (compiled statically on the host in the sandbox), a script file, or a shell command.
  std::string repro;
  std::string build_cmd;               ///< custom build command with {kdir} {kver}; empty: kbuild M=
  std::vector<std::string> build_deps; ///< Debian packages the build needs beyond the kernel's (kernel::with_build_deps)
  std::filesystem::path baseline;      ///< tree whose sparse warnings do not count
  std::chrono::seconds build_timeout{600};
  std::chrono::seconds boot_timeout{60};
  int jobs = 0; ///< make -j; 0: the CPUs this process may use
};

/// Everything a gate sees: the target kernel, the scratch copy and the results of gates before it.
struct GateInput {
  const core::Kernel& kernel;
  const CheckRequest& request;
  std::filesystem::path work_tree; ///< scratch copy of the tree for this kernel
  std::filesystem::path scratch;   ///< per-kernel scratch dir the gate may use
  const std::vector<core::GateResult>& earlier;
};

class Gate {
public:
  virtual ~Gate() = default;
  virtual std::string_view id() const = 0;
  /// Never throws. A failing driver is a GateResult with ok=false; a broken tool sets infra_error.
  virtual core::GateResult run(const GateInput& input) = 0;
};

struct GateEntry {
  std::string_view id;
  std::string_view description;
  std::unique_ptr<Gate> (*make)();
};

/// The gates in the order they run: build, sparse, boot.
const std::vector<GateEntry>& gate_table();

std::unique_ptr<Gate> make_kbuild_gate();
std::unique_ptr<Gate> make_sparse_gate();
std::unique_ptr<Gate> make_qemu_boot_gate();
/// Compares the tree with --baseline (its original) by the rules of integrity.hpp; runs only with --baseline.
std::unique_ptr<Gate> make_integrity_gate();

/// Find an earlier gate's result by id, or nullptr.
const core::GateResult* find_result(const std::vector<core::GateResult>& results, std::string_view id);

} // namespace autodriver::gate
