#pragma once
// Token-level diff (LCS) between two token ranges: the hunks are before/after examples.

#include "autodriver/csrc/tokens.hpp"

#include <vector>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

struct TokenHunk {
  std::size_t a_first = 0, a_count = 0; ///< range in the first sequence
  std::size_t b_first = 0, b_count = 0; ///< range in the second sequence
};

/// Hunks of the LCS diff of a[a0..a1] and b[b0..b1] (inclusive ranges). Ranges whose parts
/// between their common head and tail are longer than `cap` tokens are not diffed (empty result).
std::vector<TokenHunk> diff_tokens(const std::vector<Token>& a, std::size_t a0, std::size_t a1, const std::vector<Token>& b,
                                   std::size_t b0, std::size_t b1, std::size_t cap = 4000);

} // namespace autodriver::propose
