#pragma once
// Kernel targets: resolve a user's kernel name to a core::Kernel, and the cache layout.
// Debian's kernels are discovered from the archive (archive.hpp), never listed in code.

#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::kernel {

/// $AUTODRIVER_CACHE, else $XDG_CACHE_HOME/autodriver, else ~/.cache/autodriver.
std::filesystem::path cache_root();

/// <cache>/kernels/<release>: everything of one fetched kernel (root/ with headers, kbuild, image,
/// modules as Debian ships them; vmlinux; complete.json).
std::filesystem::path kernel_cache_dir(const std::string& release);

/// What `kernel fetch` recorded for a fetched release (complete.json), if it is complete.
struct FetchedKernel {
  std::string release, line, version, suite, compiler;
  bool has_image = false;
};
std::optional<FetchedKernel> fetched_kernel(const std::string& release);
/// Every completely fetched kernel in the cache.
std::vector<FetchedKernel> fetched_kernels();

/// Resolve a user's kernel name: a line ("5.10", "6.1", "7.3": its newest ABI in Debian's
/// archive), a Debian release string ("7.2.13+deb14-amd64"), `host` (the running kernel's
/// /lib/modules/$(uname -r)/build, as DKMS uses) or a path to a kernel build / headers directory.
/// Reads the archive's package lists (updating them only when there are none); fetched kernels
/// resolve offline. Does not fetch the kernel.
util::Expected<core::Kernel> resolve_kernel(const std::string& name);

/// The kernel with its builds given `build_deps` (Debian packages a driver's own build needs beyond
/// the kernel's: see ensure_toolchain_with): a Debian kernel builds in its toolchain root with them
/// installed (made once; `progress` says so); a host or path kernel builds with the host's own
/// programs, so each package must be installed there (an error names the missing ones). A kernel
/// not fetched yet keeps them until it is. No package: the kernel as it is.
util::Expected<core::Kernel> with_build_deps(core::Kernel k, const std::vector<std::string>& build_deps,
                                             const std::function<void(const std::string&)>& progress);

/// Reads the release string of a kernel build directory (include/config/kernel.release,
/// else include/generated/utsrelease.h).
util::Expected<std::string> read_build_release(const std::filesystem::path& build_dir);

/// "7.3.4+deb13-amd64" -> "7.3".
std::string line_of(const std::string& release);

} // namespace autodriver::kernel
