#pragma once
// The mechanisms that apply rule packs (rules.hpp), one file each; rule_pack.cpp dispatches on a
// rule's kind. Each takes its names from the rule, never from code.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/target_decls.hpp"

#include <optional>
#include <vector>

namespace autodriver::propose {

struct Rule;

/// kind remove-statements (statement_removal.cpp): one edit deleting every live statement of the
/// rule's forms, when a diagnostic names a rule symbol and the target lacks the first.
std::optional<Edit> propose_statement_removal(const std::vector<core::Diagnostic>& diags, const PortContext& ctx,
                                              const Rule& rule, std::optional<TargetIndex>& idx);

/// kind table-path (table_path.cpp): nested one-directory table registrations -> one path call.
std::vector<Edit> propose_table_path(const std::vector<core::Diagnostic>& diags, const PortContext& ctx, const Rule& rule);

} // namespace autodriver::propose
