#pragma once
// Running a driver build against a kernel: kbuild M= or a user's command with {kdir}/{kver}.

#include "autodriver/core/diagnostic.hpp"
#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"
#include "autodriver/util/subprocess.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace autodriver::gate {

struct BuildRun {
  util::RunResult run;
  std::vector<core::Diagnostic> diagnostics;
  std::vector<std::filesystem::path> modules; ///< .ko files produced, relative to the tree
  std::string command;                        ///< rendered argv
  int compiled = 0;                           ///< the driver's C files compiled (kbuild's "CC [M]" lines)
};

/// Where a driver tree is inside the build sandbox, whichever copy of it is built: kbuild's
/// command lines and dependency records name this path, so a copy of a built tree stays built.
inline constexpr const char* k_sandbox_tree = "/autodriver/tree";

struct BuildSpec {
  std::string build_cmd;                    ///< empty: kbuild M=
  std::vector<std::string> extra_make_args; ///< e.g. C=2 CHECK=sparse
  std::chrono::seconds timeout{600};
  int jobs = 0; ///< make -j; 0: the CPUs this process may use
  /// kbuild only: single objects to build ("sub/a.o", relative to the tree) instead of the
  /// modules (no link, no modpost); each inside `subdir`.
  std::vector<std::string> objects;
  /// The driver's folder inside the tree when the tree is a root holding more (a sibling folder
  /// its Makefile compiles, gate/build_root.hpp): kbuild's M=, the build command's cwd and its
  /// {tree}/{src}. Empty: the tree itself.
  std::filesystem::path subdir;
};

/// Builds `tree` in place (the caller passes a scratch copy). "Could not run make" is an Error;
/// a failing build is a BuildRun with a non-zero exit.
util::Expected<BuildRun> build_tree(const core::Kernel& kernel, const std::filesystem::path& tree, const BuildSpec& spec);

/// `word` with DKMS's `$name` and `${name}` of `names` replaced by their values (a dkms.conf MAKE
/// line given as --build-cmd).
std::string expand_dkms_names(std::string word, const std::vector<std::pair<std::string, std::string>>& names);

/// The last lines a build that failed before the compiler said anything printed (make's own
/// "Entering/Leaving directory" left out), newest last: why it stopped, in its own words.
std::string build_failure_tail(std::string_view out, std::size_t lines = 6);

/// Remove build products so a second build really recompiles.
void clean_build_products(const std::filesystem::path& tree);

/// True when the tree has what kbuild needs (Makefile or Kbuild).
bool has_kbuild_makefile(const std::filesystem::path& tree);

} // namespace autodriver::gate
