#pragma once
// A driver's own feature switches: `#ifdef HAVE_PROC_CREATE` ... `#else` ... `#endif` blocks in
// which the maintainers wrote two implementations, one per state of a macro of their own
// (out-of-tree drivers define such macros from LINUX_VERSION_CODE tests or their configure step).
// Read by the feature-switch proposer (define the macro so the other implementation compiles)
// and by the integrity gate (that `#define` is explained by the diagnostics in the branch it
// switches off). Driver sources are data: this only reads their preprocessor lines.

#include <string>
#include <string_view>
#include <vector>

namespace autodriver::gate {

/// One test of one macro: `#ifdef M`, `#ifndef M`, `#if [!]defined(M)`, `#if [!]M`, with no
/// `#elif` (an `#else` is optional).
struct SwitchTest {
  std::string macro;
  bool value_test = false;                        ///< `#if M` / `#if !M` (the macro needs a value)
  bool first_if_defined = true;                   ///< the first branch is the one compiled when M is defined (and non-zero)
  int if_line = 0, else_line = 0, endif_line = 0; ///< 1-based
  int depth = 0;                                  ///< enclosing conditionals, an include guard not counted
  bool has_else = false;
};

/// Every switch test of a file.
std::vector<SwitchTest> switch_tests(std::string_view text);

/// The tests (of driver-local candidates: not CONFIG_*, not reserved `__x`) whose branch compiled
/// while the macro is undefined contains `line`. A one-sided test (`#ifndef M` fallback code, no
/// `#else`) counts only when the file also tests M with two branches, or one-sidedly the other
/// way round: then M is a switch between the maintainers' implementations, not an option.
std::vector<const SwitchTest*> switches_off_at(const std::vector<SwitchTest>& tests, int line);

/// `#define M` / `#define M 1` lines: the macro name, else empty.
std::string defined_switch(std::string_view line);

} // namespace autodriver::gate
