#pragma once
// Parse gcc / kbuild / modpost / ld output into structured diagnostics.

#include "autodriver/core/diagnostic.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace autodriver::gate {

struct ParseOptions {
  /// Absolute path of the driver tree as the build saw it; files inside it become relative.
  std::string tree_root;
  /// Where the build ran inside the tree (a driver under a root, gate/build_root.hpp): kbuild of
  /// 6.13 and later names files relative to M=, and those become relative to the tree too.
  std::string subdir;
  /// Tool name stored in the diagnostics ("gcc" or "sparse").
  std::string tool = "gcc";
};

/// Parses the merged stdout+stderr of a kbuild run. Notes attach to the diagnostic before them;
/// source excerpts and "In file included from" context go into `raw`.
std::vector<core::Diagnostic> parse_build_output(std::string_view text, const ParseOptions& options);

/// Classifies one gcc message (without location and severity) and extracts the symbols it names.
core::DiagKind classify_message(std::string_view message, std::vector<std::string>& symbols);

} // namespace autodriver::gate
