#pragma once
// Untrusted commands (a driver's Makefile, a --build-cmd, spatch over a driver's files, a
// reproducer's compile) run under bubblewrap: a root file system read-only, the paths they need
// read-only at the same place, only their scratch folder and a private /tmp writable, /proc, a
// minimal /dev, no network, an environment of their own, killed with their parent. They never hold
// a capability and never gain one: as an ordinary user bubblewrap's user namespace gives none; as
// root the command runs as an unprivileged uid (`setpriv` inside, after bubblewrap has mounted),
// so a Makefile can neither remount a read-only bind nor read a file only root may read.

#include "autodriver/util/expected.hpp"
#include "autodriver/util/subprocess.hpp"

#include <filesystem>
#include <string>
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
  /// Bound read-only at another path (host, sandbox). A sandbox path inside the root's system
  /// folders (`/lib/modules`) is followed through the root's symlinks (`/lib` -> `usr/lib`) and
  /// bound only when the root has that folder (a read-only root cannot grow a mount point).
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> read_only_at;
  /// Sandbox folders put before the standard PATH.
  std::vector<std::filesystem::path> path_first;
  /// Variables of the sandbox's environment besides PATH, HOME, TMPDIR and LANG; nothing of the
  /// caller's environment reaches it otherwise (an API key in autodriver's is not the driver's).
  std::vector<std::pair<std::string, std::string>> env;
  /// Devices bound in as they are (/dev/kvm for QEMU).
  std::vector<std::filesystem::path> devices;
  /// Who the command runs as when the caller is root.
  enum class RootRuns {
    unprivileged, ///< uid 65534, writable trees given to it (builds, spatch, compiles)
    /// uid 0 with no capability at all (QEMU, which must open /dev/kvm, root's alone): it cannot
    /// remount or override a permission, but reads what root owns on the root it is given.
    root_without_caps,
  } root_runs = RootRuns::unprivileged;
};

/// Who the sandboxed command runs as.
struct SandboxUser {
  bool caller_is_root = false; ///< as root: bubblewrap keeps only the setuid caps, setpriv drops them with the uid
  unsigned uid = 65534;        ///< the unprivileged uid and gid a root caller's command runs as (nobody/nogroup)
  unsigned gid = 65534;
};

/// This process's: root or not, and the unprivileged ids a root caller's commands get.
SandboxUser sandbox_user();

/// Once per process: bwrap is installed and can make its namespaces here. The error says what to do
/// (install bubblewrap; enable user namespaces).
Expected<void> sandbox_available();

/// The bwrap argv that runs `argv` in `cwd` inside the sandbox, as `user` says.
std::vector<std::string> sandbox_argv(const SandboxSpec& spec, const std::vector<std::string>& argv,
                                      const std::filesystem::path& cwd, const SandboxUser& user = sandbox_user());

/// Rewrites `req.argv` to run inside the sandbox (its cwd becomes the sandbox's working directory;
/// its env_set becomes the sandbox's environment). As root, the writable and moved folders are
/// given to the unprivileged uid first, so that it may write there and nowhere else.
Expected<void> sandbox_request(RunRequest& req, const SandboxSpec& spec);

} // namespace autodriver::util
