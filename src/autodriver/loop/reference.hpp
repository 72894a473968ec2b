#pragma once
// Without --from: which older kernel's source the proposers learn from (a reference pair).

#include "autodriver/core/diagnostic.hpp"
#include "autodriver/core/kernel.hpp"
#include "autodriver/loop/port.hpp"
#include "autodriver/propose/proposer.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace autodriver::loop {

/// Without --from, the reference pair is the newest older kernel line with source; but a kernel
/// that already lacks what the driver misses (functions and identifiers the target no longer
/// declares) cannot show how the kernel's own drivers moved away from them. Down the chain of
/// Debian's kernel sources, the newest line that still declares the most of them becomes the
/// reference (at most three steps: each may download a source tree).
void choose_reference(const core::Kernel& to, const std::vector<core::Diagnostic>& errors, propose::PortContext& ctx,
                      PortReport& rep, const std::function<void(const std::string&)>& note,
                      const std::function<void(const std::string&, nlohmann::json)>& step);

} // namespace autodriver::loop
