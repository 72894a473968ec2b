#pragma once
// Driver units: one loadable module of a kernel source tree, found from its directory's
// Makefile/Kbuild, and how to lay it out as a stand-alone out-of-tree kbuild directory.

#include "autodriver/corpus/kbuild_makefile.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace autodriver::corpus {

struct DriverUnit {
  std::string dir;                   ///< "drivers/net/ethernet/intel/e1000e" (relative to the tree root)
  std::string module;                ///< "e1000e"
  std::string config;                ///< "CONFIG_E1000E" (empty for obj-m)
  std::string config_value;          ///< value in the build kernel's .config: "m", "y" or ""
  std::vector<std::string> objects;  ///< from the Makefile, relative to dir
  std::vector<std::string> problems; ///< Makefile constructs we could not resolve
  std::vector<std::string> ccflags;  ///< simple ccflags of the directory
  std::map<std::string, std::string> object_flags;
  std::vector<std::string> dropped_flags;
  std::string makefile; ///< "Makefile" or "Kbuild"

  /// "drivers/net/ethernet/intel/e1000e/e1000e": the unit's identity across kernels and runs.
  std::string path() const { return dir + "/" + module; }
};

/// Walks `roots` (e.g. {"drivers", "sound", "net"}) under a kernel source tree and returns every
/// module declaration, sorted by path. `config` is the target kernel's .config.
std::vector<DriverUnit> enumerate_units(const std::filesystem::path& tree, const std::vector<std::string>& roots,
                                        const std::map<std::string, std::string>& config);

/// Reads <kernel build dir>/.config.
util::Expected<std::map<std::string, std::string>> read_kernel_config(const std::filesystem::path& build_dir);

/// The files of a unit laid out as an out-of-tree kbuild directory.
struct UnitLayout {
  std::vector<std::string> files;    ///< relative to the unit dir: sources and the headers they include
  std::string makefile;              ///< the generated Makefile text
  std::vector<std::string> outside;  ///< quoted #includes that resolve outside the unit dir
  std::vector<std::string> problems; ///< missing sources (generated files, ...)
  long c_lines = 0;                  ///< lines of .c/.h copied
};

/// Works out the files (sources of each object, plus the closure of their quoted #includes inside
/// the unit dir) and the Makefile. Reads the tree, writes nothing.
UnitLayout plan_unit(const std::filesystem::path& tree, const DriverUnit& unit, std::string_view origin_note);

/// Copies the planned files into `dest` (created) and writes the Makefile.
util::Expected<void> materialize_unit(const std::filesystem::path& tree, const DriverUnit& unit, const UnitLayout& layout,
                                      const std::filesystem::path& dest);

/// "drivers/net/ethernet/intel/e1000e" -> "net/ethernet"; "drivers/hwmon" -> "hwmon";
/// "sound/pci/hda" -> "sound/pci"; "net/netfilter" -> "net/netfilter". Documented in docs/case-format.md.
std::string subsystem_of(std::string_view dir);

nlohmann::json to_json(const DriverUnit& u);

} // namespace autodriver::corpus
