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

} // namespace autodriver::propose
