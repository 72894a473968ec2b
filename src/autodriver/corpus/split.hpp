#pragma once
// The deterministic dev/test split (docs/case-format.md): FNV-1a 64 of the unit path,
// even -> "dev", odd -> "test". Stable across runs, machines and corpus subsets.

#include "autodriver/util/strings.hpp"

#include <string>
#include <string_view>

namespace autodriver::corpus {

using util::fnv1a_64;

/// "dev" or "test" for a unit path such as "drivers/hwmon/w83793" or "dkms/v4l2loopback".
inline std::string split_of(std::string_view unit_path) { return (fnv1a_64(unit_path) & 1U) == 0 ? "dev" : "test"; }

} // namespace autodriver::corpus
