#pragma once
// Where a symbol is used in a kernel source tree, and the same file in another tree:
// the "before/after" pairs the learned rewrites come from. Leave-one-out is enforced here.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

struct SourceFile {
  std::string rel; ///< path relative to the kernel tree
  std::string text;
  std::vector<Token> tokens;
  std::vector<Unit> units;
  const Unit* unit(const std::string& name) const;
};

struct FilePair {
  std::shared_ptr<const SourceFile> before;
  std::shared_ptr<const SourceFile> after;
};

class SiteIndex {
public:
  SiteIndex(std::filesystem::path old_src, std::filesystem::path new_src, std::vector<std::string> leave_out,
            std::vector<std::filesystem::path> driver_files);

  enum class Pairs { all, changed };
  enum class Files { c, c_and_h }; ///< which files of the kernel trees are searched
  /// Kernel .c files of the old tree that use `word` (whole words; "struct fd" works too), paired
  /// with the new tree's file of the same path (pairs whose file vanished are skipped). At most
  /// `limit` pairs, in path order; `Pairs::changed` skips files the new tree has unchanged, so a
  /// common word still reaches the files that changed.
  std::vector<FilePair> pairs_using(const std::string& word, std::size_t limit = 80, Pairs which = Pairs::all,
                                    Files files = Files::c);

  /// Files of `tree` (old or new) using `word`, relative paths, capped.
  std::vector<std::string> files_using(const std::filesystem::path& tree, const std::string& word, std::size_t limit = 200,
                                       Files files = Files::c);

  std::shared_ptr<const SourceFile> load(const std::filesystem::path& tree, const std::string& rel);

  const std::filesystem::path& old_src() const { return m_old; }
  const std::filesystem::path& new_src() const { return m_new; }

  /// True when rel is one of the left-out paths or looks like a copy of the driver's own files.
  bool left_out(const std::string& rel, const std::filesystem::path& tree);

private:
  std::filesystem::path m_old, m_new;
  std::vector<std::string> m_leave_out;
  std::vector<std::pair<std::string, std::string>> m_driver_files; // basename, text
  std::map<std::string, std::shared_ptr<const SourceFile>> m_cache;
  std::map<std::string, std::vector<std::string>> m_grep_cache; ///< tree + word -> files_using result
  std::map<std::string, bool> m_changed;                        ///< rel -> differs between the trees
};

/// A proposer's SiteIndex kept across its calls in one port (same trees, leave-out and driver), so
/// its grep, file and comparison caches carry over iterations instead of being rebuilt each time.
class SiteIndexCache {
public:
  SiteIndex& get(const PortContext& ctx);

private:
  std::string m_key;
  std::unique_ptr<SiteIndex> m_index;
};

} // namespace autodriver::propose
