#pragma once
// --compat: keep the old kernel building. Every line-level difference between the original and
// the ported file is wrapped in LINUX_VERSION_CODE guards, new code for the target and later,
// old code before it, in the style the drivers' own maintainers use.

#include <string>

namespace autodriver::loop {

/// "6.12.0" -> "KERNEL_VERSION(6, 12, 0)".
std::string kernel_version_macro(const std::string& version);

/// The ported text with each changed hunk as `#if LINUX_VERSION_CODE >= KERNEL_VERSION(..)`
/// new `#else` old `#endif` (or a one-sided guard for pure additions/removals), and
/// <linux/version.h> included when the file has guards and lacks it. Identical texts are
/// returned unchanged.
std::string compat_merge(const std::string& original, const std::string& ported, const std::string& version);

} // namespace autodriver::loop
