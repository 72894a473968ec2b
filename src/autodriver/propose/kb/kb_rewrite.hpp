#pragma once
// Compat knowledge base, part 3: applying one learned change to a driver file's text
// (old-API form -> new-API form), for the compat-kb proposer and the collapsed-block benchmark.

#include "autodriver/propose/kb/kb_extract.hpp"

#include <string>
#include <string_view>

namespace autodriver::propose {

struct RewriteResult {
  std::string text; ///< the file after the rewrite (== input when sites == 0)
  int sites = 0;    ///< places rewritten
};

/// Rewrites every occurrence of `change.old_form` in `text`. Call forms bind $0.. to the call's
/// arguments (same arity only); renames touch whole identifiers in code (not strings/comments)
/// in the right syntactic place (member after `.`/`->`, callee before `(`); statement and
/// delete forms match the exact token sequence. Untouched bytes are kept as they were.
RewriteResult rewrite_text(std::string_view text, const KbChange& change);

} // namespace autodriver::propose
