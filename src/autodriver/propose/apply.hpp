#pragma once
// Applying an Edit to a tree: SmPL through spatch, line edits, identifier renames.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::propose {

struct ApplyResult {
  std::vector<std::string> changed_files; ///< relative to the tree
  std::string tool_output;                ///< spatch's messages, if any
};

/// Applies `edit` in place to `tree`. An edit that changes nothing is not an error (empty
/// changed_files); spatch failing to run or timing out is.
util::Expected<ApplyResult> apply_edit(const Edit& edit, const std::filesystem::path& tree,
                                       const std::filesystem::path& scratch);

/// C sources and headers of a tree (relative paths), the files spatch is run on.
std::vector<std::string> c_files(const std::filesystem::path& tree);

} // namespace autodriver::propose
