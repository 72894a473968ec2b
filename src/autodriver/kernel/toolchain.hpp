#pragma once
// Toolchain roots: for each Debian suite and compiler, a minimal root file system made once with
// mmdebstrap in the cache, shared by every kernel of that suite, in which that kernel's kbuild runs.

#include "autodriver/kernel/fetch.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::kernel {

/// The compiler package a kernel's CONFIG_CC_VERSION_TEXT names:
/// "x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0" -> "gcc-14"; "gcc-12 (Debian ...)" -> "gcc-12".
/// Empty when it does not name a versioned gcc (clang, a plain "gcc").
std::string compiler_package(std::string_view cc_version_text);

/// CONFIG_CC_VERSION_TEXT of a kernel build directory's .config (empty when absent).
std::string config_cc_version_text(const std::filesystem::path& build_dir);

/// <cache>/toolchains/<suite>-<compiler>/root, whether or not it exists yet.
std::filesystem::path toolchain_root(std::string_view suite, std::string_view compiler);

/// The root if it was made completely, else empty.
std::filesystem::path cached_toolchain(std::string_view suite, std::string_view compiler);

/// Makes the root once (mmdebstrap --variant=minbase; unshare mode when not root) with the compiler,
/// make, libc6-dev, bc, flex, bison, libelf-dev, kmod, sparse and dwarves. Concurrent callers wait on
/// a lock; an interrupted or failed creation leaves nothing behind and is redone by the next call.
util::Expected<std::filesystem::path> ensure_toolchain(std::string_view suite, std::string_view compiler,
                                                       const ProgressFn& progress);

/// The Debian package names of a `--build-deps` value ("pkgconf, libxtables-dev"), sorted and
/// deduplicated; an error names the first that is not a package name.
util::Expected<std::vector<std::string>> build_deps_of(std::string_view text);

/// The toolchain root with `build_deps` installed as well (the programs and libraries a driver's
/// own build calls beyond the kernel's: pkg-config, perl, a library's headers), made once per set
/// beside the plain one (<cache>/toolchains/<suite>-<compiler>+<hash>/root, mmdebstrap resolving
/// their dependencies). With no package: ensure_toolchain.
util::Expected<std::filesystem::path> ensure_toolchain_with(std::string_view suite, std::string_view compiler,
                                                            const std::vector<std::string>& build_deps,
                                                            const ProgressFn& progress);

} // namespace autodriver::kernel
