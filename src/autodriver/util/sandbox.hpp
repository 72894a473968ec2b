#pragma once
// Untrusted commands (a driver's Makefile, a --build-cmd) run under bubblewrap: a root file system
// read-only, the paths they need read-only at the same place, only their scratch folder writable,
// /proc, a minimal /dev and a private /tmp, no network, killed with their parent.

#include "autodriver/util/expected.hpp"
#include "autodriver/util/subprocess.hpp"

#include <filesystem>
#include <utility>
#include <vector>

namespace autodriver::util {

struct SandboxSpec {
  std::filesystem::path root;                   ///< the sandbox's /: a toolchain root; empty: the host's /
  std::vector<std::filesystem::path> read_only; ///< bound read-only at the same path
  std::vector<std::filesystem::path> writable;  ///< bound writable at the same path
  /// Bound writable at another path (host, sandbox): a build tree always at one path, so every
  /// copy of it builds with the same command lines and kbuild's records stay valid across copies.
  /// A working directory under a host path runs at its sandbox path.
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> moved;
};

/// Once per process: bwrap is installed and can make its namespaces here. The error says what to do
/// (install bubblewrap; enable user namespaces).
Expected<void> sandbox_available();

/// The bwrap argv that runs `argv` in `cwd` inside the sandbox.
std::vector<std::string> sandbox_argv(const SandboxSpec& spec, const std::vector<std::string>& argv,
                                      const std::filesystem::path& cwd);

/// Rewrites `req.argv` to run inside the sandbox (its cwd becomes the sandbox's working directory).
Expected<void> sandbox_request(RunRequest& req, const SandboxSpec& spec);

} // namespace autodriver::util
