#pragma once
// Telling sparse's findings apart from gcc's, and comparing them with a baseline tree.

#include "autodriver/core/diagnostic.hpp"

#include <string_view>
#include <vector>

namespace autodriver::gate {

/// From the diagnostics of a C=2 CHECK=sparse build, keep those that the plain build (gcc only)
/// did not print: what remains is sparse's. Marks them tool="sparse", kind=sparse.
std::vector<core::Diagnostic> sparse_only(const std::vector<core::Diagnostic>& with_sparse,
                                          const std::vector<core::Diagnostic>& gcc_only);

/// Findings of `current` that `baseline` does not have, compared by file and message (line numbers
/// move when code is edited), as a multiset.
std::vector<core::Diagnostic> new_findings(const std::vector<core::Diagnostic>& current,
                                           const std::vector<core::Diagnostic>& baseline);

} // namespace autodriver::gate
