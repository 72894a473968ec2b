#pragma once
// Where in the driver a crash points, and what may have happened there: the driver's frames of a
// report ranked (faulting instruction, call trace, KASAN's free and allocation stacks), and per
// place a short statement grounded in the trace and the driver's source ("p is set to NULL at
// x.c:17 and dereferenced at x.c:20 in x_probe"), each one a thing a reader can check in the code.

#include "autodriver/crash/bounds.hpp"
#include "autodriver/crash/lock.hpp"
#include "autodriver/crash/never_set.hpp"
#include "autodriver/crash/release.hpp"
#include "autodriver/crash/report.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace autodriver::crash {

/// One place in the driver the crash points at.
struct Location {
  std::string function;
  std::string module;
  std::string file; ///< relative to the driver tree when it lies in it
  int line = 0;
  std::string why;  ///< "faulting instruction", "caller 2 in the call trace", ...
  std::string role; ///< "fault", "caller", "free", "alloc"
  bool from_debug_info = false;
  /// Not in the trace but inferred from it and the source ("tail-call": the frame a tail call lost,
  /// at the function's last statement); the line is then a statement's, as with debug info.
  std::string inferred;
};

/// The driver's frames of `r`, most likely first. `driver_modules` empty: every module frame.
/// Source files under `build_root` (where the modules were built, as their debug info names it)
/// are made relative to it; frames without a source line are placed at their function's
/// definition in `tree` (if given). With no driver frame in the trace, `kernel_src` (the target's
/// source) lets a driver function lost to a tail call be found (tail_call.hpp).
std::vector<Location> localize(const CrashReport& r, const std::set<std::string>& driver_modules,
                               const std::filesystem::path& tree, const std::string& build_root,
                               const std::filesystem::path& kernel_src = {});

/// The fault address (CR2, else the headline's "address:") lies where the kernel maps modules:
/// memory of a module, or of one that is gone.
bool module_address(const CrashReport& r);

/// The allocator found memory corrupted: SLUB's red zone, padding or metadata checks (also as the
/// WARNING or BUG they raise; not a double free or objects left in a cache), KASAN/KFENCE out of
/// bounds, or a list's corruption check. Which check fires first varies from boot to boot.
bool allocator_corruption(const CrashReport& r);

/// A checkable statement about one location.
struct Hypothesis {
  std::string
      kind; ///< "missing-unlock", "missing-cleanup", "double-release", "use-after-release", "null-pointer", "use-before-set", "unchecked-result", "bad-pointer", "use-after-free",
  ///< "double-free", "warn-condition", "bug-condition", "refcount-underflow", "lock-order",
  ///< "blocked"
  std::string statement; ///< one sentence naming functions, variables and file:line
  std::string function;
  std::string file;
  int line = 0;
  std::vector<std::string> evidence; ///< the lines of the trace and source it rests on
  /// Pointer hypotheses: the dereferenced variable, the line of the assignment the statement
  /// names (before the use, or after it for use-before-set) and the function it called, if any;
  /// use-after-release: the released variable, the line of the release and the releasing function;
  /// double-release: the variable, the line of the first call and the function called twice.
  std::string variable;
  int set_line = 0;
  std::string callee;
  /// missing-unlock: the lock's variable, set_line the acquire, line the exit that leaves it held,
  /// callee the release, and the call that releases it as C ("mutex_unlock(&st->lock)").
  /// loop-bound: the array (variable), the loop's line (line) and the array's (set_line), the
  /// index (callee) and the loop condition that stays inside the array ("i < 3").
  std::string call;
};

nlohmann::json to_json(const Location& l);

/// Statements for the report's locations, the most specific first; reading `tree` for the source.
/// With `releases` (which calls end an object's life, see release.hpp), a release before a use
/// at the crashing place comes first. With `pairs` (which calls take a lock a function must give
/// back, see lock.hpp), a task blocked or spinning on a lock another exit left held comes first.
/// With no place in the driver and `undos` (how the kernel's drivers undo a call on error paths),
/// a crash on memory of a module that is gone gives the error exits of the driver's init and probe
/// functions that leave something registered; with `teardowns`, what the driver's remove or exit
/// never ends (also when a fault while the module unloads shows the kernel still calling in).
/// With `values` (the kernel's macros, see bounds.hpp), a stack overwritten in a function gives
/// its loops that index a local array past its end. With `managed` (the kernel's managed
/// interfaces, see release.hpp), a release the slab allocator refuses of an object the driver
/// allocated with one of them. With `inits` (how the kernel's drivers make a member ready before
/// handing it to a call, see never_set.hpp), a member the crashing statement hands on that the
/// driver never initialises. With `allocs` (how the kernel's drivers free what an allocator
/// returned, see release.hpp), a release of memory from an allocator the kernel frees otherwise.
std::vector<Hypothesis> hypothesize(const CrashReport& r, const std::vector<Location>& where, const std::filesystem::path& tree,
                                    const ReleaseOracle& releases = {}, const PairOracle& pairs = {},
                                    const PairOracle& undos = {}, const PairOracle& teardowns = {},
                                    const ValueOracle& values = {}, const ManagedOracle& managed = {},
                                    const InitOracle& inits = {}, const AllocOracle& allocs = {});

/// The places ranked again with what the hypotheses found in the source: the line a release
/// before its use happened, or the exit that left a lock held (the cause) goes first when the
/// crash showed only the later use or the blocked taker.
void rank_by_hypotheses(std::vector<Location>& where, const std::vector<Hypothesis>& hyps);

nlohmann::json to_json(const Hypothesis& h);

} // namespace autodriver::crash
