#pragma once
// Scratch space for gates: every build runs in a copy, the user's tree is never written.

#include "autodriver/util/expected.hpp"
#include "autodriver/util/files.hpp"

#include <string_view>

namespace autodriver::gate {

/// A fresh directory under $TMPDIR/autodriver, removed when the TempDir goes away
/// (AUTODRIVER_KEEP_SCRATCH=1 keeps it for debugging).
util::Expected<util::TempDir> make_scratch(std::string_view prefix);

} // namespace autodriver::gate
