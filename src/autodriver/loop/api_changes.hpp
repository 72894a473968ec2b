#pragma once
// Naming the kernel API change behind each build diagnostic of a port (apidiff's changes matched
// with the diagnostics' symbols), for the verdict's `changes` array.

#include "autodriver/core/api_change.hpp"
#include "autodriver/core/diagnostic.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace autodriver::loop {

/// True when `d` names `c`: the symbol (function, macro, `struct x`), a member together with its
/// struct, a callback's new or old type (incompatible-pointer errors), or a moved header it cannot find.
bool change_explains(const core::ApiChange& c, const core::Diagnostic& d);

/// [{"diagnostic": {file, line, kind, message}, "changes": [ApiChange...]}] for each error or warning
/// that at least one change explains, in diagnostic order.
nlohmann::json changes_for_diagnostics(const std::vector<core::ApiChange>& changes,
                                       const std::vector<core::Diagnostic>& diagnostics);

} // namespace autodriver::loop
