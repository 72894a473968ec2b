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

/// A loop `for (i = A; i <= N; ...)` whose body indexes `x[i]` (any array: a member, a pointer)
/// while the same file's other loops over that array (the same last name before `[`) stop at
/// `j < N` with the same bound as written: the driver itself uses N as the array's length, and
/// this loop goes one past it (the out-of-bounds fixes' shape).
struct CountOverrun {
  std::string array; ///< the name indexed (`sq` of `vi->sq[i]`)
  std::string index;
  std::string bound;                           ///< as written, tokens joined by blanks
  std::size_t bound_first = 0, bound_last = 0; ///< its tokens
  int loop_line = 0;
  int agree_line = 0; ///< the first of the file's loops that stop before the bound
  int agree = 0;      ///< how many do
};

/// The loops of `fn` that qualify, those whose body holds `line` first; when `line` lies in no
/// loop of `fn` (an inlined callee's line), every one of its qualifying loops.
std::vector<CountOverrun> loops_past_count(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units,
                                           const csrc::Unit& fn, int line);

/// A local char array that a formatted write of the same function overruns: `sprintf(name,
/// "Intel ICH - %s", rec->suffix)` into `char name[16]` when the longest value the driver gives
/// that member (`.suffix = "MIC2 ADC"`) makes 21 bytes; `strcpy(name, "literal")` alike. Numbers
/// count at their narrowest (one digit: their values are not known), a `%s` of unknown length
/// makes no claim.
struct FormatOverrun {
  std::string function;  ///< the function declaring the array
  std::string array;     ///< "name"
  std::string writer;    ///< "sprintf"
  std::string size_text; ///< the declared size as written ("16")
  int array_line = 0, write_line = 0;
  long long size = 0; ///< declared bytes
  long long need = 0; ///< bytes the longest write makes, its NUL included
};

/// The overruns in `fn` and in the functions of the same file it calls, three calls deep (gcc
/// inlines them into its frame, so the stack protector names `fn`). `driver` gives the members'
/// string values; `file_text` and `kernel` the macros of the sizes.
std::vector<FormatOverrun> format_overruns(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units,
                                           const std::string& fn, const std::string& file_text, const ValueOracle& kernel,
                                           const std::vector<std::vector<csrc::Token>>& driver);

} // namespace autodriver::crash
