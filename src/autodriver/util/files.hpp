#pragma once
// File-system helpers: read/write whole files, atomic writes, scratch directories, copies.

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::util {

namespace fs = std::filesystem;

Expected<std::string> read_file(const fs::path& path);
/// Write via a temporary file in the same directory, then rename (never a half-written file).
Expected<void> write_file_atomic(const fs::path& path, std::string_view content);
Expected<void> write_file(const fs::path& path, std::string_view content);

/// Recursive copy that skips build products (*.o, *.ko, .*.cmd, ...) when `skip_build_products`.
enum class SkipBuildProducts { yes, no };
/// Copies one regular file (mode kept, contents replaced if `to` exists); errors name the real
/// cause (a full disk says so).
Expected<void> copy_file(const fs::path& from, const fs::path& to);
/// Timestamps are kept (a copy of a built tree stays built for make), a future one clamped to now.
Expected<void> copy_tree(const fs::path& from, const fs::path& to, SkipBuildProducts skip);
/// A new tree `dst` with the sources of `sources` on top of the build of `built` (a tree kbuild
/// built, objects, .cmd files and timestamps kept): files whose content differs from `built`'s,
/// or that it lacks, are written now; its files that `sources` lacks go. kbuild then recompiles
/// only what differs and what depends on it. Without `built`: a plain copy of the sources.
Expected<void> stage_tree(const fs::path& sources, const fs::path& built, const fs::path& dst);

/// A fresh directory under `parent` (created), removed on destruction unless kept.
class TempDir {
public:
  static Expected<TempDir> create(const fs::path& parent, std::string_view prefix);
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept; ///< removes this one's directory first (unless kept)
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const fs::path& path() const { return m_path; }
  void keep() { m_keep = true; }

private:
  explicit TempDir(fs::path p) : m_path(std::move(p)) {}
  fs::path m_path;
  bool m_keep = false;
};

/// $TMPDIR or /tmp, plus "autodriver-<uid>". A TempDir made directly under it carries its owner's
/// pid and start time; the first one a process makes removes those whose owner is gone.
fs::path scratch_root();
/// Removes the folders under `root` whose owner stamp names a process that no longer runs;
/// returns how many.
std::size_t remove_orphaned_scratch(const fs::path& root);

/// A walked entry's kind that never throws: a symlink loop or a dangling link (a driver tree is
/// data) is neither a directory nor a regular file; entry_is_link does not follow the link.
bool entry_is_dir(const fs::directory_entry& e);
bool entry_is_file(const fs::directory_entry& e);
bool entry_is_link(const fs::directory_entry& e);

/// A driver tree holding a symbolic link that loops (ELOOP) is bad input: a config error naming
/// the first such link, found walking without following links.
Expected<void> refuse_symlink_loop(const fs::path& root);

/// All regular files under `root`, relative paths, sorted.
std::vector<fs::path> list_files(const fs::path& root);

} // namespace autodriver::util
