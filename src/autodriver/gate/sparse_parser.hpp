#pragma once
// Telling sparse's findings apart from gcc's, comparing them with a baseline tree, and the one
// sparse build both the sparse gate and the port loop's reviewer run.

#include "autodriver/core/diagnostic.hpp"
#include "autodriver/core/kernel.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>

#include <string>
#include <string_view>
#include <vector>

namespace autodriver::gate {

/// From the diagnostics of a C=2 CHECK=sparse build, keep those that the plain build (gcc only)
/// did not print: what remains is sparse's. Marks them tool="sparse", kind=sparse.
std::vector<core::Diagnostic> sparse_only(const std::vector<core::Diagnostic>& with_sparse,
                                          const std::vector<core::Diagnostic>& gcc_only);

/// sparse's findings on `tree` as built with `spec` (C=2 CHECK=sparse added: the checker runs on
/// every source, so on a built tree the output is almost only sparse's), minus the lines of `gcc`,
/// the plain build's diagnostics. Errors: the build's own; `interrupted`; `timeout`; `config` when
/// sparse is not installed (the messages say so in words). `command`: the build command run, when wanted.
util::Expected<std::vector<core::Diagnostic>> sparse_build(const core::Kernel& kernel, const std::filesystem::path& tree,
                                                           BuildSpec spec, const std::vector<core::Diagnostic>& gcc,
                                                           std::string* command = nullptr);

/// Findings of `current` that `baseline` does not have, compared by file and message (line numbers
/// move when code is edited), as a multiset.
std::vector<core::Diagnostic> new_findings(const std::vector<core::Diagnostic>& current,
                                           const std::vector<core::Diagnostic>& baseline);

} // namespace autodriver::gate
