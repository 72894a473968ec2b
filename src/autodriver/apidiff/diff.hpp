#pragma once
// Classifying the differences between two kernels' declarations of the names a driver uses.

#include "autodriver/apidiff/decls.hpp"
#include "autodriver/core/api_change.hpp"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::apidiff {

/// 1 - Levenshtein distance / longer length: 1.0 for equal names, 0.0 for nothing in common.
double name_similarity(std::string_view a, std::string_view b);

/// Minimum name_similarity for a rename candidate.
inline constexpr double k_rename_similarity = 0.7;

/// Changes of every name in `used` between `from` and `to`, sorted by symbol. Members are compared
/// only where the driver names them (`used`). Renames are deliberately simple: a symbol missing in TO
/// is "renamed" to the most similar name (>= k_rename_similarity) that TO declares and FROM does not,
/// of the same kind and, for functions and function-like macros, with the same number of arguments;
/// a member to the most similar new member of the same type (>= 0.5).
std::vector<core::ApiChange> diff_declarations(const DeclSet& from, const DeclSet& to, const std::set<std::string>& used);

} // namespace autodriver::apidiff
