#pragma once
// Debian's `*-dkms` packages as corpus units: listed with apt-cache, fetched with
// `apt-get download` + `dpkg -x` into the cache (never installed), built from their dkms.conf.

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace autodriver::corpus {

struct DkmsConf {
  std::string package_name;
  std::string package_version;
  std::vector<std::string> module_names;   ///< BUILT_MODULE_NAME[i]
  std::vector<std::string> module_locations; ///< BUILT_MODULE_LOCATION[i] (may be empty)
  std::string make;                         ///< MAKE[0] as written
};

/// Reads the simple KEY="value" / KEY[0]="value" assignments of a dkms.conf (shell logic is ignored).
DkmsConf parse_dkms_conf(std::string_view text);

/// MAKE[0] turned into a build_tree command ({kdir}, {kver}), with the build directory written as
/// `build_dir`; empty when it needs a shell (pipes, $(...), conditionals).
std::string dkms_build_command(const DkmsConf& conf, const std::string& build_dir);

/// Names of `*-dkms` packages known to apt (`apt-cache search --names-only`), sorted.
util::Expected<std::vector<std::string>> list_dkms_packages();

struct DkmsSource {
  std::string package;              ///< "v4l2loopback-dkms"
  std::string version;              ///< Debian version of the .deb
  std::filesystem::path source;     ///< <cache>/dkms/<package>/root/usr/src/<name>-<version>
  DkmsConf conf;
};

/// Downloads and unpacks the package once into <cache>/dkms/<package>/ (locked, resumable).
util::Expected<DkmsSource> fetch_dkms_source(const std::string& package);

} // namespace autodriver::corpus
