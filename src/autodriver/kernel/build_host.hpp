#pragma once
// The build host a driver's own build expects, for one kernel, made once into the cache and bound
// into its sandbox (core::Kernel::build_sandbox): what a Debian machine running that kernel with its
// headers installed has and a bare toolchain root lacks.
//   bin/      gcc, cc, cpp, gcc-ar, ... under their plain names -> the compiler the kernel's
//             configuration names (gcc-14 in its toolchain root), binutils' plain names where the
//             root has only the triplet's; `uname`, answering the target's release for -r (and in
//             -a), as DKMS builds see `kernelver`.
//   modules/  what /lib/modules holds: <release>/build and source -> the kernel's tree (for a
//             Debian kernel its image's module folder, whose links its packages made).
// The folder is named by a hash of its contents, so concurrent runs and kernels never share or
// rewrite one another's.

#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace autodriver::kernel {

/// One entry of a build-host folder: a symlink (`target` set) or a file with `text`, at `path`
/// relative to the folder; `executable` for scripts.
struct HostEntry {
  std::filesystem::path path;
  std::filesystem::path target;
  std::string text;
  bool executable = false;
};

/// What the build host of `k` holds (pure: reads the toolchain root and the kernel's folders).
std::vector<HostEntry> build_host_entries(const core::Kernel& k);

/// The build-host folder of `k` in the cache, made if missing; as a side effect the toolchain root
/// gets an empty /lib/modules to bind it on (a read-only root cannot grow a mount point).
util::Expected<std::filesystem::path> ensure_build_host(const core::Kernel& k);

/// `k` with `build_host` set when its folder can be made (a build without it still runs).
core::Kernel with_build_host(core::Kernel k);

} // namespace autodriver::kernel
