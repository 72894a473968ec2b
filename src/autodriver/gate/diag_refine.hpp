#pragma once
// Second look at gcc's diagnostics with the driver's sources at hand.

#include "autodriver/core/diagnostic.hpp"

#include <filesystem>
#include <vector>

namespace autodriver::gate {

/// A file-scope call of a macro the target no longer defines where it is included
/// (`MODULE_ALIAS_GENL_FAMILY(NAME);` after the macro moved headers) is parsed by gcc as an
/// old-style declaration: "expected declaration specifiers or '...' before string constant",
/// often reported inside the header defining the argument; `static DECLARE_MUTEX(lock);` gives
/// "type defaults to 'int' in declaration of 'DECLARE_MUTEX'". Such a top-level error whose
/// outermost expansion site in `tree` is `IDENT(...)`, with IDENT not expanded as a macro, becomes
/// an implicit declaration of IDENT at that site (the original text stays in `raw`).
void refine_with_sources(std::vector<core::Diagnostic>& diags, const std::filesystem::path& tree);

} // namespace autodriver::gate
