#pragma once
// How code tests what a function returned: `X = f(...);` followed by `if (IS_ERR(X))` or by
// `if (!X)` / `if (X == NULL)`. Read from the target kernel's own callers (which convention f
// follows there) and from a driver (which of its tests disagree), on csrc tokens.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"

#include <filesystem>
#include <optional>

#include <string>
#include <vector>

namespace autodriver::propose {

enum class ResultTest { is_err, null };

/// One test of a call's result in the statement right after the call.
struct ResultCheck {
  ResultTest test;
  std::string var;       ///< the tested expression, as written ("disk", "priv->regs")
  int line = 0;          ///< 1-based line of the test (all of it on this line)
  std::size_t begin = 0; ///< byte range of the test inside the condition (within `unlikely(...)`)
  std::size_t end = 0;
};

/// The tests of `name`'s result in `toks`: each `X = name(...);` (also `A = X = name(...);`)
/// whose next statement is `if (T)` (T possibly inside likely()/unlikely()) with T one of
/// `IS_ERR(X)`, `!X`, `!(X)`, `X == NULL`, `NULL == X`, written on one line.
std::vector<ResultCheck> result_checks(const std::vector<csrc::Token>& toks, const std::string& name);

/// The test of `var` in convention `t`: `IS_ERR(var)` or `!var`.
std::string result_test_text(ResultTest t, const std::string& var);

class TargetIndex;

/// A follow-up of edit `change_id`, which makes the driver call `target_name` where it called
/// `driver_name` (the same function with new arguments, or its replacement): the driver's tests of
/// the result turned into the convention the target's own callers of `target_name` follow (all but
/// a tenth of at least three tests), where the driver follows the other (blk_alloc_disk() and
/// tty_alloc_driver() return an ERR_PTR where NULL was returned). Nullopt when no test changes.
std::optional<Edit> result_follow_up(TargetIndex& idx, const std::filesystem::path& tree, const std::string& driver_name,
                                     const std::string& target_name, const std::string& change_id);

} // namespace autodriver::propose
