#pragma once
// The rules `corpus mine` applies to a kernel commit, kept free of libgit2 so they are unit-tested
// directly: which paths are core kernel and which are drivers, what makes a commit a case, and the
// trailers (Fixes:, Link:, ...) of a commit message. The table is documented in docs/case-format.md.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::corpus {

/// Bumped whenever the path table or the commit rules change, and recorded in every mined case.
inline constexpr int k_mine_rules_version = 1;

enum class PathClass { core, driver, other };
std::string_view to_string(PathClass c);

/// Where a path in a kernel tree belongs. First matching rule of the table wins; subsystem cores
/// inside drivers/ and sound/ (driver core, USB core, DRM core helpers, ALSA core, ...) are core.
PathClass classify_path(std::string_view path);

/// True for files that carry code (.c .h .S .rs); only these make a commit a case, while Kconfig,
/// Makefile and documentation changes ride along.
bool is_source_path(std::string_view path);

/// A driver file's unit: the directory that holds it ("drivers/net/ethernet/intel/e1000").
std::string driver_unit_of(std::string_view path);

/// What a non-merge commit is, for `corpus mine`. Stored as strings in the summary.
enum class CommitKind { mined, treewide, merge, root, whitespace_only, core_only, driver_only, unrelated };
std::string_view to_string(CommitKind k);

struct ChangedFile {
  std::string path;
  /// False when the file's change disappears once whitespace is ignored (or is a mode change only).
  bool content_changed = true;
};

/// Classifies a commit (with exactly one parent) by its changed files. `treewide_threshold`: a
/// commit touching more driver files than this is treewide instead of mined.
CommitKind classify_commit(std::span<const ChangedFile> files, std::size_t treewide_threshold);

struct Trailers {
  std::vector<std::string> fixes; ///< "<sha> (\"subject\")", as written
  std::vector<std::string> link;
  std::vector<std::string> closes;
  std::vector<std::string> signed_off_by;
  std::vector<std::string> reported_by;
};

/// Trailers of a commit message: `Key: value` lines in paragraphs (after the subject) where most
/// lines look like trailers, so a "Fixes:" in the middle of prose is not taken for one.
Trailers parse_trailers(std::string_view message);

/// The first line of a commit message, trimmed.
std::string subject_of(std::string_view message);

/// A path safe to write below a case directory: relative, no "..", no empty components.
bool is_safe_relative_path(std::string_view path);

} // namespace autodriver::corpus
