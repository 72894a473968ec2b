#pragma once
// The driver's C files read once for the analyses that look across the whole driver (a tail
// call's lost frame, a lock another function leaves held), and the kernel's own driver functions
// that the analyses learn from (which calls release, lock, undo).

#include "autodriver/csrc/tokens.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace autodriver::crash {

struct DriverFile {
  std::string rel; ///< relative to the tree
  std::vector<csrc::Token> toks;
  std::vector<csrc::Unit> units;
};

/// The first function definition of `units` named `name`, or nullptr.
const csrc::Unit* function_named(const std::vector<csrc::Unit>& units, const std::string& name);

/// The index of the statement of `sts` (csrc::block_statements) whose lines hold `line`; sts.size()
/// when none does.
std::size_t statement_holding(const std::vector<csrc::Token>& t, const std::vector<std::pair<std::size_t, std::size_t>>& sts,
                              int line);

/// The `{` of the innermost statement block of `fn` (its body, or a block nested in it: `if (dev)
/// { ... }`) one of whose own statements holds `line`; fn.body when no nested block does.
std::size_t block_holding(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line);

/// The names of a function definition's parameters in order (`adapter` of `f(struct a *adapter)`),
/// "" for one without a name (`void`, a function pointer).
std::vector<std::string> parameter_names(const std::vector<csrc::Token>& t, const csrc::Unit& fn);

/// Every .c file under `tree` (or every file with `extension`: ".h"), in path order.
std::vector<DriverFile> read_driver(const std::filesystem::path& tree, const std::string& extension = ".c");

/// Each function of the target kernel's driver files naming `word` (kernel::k_driver_dirs, at most
/// 1500 files in path order) given to `fn` with its file's tokens; files without `also` (when
/// given) are skipped. Nothing when `word` is not an identifier or `kernel_src` is empty.
void for_each_kernel_function(const std::filesystem::path& kernel_src, const std::string& word,
                              const std::function<void(const std::vector<csrc::Token>&, const csrc::Unit&)>& fn,
                              const std::string& also = "");

/// Each of the target kernel's driver files naming `word` (as for_each_kernel_function) given to
/// `fn` with its tokens and top-level units.
void for_each_kernel_file(const std::filesystem::path& kernel_src, const std::string& word,
                          const std::function<void(const std::vector<csrc::Token>&, const std::vector<csrc::Unit>&)>& fn);

} // namespace autodriver::crash
