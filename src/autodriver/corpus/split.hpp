#pragma once
// The deterministic dev/test split (docs/case-format.md): FNV-1a 64 of the unit path,
// even -> "dev", odd -> "test". Stable across runs, machines and corpus subsets.

#include <cstdint>
#include <string>
#include <string_view>

namespace autodriver::corpus {

constexpr std::uint64_t fnv1a_64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// "dev" or "test" for a unit path such as "drivers/hwmon/w83793" or "dkms/v4l2loopback".
inline std::string split_of(std::string_view unit_path) { return (fnv1a_64(unit_path) & 1U) == 0 ? "dev" : "test"; }

} // namespace autodriver::corpus
