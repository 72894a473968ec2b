#pragma once
// Locks left held (issue 18: missing unlock). Which calls take something a function must give
// back before it returns is learned from the kernel's own drivers: `acquire(x, ...)` is scoped
// when, in nearly every function of the target kernel's drivers that calls it, one and the same
// call `release(x, ...)` (same first argument) follows later in that function (mutex_lock and
// mutex_unlock, spin_lock_irqsave and spin_unlock_irqrestore). A driver function with an exit
// (return, goto to a label that does not release, or its end) reached after the acquire and
// without an unconditional release on the way leaves the lock held: the next taker blocks for
// ever (a hung task) or spins (a soft lockup).

#include "autodriver/csrc/tokens.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace autodriver::crash {

/// How the target kernel's drivers end, within one function, what `acquire(x, ...)` begins.
struct ScopedPair {
  std::string acquire;
  std::string release; ///< the call most often made after it in the same function with the same first argument
  int calls = 0;       ///< acquire calls read in function bodies (with an argument)
  int released = 0;    ///< of those, followed in the same function by release(x, ...)
  int same_args = 0;   ///< of those, release called with the acquire's whole argument list
  /// At least 8 calls read, and at least 90 % of them released in the same function.
  bool scoped() const { return !release.empty() && calls >= 8 && released * 10 >= calls * 9; }
  /// The release takes all the acquire's arguments (spin_unlock_irqrestore(&l, flags)), not only the first.
  bool release_takes_all_args() const { return same_args * 2 > released; }
};

/// Read from the C files under drivers/ and sound/ of `kernel_src` that name `acquire` (at most
/// 1500 of them, in path order); kept for the process.
ScopedPair scoped_pair(const std::filesystem::path& kernel_src, const std::string& acquire);

using PairOracle = std::function<ScopedPair(const std::string& acquire)>;

/// scoped_pair over `kernel_src`; an empty oracle when it is empty.
PairOracle pair_oracle(const std::filesystem::path& kernel_src);

/// How the target kernel's drivers undo `acquire(x, ...)` on their error paths (missing cleanup on
/// probe failure): `release` is the call with the same first argument most often made after a
/// label that follows the acquire in the same function (goto-style cleanup: `err_dereg:
/// misc_deregister(&dev);`) and before the label the acquire's own failure jumps to (the
/// cleanup of what came before it); `calls` counts the acquires with such cleanup code after
/// them, `released` those whose cleanup makes the call.
ScopedPair undo_pair(const std::filesystem::path& kernel_src, const std::string& acquire);
/// At least 8 acquires undone so, and at least half of those with cleanup code after them.
inline bool undone(const ScopedPair& p) { return !p.release.empty() && p.released >= 8 && p.released * 2 >= p.calls; }
/// undo_pair over `kernel_src`; an empty oracle when it is empty.
PairOracle undo_oracle(const std::filesystem::path& kernel_src);

/// How often the target kernel's drivers call `callee` while holding a lock of `pair` (between
/// `acquire(x, ...)` and the next `release(x, ...)` of the same function).
struct UnderLock {
  std::string callee;
  int calls = 0; ///< calls read in function bodies that take such a lock
  int under = 0; ///< of those, made while it is held
  /// At least 8 calls read and at most 2 % of them under the lock: the kernel does not call it
  /// with such a lock held (free_irq() under spin_lock_irqsave()).
  bool never_under() const { return calls >= 8 && under * 50 <= calls; }
};
UnderLock under_lock(const std::filesystem::path& kernel_src, const ScopedPair& pair, const std::string& callee);

/// The same lock named in two functions: the same text (`&mll.lock`), or the same member path
/// after different base variables (`&priv->lock`, `&p->lock`).
bool same_lock(const std::string& a, const std::string& b);

/// The lock a call names: its first argument; empty for a lock taken without one (rtnl_lock(),
/// console_lock(): one lock for all its callers).
std::string lock_arg(const csrc::Call& c);

/// An exit of a function taken with a scoped acquire's lock still held.
struct HeldExit {
  std::string lock;         ///< the acquire's first argument as the source writes it: "&mll.lock"
  std::string release_call; ///< what releases it here, as C: "mutex_unlock(&mll.lock)"
  int acquire_line = 0;
  std::size_t exit_first = 0; ///< the `return` / `goto` token, or the body's closing brace
  std::size_t exit_last = 0;  ///< its ';' (the brace itself for the end of the body)
  int exit_line = 0;
  bool released_elsewhere = false; ///< another exit of the function releases the lock
};

/// The exits of `fn` that leave `pair.acquire(...)`'s lock held, each exit once, in source order.
/// An exit inside `if (acquire(...)) ...` (the acquire failed) does not count, nor a goto to a
/// label before the acquire. `errors_only`: only the exits that fail (not `return 0;`, not the
/// body's last statement or end), for an acquire undone only when something after it fails.
std::vector<HeldExit> held_exits(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const ScopedPair& pair,
                                 bool errors_only = false);

/// The statement starting at token `first` is the unbraced body of `if (...)`, `else`, `for`,
/// `while` or `do`: the index of the `)` or keyword before it, else npos.
std::size_t unbraced_control(const std::vector<csrc::Token>& t, std::size_t first);

} // namespace autodriver::crash
