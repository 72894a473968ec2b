#pragma once
// A model's answer is data (issue 19 item 3): the edits it proposes are read out of its text as
// unified diffs (fenced ```diff blocks, or a bare diff) or SEARCH/REPLACE blocks, and applied to
// a scratch copy only after checks no text in the answer (nor in the driver's comments or the
// kernel's text the model read) can widen: every path relative, inside the tree and one of the
// files the caller lets it edit; every SEARCH found exactly once; a diff applied with GNU patch
// after a dry run. What fails is said in one line, to be fed back to the model once.

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace autodriver::llm {

/// One SEARCH/REPLACE block:
///   path/to/file.c
///   <<<<<<< SEARCH
///   the exact lines to find
///   =======
///   the lines to put there
///   >>>>>>> REPLACE
struct SearchReplace {
  std::string path;
  std::string search;
  std::string replace;
};

struct Answer {
  std::vector<SearchReplace> blocks;
  std::vector<std::string> diffs; ///< unified diffs, each as the model wrote it
  bool empty() const { return blocks.empty() && diffs.empty(); }
};

/// The edits in a model's text; a parse error when it holds none or a block is malformed.
util::Expected<Answer> parse_answer(const std::string& text);

/// The files a unified diff changes (its `+++` paths with a/ b/ prefixes removed; `---` for a deletion).
std::vector<std::string> diff_paths(const std::string& diff);

/// A path an answer may touch: relative, no `..`, no absolute or home path, inside `tree`
/// without leaving it through a symbolic link, and one of `editable` (relative to `tree`).
bool editable_path(const std::filesystem::path& tree, const std::string& path, const std::set<std::string>& editable);

/// Applies the answer to `tree` (a scratch copy: it is written): the files changed, or the first
/// reason it cannot be applied (a path outside what may be edited, a SEARCH found 0 or 2+ times,
/// a diff that does not apply). Nothing is written unless every edit applies.
util::Expected<std::vector<std::string>> apply_answer(const Answer& a, const std::filesystem::path& tree,
                                                      const std::set<std::string>& editable);

} // namespace autodriver::llm
