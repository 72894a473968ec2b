#pragma once
// Compat wrappers the kernel removed before the oldest kernel this machine has (6.1), as the
// kernel last defined them: general kernel-API knowledge stated once, as C, for drivers written
// against older kernels (inline-removed reads them like an old kernel's headers). Not keyed on
// any driver: each entry is the kernel's own definition, with the last version that had it.

#include <string_view>
#include <vector>

namespace autodriver::propose {

struct LegacyHeader {
  std::string_view origin; ///< "linux<=5.17:include/linux/pci-dma-compat.h"
  std::string_view text;   ///< the definitions, C
};

const std::vector<LegacyHeader>& legacy_headers();

/// An interface the kernel removed together with its purpose, so that its callers' statements
/// went too (not replaced): each statement form is deleted where a driver still has it.
struct LegacyRemoval {
  std::string_view origin;                  ///< "linux<=5.17:arch/x86/include/asm/uaccess.h"
  std::string_view why;                     ///< one sentence for the patch body
  std::vector<std::string_view> symbols;    ///< names whose diagnostics call for the removal
  std::vector<std::string_view> statements; ///< whole-line statement forms (ECMAScript regex)
};

const std::vector<LegacyRemoval>& legacy_removals();

} // namespace autodriver::propose
