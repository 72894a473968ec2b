#pragma once
// Applying an Edit to a tree: SmPL through spatch, line edits, identifier renames.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

struct ApplyResult {
  std::vector<std::string> changed_files; ///< relative to the tree
  std::string tool_output;                ///< spatch's messages, if any
};

struct ApplyOptions {
  /// The target's LINUX_VERSION_CODE; when set, lines in `#if LINUX_VERSION_CODE ...` branches that
  /// version rules out are hidden from the edit (an old-kernel branch keeps its old API).
  long version_code = 0;
  /// When set, the C files the build compiles: an edit's rules (SmPL, call rewrites, renames) read
  /// these and the headers, not C files the configuration leaves out (another platform's), whose
  /// changes no build could check. Line edits apply where they point.
  std::optional<std::set<std::string>> compiled;
};

/// Applies `edit` in place to `tree`, all or nothing. An edit that changes nothing is not an error
/// (empty changed_files); spatch failing to run or timing out is.
util::Expected<ApplyResult> apply_edit(const Edit& edit, const std::filesystem::path& tree, const std::filesystem::path& scratch,
                                       const ApplyOptions& options = {});

/// For each line of `text`: true inside a branch of `#if`/`#elif`/`#else` that LINUX_VERSION_CODE
/// == `version_code` rules out (only conditions that are one LINUX_VERSION_CODE comparison with
/// KERNEL_VERSION(a, b, c) are decided; anything else counts as live).
std::vector<bool> version_dead_lines(const std::string& text, long version_code);

/// LINUX_VERSION_CODE of a kernel build dir (include/generated/uapi/linux/version.h), 0 if unknown.
long linux_version_code(const std::filesystem::path& build_dir);

/// C sources and headers of a tree (relative paths), the files spatch is run on.
std::vector<std::string> c_files(const std::filesystem::path& tree);

/// Of `files` (relative to `tree`), those spatch must read for `smpl`: a file naming none of the
/// identifiers some rule removes cannot change (all of them when a rule removes no such name).
std::vector<std::string> files_for_smpl(const std::string& smpl, const std::filesystem::path& tree,
                                        const std::vector<std::string>& files);

/// The tree's C sources and headers whose text contains `word`: (relative path, text).
std::vector<std::pair<std::string, std::string>> sources_mentioning(const std::filesystem::path& tree, const std::string& word);

/// `text` with whole-line edits of it applied, bottom up (lines as the edits say: no relocation;
/// an edit with a negative line is skipped).
std::string apply_line_edits(const std::string& text, std::vector<TextEdit> edits);

/// The lines of `before` that differ from `after` (common leading and trailing lines kept), as
/// one whole-line TextEdit turning `before` into `after`; nullopt when they are equal.
std::optional<TextEdit> changed_lines_edit(const std::string& file, const std::string& before, const std::string& after);

/// The bytes of `text` from `first`'s start to `last`'s end replaced by `replacement`, as one
/// whole-line TextEdit over the lines the two tokens span (the rest of those lines kept).
TextEdit token_span_edit(const std::string& file, const std::string& text, const Token& first, const Token& last,
                         const std::string& replacement);

} // namespace autodriver::propose
