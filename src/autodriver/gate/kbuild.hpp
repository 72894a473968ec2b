#pragma once
// Running a driver build against a kernel: kbuild M= or a user's command with {kdir}/{kver}.

#include "autodriver/core/diagnostic.hpp"
#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"
#include "autodriver/util/subprocess.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::gate {

struct BuildRun {
  util::RunResult run;
  std::vector<core::Diagnostic> diagnostics;
  std::vector<std::filesystem::path> modules; ///< .ko files produced, relative to the tree
  std::string command;                        ///< rendered argv
};

struct BuildSpec {
  std::string build_cmd;                      ///< empty: kbuild M=
  std::vector<std::string> extra_make_args;   ///< e.g. C=2 CHECK=sparse
  std::chrono::seconds timeout{600};
  int jobs = 2;
};

/// Builds `tree` in place (the caller passes a scratch copy). "Could not run make" is an Error;
/// a failing build is a BuildRun with a non-zero exit.
util::Expected<BuildRun> build_tree(const core::Kernel& kernel, const std::filesystem::path& tree,
                                    const BuildSpec& spec);

/// Remove build products so a second build really recompiles.
void clean_build_products(const std::filesystem::path& tree);

/// True when the tree has what kbuild needs (Makefile or Kbuild).
bool has_kbuild_makefile(const std::filesystem::path& tree);

} // namespace autodriver::gate
