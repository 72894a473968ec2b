#pragma once
// A family of constants renamed together, learned from the kernel's own drivers: every
// `P1<S>` became `P2<S>` (Linux 6.10: INTEL_FAM6_ICELAKE_X -> INTEL_ICELAKE_X), often with a
// companion change in the same expressions (boot_cpu_data.x86_model -> .x86_vfm). Used by
// learned-rewrite for an undeclared constant no kernel file used itself.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/site_index.hpp"

#include <optional>
#include <set>
#include <string>

namespace autodriver::propose {

/// The rename of the whole family of `sym` in the driver (each member the target declares
/// under the new prefix), plus the companion token in the comparisons and `switch` heads that
/// use the family. `names` are the target's declared names. Nothing without a clear majority
/// (>= 3 kernel units, >= 2/3 of them agreeing on the new prefix).
std::optional<Edit> learn_family_rename(SiteIndex& idx, const PortContext& ctx, const std::string& sym,
                                        const std::set<std::string>& names);

} // namespace autodriver::propose
