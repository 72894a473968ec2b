#pragma once
// Debian's archive as a private apt configuration under the cache: which kernel lines exist,
// their newest ABI and suite, and downloads of their packages. Never the system's apt state:
// own sources, lists, status and archives; `Acquire::Check-Valid-Until "false"` so that a snapshot
// mirror with expired Release files works.

#include "autodriver/kernel/fetch.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::kernel {

/// dpkg's version ordering (epoch, upstream, revision; '~' sorts before everything): <0, 0, >0.
int compare_debian_versions(std::string_view a, std::string_view b);

/// One binary package stanza of a Packages index.
struct PackageEntry {
  std::string name;
  std::string version;
  std::string depends; ///< raw Depends: field
  std::string suite;   ///< "trixie-backports": the suite whose index lists it
};

/// The stanzas of a Packages index whose Package name satisfies `keep`.
std::vector<PackageEntry> parse_packages(std::string_view text, std::string_view suite,
                                         const std::function<bool(std::string_view)>& keep);

/// A Depends field as alternatives: "a (= 1) | b, c" -> {{a, =, 1}, {b}}, {{c}}.
struct DependsAtom {
  std::string name;
  std::string op; ///< "=", ">=", "<<", ... or empty
  std::string version;
};
std::vector<std::vector<DependsAtom>> parse_depends(std::string_view field);

/// A kernel the archive offers: its generic amd64 flavour's headers package.
struct ArchiveKernel {
  std::string release; ///< ABI, `uname -r`: "7.3.4+deb13-amd64", "6.1.0-57-amd64"
  std::string line;    ///< "7.3"
  std::string version; ///< the package version, "7.3.4-1~bpo13+1"
  std::string suite;   ///< "trixie-backports"
};

/// "trixie-backports" -> "trixie", "bookworm-security" -> "bookworm": the distribution whose
/// toolchain built the suite's packages.
std::string base_suite(std::string_view suite);

/// Suites the private configuration reads, oldest first.
const std::vector<std::string>& archive_suites();

class Archive {
public:
  enum class Refresh { if_missing, if_stale, always };

  /// Opens the private configuration (created on first use) and its package lists; runs
  /// `apt-get update` when the lists are missing (or stale / always, as asked). A failed update
  /// with lists at hand is a warning (offline use), without lists an error.
  static util::Expected<Archive> open(Refresh refresh, const ProgressFn& progress);

  /// Opens only what is already there (no network); empty lists when never updated.
  static Archive open_offline();

  bool has_lists() const { return m_has_lists; }
  const std::vector<ArchiveKernel>& kernels() const { return m_kernels; }
  /// Kernel lines with a linux-source-X package, ascending ("5.10", "6.1", ...).
  std::vector<std::string> source_lines() const;
  /// Every line with a generic amd64 kernel, ascending.
  std::vector<std::string> lines() const;

  /// Newest kernel of a line ("7.3"); at equal package versions the host's own suite wins.
  std::optional<ArchiveKernel> newest(std::string_view line) const;
  std::optional<ArchiveKernel> find_release(std::string_view release) const;

  /// Names of the `*-dkms` packages (not dh-dkms) of a Debian release: `suite` and its
  /// -security/-backports suites ("trixie"), sorted.
  std::vector<std::string> dkms_packages(std::string_view suite) const;
  /// The newest version of `name` in `suite` and its -security/-backports suites.
  const PackageEntry* package_in(std::string_view name, std::string_view suite) const;
  /// The running system's Debian suite when the archive serves it (VERSION_CODENAME), else empty.
  static std::string host_suite();

  /// The newest version of `name` satisfying `op version` (any when op is empty).
  const PackageEntry* package(std::string_view name, std::string_view op = {}, std::string_view version = {}) const;

  /// `apt-get download name=version ...` into `dir` (non-root is fine); returns the .deb paths.
  util::Expected<std::vector<std::filesystem::path>> download(const std::vector<const PackageEntry*>& packages,
                                                              const std::filesystem::path& dir, const ProgressFn& progress) const;

  /// `dpkg-deb -x deb dest` (nothing installed, no root); a full disk says so.
  static util::Expected<void> unpack(const std::filesystem::path& deb, const std::filesystem::path& dest);

  /// The package and the closure of its Depends that belong to the same kernel build: names that
  /// contain `tag` (a release without its flavour, "7.3.4+deb13") or start with linux-kbuild- /
  /// linux-headers-, never linux-image-* unless `name` is one. Missing names are an error.
  util::Expected<std::vector<const PackageEntry*>> kernel_closure(std::string_view name, std::string_view tag) const;

  /// The mirror's URL (AUTODRIVER_MIRROR, else http://deb.debian.org/debian).
  static std::string mirror();

private:
  util::Expected<void> load_lists();

  std::filesystem::path m_dir;
  bool m_has_lists = false;
  std::vector<PackageEntry> m_packages; // linux-* and *-dkms packages of every suite
  std::vector<ArchiveKernel> m_kernels;
};

} // namespace autodriver::kernel
