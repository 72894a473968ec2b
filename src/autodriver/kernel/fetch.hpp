#pragma once
// `kernel fetch`: a Debian kernel's headers (with their -common and linux-kbuild packages), image
// and modules downloaded with the private apt configuration and unpacked into the cache (never
// installed; absolute symlinks rewritten to stay inside), depmod for its module tree, vmlinux
// extracted for PVH boots, and the toolchain root its config names made once per suite.
// Safe for concurrent fetchers (flock) and resumable (a partial dir is discarded and redone).

#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <functional>
#include <string>

namespace autodriver::kernel {

using ProgressFn = std::function<void(const std::string&)>;

/// Make the kernel usable for build and boot gates; returns the resolved Kernel with image paths.
/// `host` and path kernels need nothing fetched (their image is not known): returned as resolved.
util::Expected<core::Kernel> fetch_kernel(const std::string& name, const ProgressFn& progress);

/// Extract the uncompressed ELF vmlinux from a bzImage (xz, zstd, gzip, lzma, lz4 payloads).
util::Expected<void> extract_vmlinux(const std::filesystem::path& bzimage, const std::filesystem::path& out);

/// Rewrites every absolute symlink under `root` to the relative link to the same path inside
/// `root` (a package unpacked with dpkg -x must not point into the host's /usr). Returns how many.
std::size_t relocate_symlinks(const std::filesystem::path& root);

} // namespace autodriver::kernel
