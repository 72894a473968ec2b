#pragma once
// Kernel source trees (Debian's linux-source-X packages), decompressed once into the cache.

#include "autodriver/core/kernel.hpp"
#include "autodriver/kernel/fetch.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <optional>

namespace autodriver::kernel {

/// The tarball Debian's linux-source-<line> installs: /usr/src/linux-source-<line>.tar.xz.
std::filesystem::path source_tarball(const core::Kernel& k);

/// Root of the extracted source tree for the kernel's line, e.g. <cache>/source/6.1/linux-source-6.1.
/// Downloads Debian's linux-source-<line> with the private apt configuration when its tarball is
/// not installed (never installs it) and extracts it once; later
/// calls return at once. Concurrent callers wait on a lock; an interrupted extraction is redone.
util::Expected<std::filesystem::path> ensure_source(const core::Kernel& k, const ProgressFn& progress);

/// For a port without --from: the newest kernel line older than `target`'s whose source Debian's
/// archive has (or the cache holds), resolved but not fetched; the kernel's own history to learn from.
std::optional<core::Kernel> reference_kernel(const core::Kernel& target);
/// Every kernel line older than the target whose source is at hand (the archive's or the cache's),
/// newest first: the kernel's own history, one Debian line per step.
std::vector<core::Kernel> reference_chain(const core::Kernel& target);

/// The extracted tree if it is already there (no work), else empty.
std::filesystem::path cached_source(const core::Kernel& k);

} // namespace autodriver::kernel
