#pragma once
// The Kernel domain type: one target kernel that drivers are built against and booted in.

#include "autodriver/util/sandbox.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::core {

/// The leading numbers of a kernel release or version ("6.12.117+deb12-amd64", "6.4", "5"): the
/// one reader of kernel version numbers. `count` says how many of major, minor, patch were
/// written (the others are 0), `used` how many bytes they took. nullopt when `s` does not start
/// with a digit or a number is absurd (more than 6 digits).
struct ReleaseNumbers {
  int major = 0, minor = 0, patch = 0;
  int count = 0;
  std::size_t used = 0;
  /// LINUX_VERSION_CODE, as KERNEL_VERSION(a,b,c) computes it (patch capped at 255).
  long code() const { return (static_cast<long>(major) << 16) + (static_cast<long>(minor) << 8) + (patch > 255 ? 255 : patch); }
  /// "6.12" (major.minor).
  std::string line() const { return std::to_string(major) + "." + std::to_string(minor); }
};
std::optional<ReleaseNumbers> release_numbers(std::string_view s);

/// Where a kernel's build-host view is inside its sandbox.
inline constexpr const char* k_build_host_dir = "/autodriver/host";

struct Kernel {
  std::string name;                  ///< what the user typed: "6.1", "6.12" or a path
  std::string release;               ///< uname -r of the target, e.g. "6.1.0-57-amd64"
  std::string line;                  ///< "6.1", "6.12" (major.minor), from the release
  std::filesystem::path build_dir;   ///< kbuild dir for M= builds (headers package or a kernel build)
  std::filesystem::path image_root;  ///< dpkg -x of the image package (empty if none)
  std::filesystem::path vmlinux;     ///< uncompressed kernel for PVH boot (empty if none)
  std::filesystem::path modules_dir; ///< <image_root>/lib/modules/<release>
  std::string headers_package;       ///< Debian package names (empty for a path target)
  std::string image_package;
  std::string source_package;
  std::string version;                           ///< Debian package version ("7.3.4-1~bpo13+1"); empty for a path
  std::string suite;                             ///< Debian suite it comes from ("trixie-backports"); empty for a path
  std::string compiler;                          ///< compiler package its config names ("gcc-14")
  std::filesystem::path toolchain_root;          ///< root its kbuild runs in; empty: the host's /
  std::vector<std::filesystem::path> read_paths; ///< what a build reads besides the toolchain (the kernel's cache dir)
  /// The build host's view (kernel/build_host.hpp: plain compiler names, uname, /lib/modules);
  /// empty: none (the build still runs, as before such a view).
  std::filesystem::path build_host;

  bool has_headers() const;
  bool has_image() const;
  /// The release's LINUX_VERSION_CODE: (a<<16)+(b<<8)+min(c,255); 0 when the release has none.
  int version_code() const;
  /// The sandbox a build against this kernel runs in, with `writable` its only writable folder:
  /// its toolchain root, its tree read-only and the build host's view (k_build_host_dir, first on
  /// PATH; its modules/ as /lib/modules).
  util::SandboxSpec build_sandbox(const std::filesystem::path& writable) const;
};

} // namespace autodriver::core
