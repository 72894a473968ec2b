#pragma once
// Calls merged into one: the kernel replaced a removed function's call and the calls beside it on
// the same object by one new call (6.5: `__skb_frag_set_page(f, p); skb_frag_off_set(f, o);
// skb_frag_size_set(f, s);` -> `skb_frag_fill_page_desc(f, p, o, s);`). Learned from the kernel's
// own functions that changed that way; applied where a driver has those calls next to each other.

#include "autodriver/propose/shared/site_index.hpp"

#include <string>
#include <utility>
#include <vector>

namespace autodriver::propose {

struct MergeRule {
  /// The old calls (callee, arity) that share their first argument; calls[0] is the removed one.
  std::vector<std::pair<std::string, std::size_t>> calls;
  std::string callee; ///< the new function
  /// Its arguments after the shared first one: "$k.i" (argument i of calls[k]) or a literal.
  std::vector<std::string> args;
  std::string key() const;
};

struct LearnedMerge {
  MergeRule rule;
  int count = 0;                  ///< kernel functions that changed this way
  std::vector<std::string> files; ///< a few of them
};

/// Merge rules for the removed function `sym`, most supported first.
std::vector<LearnedMerge> learn_merges(SiteIndex& idx, const std::string& sym);

/// The rule as SmPL: one rule per order of the old calls (they must be adjacent statements).
std::string merge_smpl(const MergeRule& r);

} // namespace autodriver::propose
