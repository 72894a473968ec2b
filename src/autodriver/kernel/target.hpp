#pragma once
// Kernel targets: resolve "6.1", "6.12" or a build directory to a core::Kernel, and the cache layout.

#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::kernel {

/// A Debian kernel line this tool knows how to fetch (general distribution knowledge, stated once).
struct KnownKernel {
  std::string name;     ///< "6.1"
  std::string release;  ///< "6.1.0-57-amd64"
  std::string source_package; ///< "linux-source-6.1"
};

const std::vector<KnownKernel>& known_kernels();

/// $AUTODRIVER_CACHE, else $XDG_CACHE_HOME/autodriver, else ~/.cache/autodriver.
std::filesystem::path cache_root();

/// <cache>/kernels/<release>: where the image tree and vmlinux of a release live.
std::filesystem::path kernel_cache_dir(const std::string& release);

/// Resolve a user's kernel name: a known line ("6.1", "6.12"), a known release string,
/// or a path to a kernel build / headers directory. Does not fetch anything.
util::Expected<core::Kernel> resolve_kernel(const std::string& name);

/// Reads the release string of a kernel build directory (include/config/kernel.release,
/// else include/generated/utsrelease.h).
util::Expected<std::string> read_build_release(const std::filesystem::path& build_dir);

} // namespace autodriver::kernel
