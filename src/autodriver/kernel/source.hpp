#pragma once
// Kernel source trees (Debian's linux-source-X packages), decompressed once into the cache.

#include "autodriver/core/kernel.hpp"
#include "autodriver/kernel/fetch.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>

namespace autodriver::kernel {

/// The tarball Debian's linux-source-<line> installs: /usr/src/linux-source-<line>.tar.xz.
std::filesystem::path source_tarball(const core::Kernel& k);

/// Root of the extracted source tree for the kernel's line, e.g. <cache>/source/6.1/linux-source-6.1.
/// Installs the linux-source package when missing (root) and extracts the tarball once; later
/// calls return at once. Concurrent callers wait on a lock; an interrupted extraction is redone.
util::Expected<std::filesystem::path> ensure_source(const core::Kernel& k, const ProgressFn& progress);

/// The extracted tree if it is already there (no work), else empty.
std::filesystem::path cached_source(const core::Kernel& k);

} // namespace autodriver::kernel
