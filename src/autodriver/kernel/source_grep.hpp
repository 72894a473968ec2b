#pragma once
// grep over a kernel source tree, fast: a word index of the tree's C files (built once, kept in
// the cache) names the files a search can match; grep itself reads only those.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::kernel {

/// The folders of a kernel tree searched, named once for every search (x86 builds):
/// where its headers are,
inline const std::vector<std::string> k_header_dirs = {"include", "arch/x86/include"};
/// the user-space API halves of those,
inline const std::vector<std::string> k_uapi_header_dirs = {"include/uapi", "arch/x86/include/uapi"};
/// where its drivers are (how much drivers use a name),
inline const std::vector<std::string> k_driver_dirs = {"drivers", "sound"};
/// where the kernel's own users of a driver-facing API are (drivers and the subsystems that
/// implement such interfaces themselves),
inline const std::vector<std::string> k_user_dirs = {"drivers", "sound", "net", "fs"};
/// and all of its C code outside arch/ (where a function is defined).
inline const std::vector<std::string> k_code_dirs = {"drivers", "lib", "kernel", "net", "fs", "sound", "mm", "block"};

/// One `grep -r` over a source tree.
struct SourceGrep {
  std::vector<std::string> options;  ///< grep's options without -r ("-lw", "-nE", "-m", "1", ...)
  std::vector<std::string> includes; ///< --include globs on file names ("*.c", "*.h"); empty: "*.c" and "*.h"
  std::string pattern;               ///< given with -e
  std::vector<std::string> dirs;     ///< folders of the tree searched (missing ones are skipped); empty: the tree
  /// Prefilter (a promise about the pattern, never a second condition): every line the pattern
  /// matches holds each of `all_of` and one of `any_of` as whole words (maximal runs of letters,
  /// digits and `_` starting with a letter or `_`). Both empty: no prefilter, grep reads the tree.
  std::vector<std::string> all_of;
  std::vector<std::string> any_of;
  std::chrono::seconds timeout{120};
  std::size_t output_cap = 4 * 1024 * 1024;
};

/// What `grep -r OPTIONS --include=... -e PATTERN -- DIRS` run in `src` prints, one entry per
/// line (paths relative to `src`, `-H` form), the same lines in file path order. Empty when grep
/// fails or times out. For a tree in the cache (which never changes) the answer is kept for the process.
std::vector<std::string> grep_source(const std::filesystem::path& src, const SourceGrep& q);

/// The headers under include/ and arch/x86/include of `src` that name `word` as a whole word
/// (`grep -rlwE`), in path order.
std::vector<std::string> headers_naming(const std::filesystem::path& src, const std::string& word);

/// The C files under `dirs` of `src` that name `word` as a whole word (`grep -rlw`), in path order.
std::vector<std::string> c_files_naming(const std::filesystem::path& src, const std::string& word,
                                        const std::vector<std::string>& dirs,
                                        std::chrono::seconds timeout = std::chrono::seconds(60));

/// The word index of one tree: which C and header files hold a word.
class WordIndex {
public:
  /// Loads the index of `src` from the cache, else builds it (every *.c and *.h file, two
  /// threads; about 20 s for a kernel tree) and stores it: for trees in the cache and trees of
  /// 10000 files or more; smaller trees are indexed in memory. Kept for the process. Nothing
  /// when the tree has no C file.
  static std::shared_ptr<const WordIndex> of(const std::filesystem::path& src);

  /// Files (relative paths, sorted) that may hold `word` as a whole word: every file that does,
  /// and rarely another (words are hashed), plus the files too big to index.
  std::vector<std::string> files_with(std::string_view word) const;
  /// Indices of files_with's answer, without building the paths.
  std::vector<std::uint32_t> ids_with(std::string_view word) const;
  const std::string& path(std::uint32_t id) const { return m_files[id]; }
  std::size_t file_count() const { return m_files.size(); }

  /// True when `word` can be looked up (a C identifier).
  static bool indexable(std::string_view word);

  /// The index of the files listed (relative to `src`), built in memory (tests, small trees).
  static WordIndex build(const std::filesystem::path& src, const std::vector<std::string>& files);
  std::string serialize() const;
  static std::optional<WordIndex> parse(std::string_view bytes);

private:
  std::vector<std::string> m_files;
  std::vector<std::uint32_t> m_big;     ///< files not tokenized (over the size cap): always candidates
  std::vector<std::uint32_t> m_hashes;  ///< sorted word hashes
  std::vector<std::uint32_t> m_offsets; ///< m_hashes.size() + 1 offsets into m_postings
  std::vector<std::uint32_t> m_postings;
  bool m_kept = false;       ///< stored in the cache: the tree is taken not to change
  std::uint64_t m_stamp = 0; ///< of the names, sizes and times of the files indexed
};

} // namespace autodriver::kernel
