#pragma once
// Debian's `*-dkms` packages as corpus units: listed from the private archive index (never the
// system's apt state), downloaded and unpacked with `dpkg-deb -x` into the cache (never
// installed), built from their dkms.conf.

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace autodriver::corpus {

struct DkmsConf {
  std::string package_name;
  std::string package_version;
  std::vector<std::string> module_names;     ///< BUILT_MODULE_NAME[i]
  std::vector<std::string> module_locations; ///< BUILT_MODULE_LOCATION[i] (may be empty)
  std::string make;                          ///< MAKE[0] as written
};

/// Reads the simple KEY="value" / KEY[0]="value" assignments of a dkms.conf (shell logic is ignored).
DkmsConf parse_dkms_conf(std::string_view text);

/// MAKE[0] turned into a build_tree command ({kdir}, {kver}), with the build directory written as
/// `build_dir`; empty when it needs a shell (pipes, $(...), conditionals).
std::string dkms_build_command(const DkmsConf& conf, const std::string& build_dir);

/// The Debian release whose DKMS packages go with a kernel of `kernel_suite` ("trixie-backports"
/// -> "trixie"); for a kernel not from the archive (host, path), the host's own suite, else the
/// suite of the archive's newest kernel. Empty when nothing is known.
std::string dkms_suite(std::string_view kernel_suite);

/// Names of the `*-dkms` packages of a Debian release in the private archive index, sorted.
util::Expected<std::vector<std::string>> list_dkms_packages(const std::string& suite);

struct DkmsSource {
  std::string package;          ///< "v4l2loopback-dkms"
  std::string version;          ///< Debian version of the package
  std::string suite;            ///< the archive suite it came from
  std::filesystem::path source; ///< <cache>/dkms/<suite>/<package>/root/usr/src/<name>-<version>
  DkmsConf conf;
};

/// Downloads and unpacks the package of `suite` once into <cache>/dkms/<suite>/<package>/
/// (locked, resumable).
util::Expected<DkmsSource> fetch_dkms_source(const std::string& package, const std::string& suite);

} // namespace autodriver::corpus
