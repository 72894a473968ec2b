#pragma once
// --compat: keep the old kernel building. Every line-level difference between the original and
// the ported file is wrapped in LINUX_VERSION_CODE guards, new code for the target and later,
// old code before it, in the style the drivers' own maintainers use. The guard's version is the
// boundary the compat KB knows for the change (maintainers' own blocks) when it lies between the
// two kernels, else the target's version.

#include "autodriver/propose/kb/kb_file.hpp"

#include <functional>
#include <string>
#include <vector>

namespace autodriver::loop {

/// "6.12.0" -> "KERNEL_VERSION(6, 12, 0)".
std::string kernel_version_macro(const std::string& version);

/// Where one guard's version came from.
struct GuardChoice {
  std::string version; ///< "6.4.0"
  std::string source;  ///< "target" or "kb:<entry id> (<package>)"
};

/// Chooses the guard of one changed hunk from its old and its new lines.
using GuardFor = std::function<GuardChoice(const std::vector<std::string>& old_lines, const std::vector<std::string>& new_lines)>;

/// One guard compat_merge wrote.
struct Guard {
  int line = 0; ///< 1-based line of the `#if` in the merged text
  GuardChoice choice;
};

/// The ported text with each changed hunk as `#if LINUX_VERSION_CODE >= KERNEL_VERSION(..)`
/// new `#else` old `#endif` (or a one-sided guard for pure additions/removals), and
/// <linux/version.h> included when the file has guards and lacks it. Identical texts are
/// returned unchanged. `guards`, when given, receives each guard written.
std::string compat_merge(const std::string& original, const std::string& ported, const GuardFor& guard_for,
                         std::vector<Guard>* guards = nullptr);

/// The same with one version for every hunk.
std::string compat_merge(const std::string& original, const std::string& ported, const std::string& version);

/// Guards from the compat KB: a hunk's guard is the boundary most KB entries give for the
/// identifiers the hunk removes or adds, when that boundary is above `after_code` (the old
/// kernel's LINUX_VERSION_CODE; 0 when unknown) and at most `to_code` (the target's), so that
/// both kernels still take their own branch; otherwise `fallback` (the target's version).
GuardFor kb_guards(const propose::Kb& kb, long after_code, long to_code, std::string fallback);

} // namespace autodriver::loop
