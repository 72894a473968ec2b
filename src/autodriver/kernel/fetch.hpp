#pragma once
// `kernel fetch`: headers via apt, the image via apt-get download + dpkg -x into the cache
// (the system is not changed), vmlinux extraction, depmod for the image's module tree.
// Safe for concurrent fetchers (flock) and resumable (a partial dir is discarded and redone).

#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <functional>
#include <string>

namespace autodriver::kernel {

using ProgressFn = std::function<void(const std::string&)>;

/// Make the kernel usable for build and boot gates; returns the resolved Kernel with image paths.
util::Expected<core::Kernel> fetch_kernel(const std::string& name, const ProgressFn& progress);

/// Extract the uncompressed ELF vmlinux from a bzImage (xz, zstd, gzip, lzma, lz4 payloads).
util::Expected<void> extract_vmlinux(const std::filesystem::path& bzimage, const std::filesystem::path& out);

} // namespace autodriver::kernel
