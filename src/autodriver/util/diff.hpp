#pragma once
// Unified diffs of one file between two trees (diff(1), bounded), and their hunks.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::util {

/// `diff -u` of `file` under `a_root` and under `b_root`, labelled a/FILE and b/FILE; empty when
/// they are the same or diff could not run. A file missing on one side diffs against nothing.
std::string unified_diff(const std::filesystem::path& a_root, const std::filesystem::path& b_root, const std::string& file);

/// The hunks of a unified diff ("@@ ..." up to the next one), headers dropped.
std::vector<std::string> diff_hunks(std::string_view diff);

} // namespace autodriver::util
