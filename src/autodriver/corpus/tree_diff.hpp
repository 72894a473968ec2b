#pragma once
// The changed files between two git trees, found the way git itself does: subtrees with the same
// id are skipped without being read. libgit2's git_diff_tree_to_tree walks every entry of both
// trees (20 ms per commit on a 80k-file tree); this walks only the directories that changed,
// which is what makes a million-commit linux.git range affordable.

#include "autodriver/corpus/git_repo.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace autodriver::corpus::git {

/// One changed file. No rename detection: a moved file is a deletion plus an addition.
struct FileChange {
  enum class Status { added, deleted, modified };
  Status status = Status::modified;
  std::string path;
  git_oid old_id{}, new_id{}; ///< zero on the missing side
  std::uint32_t old_mode = 0, new_mode = 0;
};

/// Files that differ between `old_tree` and `new_tree` (either may be null: empty tree), in tree order.
util::Expected<std::vector<FileChange>> changed_files(git_repository* repo, const git_tree* old_tree, const git_tree* new_tree);

/// True when the change has no hunk left once whitespace is ignored (a whitespace- or mode-only
/// change). Binary files and files larger than `max_bytes` always count as changed.
util::Expected<bool> is_whitespace_only(git_repository* repo, const FileChange& change, std::uint64_t max_bytes);

/// The change as git-style unified patch text ("diff --git a/.. b/..", hunks; "Binary files differ"
/// for binary or files larger than `max_bytes`).
util::Expected<std::string> patch_text(git_repository* repo, const FileChange& change, std::uint64_t max_bytes);

} // namespace autodriver::corpus::git
