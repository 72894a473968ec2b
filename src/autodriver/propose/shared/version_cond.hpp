#pragma once
// The one reader of `#if LINUX_VERSION_CODE op KERNEL_VERSION(a,b,c)` conditions (either side
// first, outer parentheses and trailing comments allowed), shared by the loop's reading of which
// lines a target compiles (apply.cpp: version_dead_lines) and the compat KB's reading of
// maintainers' version blocks (kb_extract.cpp).

#include "autodriver/propose/kb/kb_extract.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace autodriver::propose {

struct VersionCond {
  std::string op; ///< as if written `LINUX_VERSION_CODE op V`: <, <=, >, >=, == or !=
  KVersion v;
  bool eval(long code) const;
  bool eval(const KVersion& k) const { return eval(k.code()); }
  /// The branch under this condition is the newer kernels' side (>, >=).
  bool new_when_true() const { return op == ">=" || op == ">"; }
  /// The first version on the new side: V for >= and <, V+1 for > and <=.
  KVersion boundary() const { return op == ">" || op == "<=" ? KVersion{v.major, v.minor, v.patch + 1} : v; }
  /// An ordering (not == / !=): one side is older kernels, the other newer.
  bool ordered() const { return op != "==" && op != "!="; }
};

/// The condition of an `#if`/`#elif` (the text after the directive), nullopt when it is anything
/// but one version comparison (&&, ||, another macro, RHEL_RELEASE_CODE ...).
std::optional<VersionCond> parse_version_condition(std::string_view cond);

/// What an `#if`/`#elif` condition says for a kernel of LINUX_VERSION_CODE `code`, read in three
/// values: version comparisons (`KERNEL_VERSION(a,b,c)` or a number on the other side) are known,
/// anything else (another macro, `defined(X)`, RHEL_RELEASE_CODE) is unknown, and `!`, `&&`, `||`
/// and parentheses combine them as C would where the unknown cannot matter
/// (`LINUX_VERSION_CODE >= KERNEL_VERSION(5,19,0) || RHEL_RELEASE_CODE >= ...` is true on 6.1,
/// unknown on 5.10). nullopt: unknown.
std::optional<bool> version_condition_value(std::string_view cond, long code);

} // namespace autodriver::propose
