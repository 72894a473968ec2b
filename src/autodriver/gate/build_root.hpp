#pragma once
// Drivers that reach outside their folder: vendor trees share code between drivers, and a
// driver's Makefile compiles `../common/hal.c` or adds `-I$(src)/../include`. A copy of the
// driver's folder alone cannot build; a copy of the folder that holds both can, with the build
// run in the driver's subfolder (BuildSpec::subdir).

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::gate {

/// What to copy for a driver and where the driver is inside the copy.
struct BuildRoot {
  std::filesystem::path root;          ///< the folder copied (the driver's own folder when it is self-contained)
  std::filesystem::path subdir;        ///< the driver's folder relative to root; empty when root is the driver
  std::vector<std::string> outside;    ///< what the build files name outside the driver's folder, as written
  std::vector<std::string> unresolved; ///< paths outside the folder that do not exist (or lie too far up)
};

/// How many folders above the driver an automatically chosen root may lie.
inline constexpr int k_max_root_levels = 3;

/// Reads the driver's build files (Makefile, Kbuild, *.mk, Makefile.* in its folder and below)
/// for relative paths that leave the folder (`../common/x.o`, `-I$(src)/../include`,
/// `include ../rules.mk`). With `given_root` (the user's --root), the driver must lie inside it
/// and that is the root (paths it does not hold are `unresolved`). Without, the root is the
/// nearest folder holding the driver and every such path that exists, at most
/// k_max_root_levels up; paths that do not exist or lie further up are listed in `unresolved`
/// and the driver's folder stays the root.
/// Errors: the driver is not a folder, or it is not inside `given_root`.
util::Expected<BuildRoot> find_build_root(const std::filesystem::path& driver, const std::filesystem::path& given_root = {});

/// One line each for the user: the root chosen and why, paths that could not be resolved.
std::vector<std::string> describe(const BuildRoot& root, const std::filesystem::path& driver);

/// The relative paths leaving the folder that one build file's text names, from their first
/// `../` (`-I$(src)/../include` -> `../include`).
std::vector<std::string> outside_references(const std::string& makefile_text);

} // namespace autodriver::gate
