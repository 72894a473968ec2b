#pragma once
// Repairs for the crash classes a hypothesis pins down (issue 18 item 3, first classes), as new
// texts of the driver's file; whether one repairs anything is for reproduction to say
// (loop/crash_repair: rebuild, boot, run the module again N times).
//   use-before-set    the assignment (with the NULL/IS_ERR test right after it) moves before the
//                     statement that dereferenced the variable too early;
//   use-after-release the release moves after the last statement that still uses the object;
//   double-release    the second of two identical calls on one path (the one that crashed) goes;
//   missing-unlock    the release the kernel pairs with the acquire goes before the exit that
//                     leaves the lock held (an unbraced `if (...) return x;` gets braces);
//   unchecked-result  a test of the call's result goes after the assignment, returning what the
//                     target kernel's own drivers return when the same function fails.

#include "autodriver/crash/localize.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::crash {

struct RepairEdit {
  std::string kind;        ///< the hypothesis kind it answers
  std::string file;        ///< relative to the driver tree
  std::string new_text;    ///< the file's whole new text
  std::string description; ///< one sentence: what moved or was added, and why
  std::vector<std::string> evidence;
  /// Places of e.file the edit changes beyond the hypothesis's own (line, function): the other
  /// releases of a managed object, in probe's error path.
  std::vector<std::pair<int, std::string>> also;
};

/// How the target kernel's own drivers handle a failed `callee(...)`: the most common
/// `return -EXXX;` right after a `if (!x)` / `if (IS_ERR(x))` test of its result, and whether
/// they test IS_ERR (an error pointer) rather than NULL. Empty value when none was found.
struct FailureHandling {
  std::string error; ///< "-ENOMEM"
  bool is_err = false;
  int seen = 0; ///< the kernel's tests this rests on
};
FailureHandling failure_handling(const std::filesystem::path& kernel_src, const std::string& callee);

/// Candidate repairs for the hypotheses, most specific first; `kernel_src` (the target kernel's
/// source, may be empty) is where unchecked-result learns the value to return.
std::vector<RepairEdit> propose_repairs(const std::vector<Hypothesis>& hyps, const std::filesystem::path& tree,
                                        const std::filesystem::path& kernel_src);

} // namespace autodriver::crash
