#pragma once
// Collapsed-block cases (issue 5): a maintainer's `#if LINUX_VERSION_CODE` block collapsed to
// the branch an old kernel compiles, so the driver holds only the old-API form; the branch a
// newer kernel compiles is the expected answer of a port.

#include "autodriver/propose/kb/kb_extract.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace autodriver::propose {

/// True when `block` is the change between kernels `from` and `to`: its old branch is the one
/// `from` compiles and its new branch the one `to` compiles, and the two differ.
bool block_spans(const VersionBlock& block, const KVersion& from, const KVersion& to);

/// True when `block` records an API change at or before `target` whose new branch is the one
/// `target` compiles (boundary <= target < new_until) and whose old branch differs: the old branch
/// is then the form of the kernels just below the boundary (the next branch down an `#elif`
/// chain), which a port to `target` must turn into the new one. No older kernel is needed.
bool block_changed_by(const VersionBlock& block, const KVersion& target);

/// A case of schema 1 (written before cases listed every block with its context): the whole file
/// text around its one block, as `kb compare` reads it.
struct CollapsedCase {
  std::string before; ///< the file text before the block
  std::string after;  ///< the file text after the `#endif`
};

/// Whether `ported` holds the maintainers' new branch where the block was: the token sequence
/// (last tokens before the block, new branch, first tokens after it) occurs in `ported`.
/// Comparison is on C tokens, so whitespace and comments do not count.
bool matches_new_branch(std::string_view ported, const CollapsedCase& c, std::string_view new_code);

/// Tokens of context on each side of a block's new branch that a comparison requires.
inline constexpr std::size_t k_context_tokens = 12;

/// The C tokens before and after one block's new branch in the expected file.
struct BlockContext {
  std::vector<std::string> before; ///< the last k_context_tokens before the branch
  std::vector<std::string> after;  ///< the first k_context_tokens after it
};

/// Several blocks of one file collapsed together (one case holds every block of a boundary).
struct CollapsedFile {
  std::string old_text;              ///< every block replaced by its old branch
  std::string expected_text;         ///< every block replaced by its new branch
  std::vector<BlockContext> context; ///< per block, in the order given, within expected_text
};

/// Replaces every block of `blocks` in `text` with each branch; a block overlapping an earlier
/// one (by `#if` line) is left as it is and gets an empty context.
CollapsedFile collapse_blocks(std::string_view text, const std::vector<VersionBlock>& blocks);

/// Whether `ported` holds the token sequence before-context, `new_code`, after-context.
bool matches_in_context(std::string_view ported, const BlockContext& context, std::string_view new_code);

} // namespace autodriver::propose
