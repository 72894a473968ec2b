#pragma once
// Loops that index a local array past its end (the kernel's stack protector panics when the
// function returns: "stack-protector: Kernel stack is corrupted in: f"). The array's declared size
// and the loop's bound are evaluated as integer constant expressions; macros are read from the
// driver's own files and, through a ValueOracle, from the target kernel's headers.

#include "autodriver/csrc/tokens.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::crash {

/// The value of an object-like macro (`#define ETH_ALEN 6`), or nullopt.
using ValueOracle = std::function<std::optional<long long>(const std::string& name)>;

/// Object-like macros of the target kernel's headers (include/, arch/x86/include), evaluated;
/// an empty oracle when `kernel_src` is empty.
ValueOracle value_oracle(const std::filesystem::path& kernel_src);

/// The integer value of tokens [first, last] (literals, + - * / % << >> and parentheses, macros
/// through `macro`), or nullopt.
std::optional<long long> evaluate(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last,
                                  const std::function<std::optional<long long>(const std::string&)>& macro, int depth = 0);

/// A loop of a function whose index runs past a local array it indexes.
struct LoopOverrun {
  std::string array;     ///< the local array
  std::string index;     ///< the loop variable
  int loop_line = 0;     ///< the `for`
  int array_line = 0;    ///< the array's declaration
  long long size = 0;    ///< its declared elements
  long long last = 0;    ///< the last index the loop reaches
  std::string op;        ///< the loop's comparison ("<=", "<")
  std::string bound;     ///< the bound as written ("3")
  std::string size_text; ///< the declared size as written ("ETH_ALEN / 2")
};

/// Every `for (i = A; i <= N; i++)` / `i < N` of `fn` whose body writes or reads `a[i]` for a
/// local array `T a[S]` with N >= S (`<=`) or N > S (`<`). `file_text` gives the driver file's
/// own macros; `kernel` the kernel's.
std::vector<LoopOverrun> loop_overruns(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& file_text,
                                       const ValueOracle& kernel);

} // namespace autodriver::crash
