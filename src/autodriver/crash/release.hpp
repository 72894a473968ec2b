#pragma once
// Releases and the uses after them (issue 18: use after free on remove, wrong unwind order).
// Which calls end an object's life is learned from the kernel's own drivers: `f(x, ...)` releases
// x when, in the drivers that call f, nothing reads x after the call (the path ends or x is not
// named again) in nearly every call. A driver statement `f(x)` followed by a use of x, or of a
// pointer the function derived from x (`p = g(x)`), is then a release before a use.

#include "autodriver/crash/driver_files.hpp"
#include "autodriver/csrc/tokens.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace autodriver::crash {

/// How the target kernel's drivers use an argument of `callee(x, ...)` (the first, or the one
/// `arg` counts from 0: `pci_iounmap(pdev, base)` releases its second) after the call.
struct ReleaseEvidence {
  std::string callee;
  int calls = 0;     ///< call statements read whose argument is a variable or an object path
  int last_use = 0;  ///< of those, calls after which the variable is not read again
  int last_call = 0; ///< of those, calls that are the last statement on their path (a return, a label or the end follows)
  /// At least 8 calls read, and x is not read after at least 90 % of them.
  bool releases() const { return calls >= 8 && last_use * 10 >= calls * 9; }
  /// The kernel's drivers release it after everything else (free_netdev() ends remove): at least
  /// two thirds of the calls are the last statement on their path.
  bool released_last() const { return calls >= 8 && last_call * 3 >= calls * 2; }
};

/// Read from the C files under drivers/ and sound/ of `kernel_src` that name `callee` (at most
/// 1500 of them, in path order); kept for the process.
ReleaseEvidence release_evidence(const std::filesystem::path& kernel_src, const std::string& callee, std::size_t arg = 0);

using ReleaseOracle = std::function<ReleaseEvidence(const std::string& callee, std::size_t arg)>;

/// release_evidence over `kernel_src`; an empty oracle when it is empty.
ReleaseOracle release_oracle(const std::filesystem::path& kernel_src);

/// A statement of a function body that is a call `callee(var, ...);` (its first argument a plain variable).
struct CallStatement {
  std::size_t first = 0, last = 0; ///< token range, `last` the ';'
  std::string callee;
  std::string var;
};
std::optional<CallStatement> call_statement(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last,
                                            bool address = false);

/// `x` and the variables the function assigns from an expression naming x (`p = netdev_priv(x)`),
/// once removed: what a release of x leaves dangling.
std::set<std::string> derived_names(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& x);

/// Whether tokens [first, last] read one of `names` (not as a member, not as the target of `=`).
bool reads_any(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last, const std::set<std::string>& names);

/// One release before a use in a function: the statement that releases, and the first statement after it that reads the object.
struct ReleaseBeforeUse {
  CallStatement release;
  int release_line = 0;
  int use_line = 0;
  ReleaseEvidence evidence;
};

/// In `fn`, the release nearest `line` that comes before a statement reading the object, where
/// `line` is the release itself or a statement after it that reads the object (both top-level
/// statements of the function's body).
std::optional<ReleaseBeforeUse> release_before_use(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line,
                                                   const ReleaseOracle& releases);

/// The members line `line` of a file reads (`->m`, `.m`), also through the function-like macros
/// of the same file or of `headers` (the driver's own) it calls (`cpr8(Cmd)` reading `cp->regs`
/// in its body, `er32(RCTL)` of a header reading `hw->hw_addr`; two levels deep).
std::set<std::string> members_read_on(const std::vector<csrc::Token>& t, int line, const std::vector<DriverFile>& headers = {});

/// The object path argument `n` of a call is (`adapter->mmioBase`), or "" when it is anything else.
std::string argument_path(const std::vector<csrc::Token>& t, const csrc::Call& c, std::size_t n);

/// A release inside one of the driver's own functions: `pvscsi_release_resources(adapter)` runs
/// `pci_iounmap(adapter->dev, adapter->mmioBase)`, which releases adapter->mmioBase.
struct ReleaseInside {
  std::string function; ///< the driver's function called with the object
  std::string file;     ///< where the release is, relative to the tree
  int line = 0;
  std::string path;   ///< what it releases, through the function's parameter
  std::string callee; ///< the kernel call that releases it
  ReleaseEvidence evidence;
};

/// In the driver's function `function` (or the driver functions it calls with the same object, two
/// levels), a call that releases a member path through its parameter number `param` whose last
/// member is one of `members`, the kernel's drivers confirming the call releases that argument.
std::optional<ReleaseInside> release_inside(const std::vector<DriverFile>& driver, const std::string& function, std::size_t param,
                                            const std::set<std::string>& members, const ReleaseOracle& releases, int depth = 2);

/// In `fn`, a release before the top-level statement holding `line` (a call the crash went
/// through: `unregister_netdev(dev)` -> .ndo_stop, or a direct call of the driver's function that
/// faulted below) that the call's path can reach, the nearest one the kernel's drivers confirm:
/// - a member path whose last member is one of `members` (what the faulting function read:
///   `iounmap(cp->regs)` before, `cp->regs` read in the callback);
/// - an object the call is handed, itself or through a pointer derived from it
///   (`scsi_host_put(host)` before `release(adapter)`, `adapter = shost_priv(host)`);
/// - with `driver`, a call of the driver's own function handed an object the call is also handed,
///   which releases a member of it that is one of `members` (release_inside; `release.inside`).
struct ReleaseBeforeCall {
  ReleaseBeforeUse at;
  std::optional<ReleaseInside> inside;
};
std::optional<ReleaseBeforeCall> release_before_call(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line,
                                                     const std::set<std::string>& members, const ReleaseOracle& releases,
                                                     const std::vector<DriverFile>* driver = nullptr);

/// The same call statement `callee(var, ...)` twice on one path of a function's body: the one at
/// `line` (top-level) and an earlier top-level one, `var` not assigned in between; also a call
/// with no argument (`rtnl_lock();`, `var` empty).
struct RepeatedCall {
  CallStatement call;
  int first_line = 0;
  int again_line = 0;
};
std::optional<RepeatedCall> repeated_call(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line);

/// Which calls allocate a resource the device's driver core frees itself when the driver unbinds
/// (devm_kzalloc(), pcim_iomap(), ...): the managed interfaces listed by the kernel's own
/// Documentation/driver-api/driver-model/devres.rst. A driver releasing one by hand frees it
/// twice, or frees a pointer into the allocator's bookkeeping (scripts/coccinelle/free/devm_free.cocci).
using ManagedOracle = std::function<bool(const std::string& callee)>;
/// The names in the list of managed interfaces of `kernel_src`'s devres.rst; an empty oracle when
/// the document is missing.
ManagedOracle managed_oracle(const std::filesystem::path& kernel_src);
/// The names listed in a devres.rst text: every `name(` from its list of managed interfaces on.
std::set<std::string> managed_interfaces(std::string_view devres_rst);

/// The call statement at `line` releases `var` (a variable or member path) that the file assigns
/// from a managed allocation somewhere (`edev = devm_kzalloc(...)` in probe; matched by the
/// variable's declared type, or a member path's last member): the allocation's line, or 0.
struct ManagedRelease {
  CallStatement release;
  int release_line = 0;
  std::string allocator;
  int alloc_line = 0;
};
std::optional<ManagedRelease> managed_release(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units,
                                              const csrc::Unit& fn, int line, const ManagedOracle& managed);

/// How the target kernel's drivers release what `alloc(...)` returned into a member
/// (`ring->buffer_info = vzalloc(size)`): in the files that do, the call most often made with that
/// member's path as its only argument (`vfree(ring->buffer_info)`).
struct AllocRelease {
  std::string alloc;
  std::string release;           ///< the most common such call
  int files = 0;                 ///< files releasing a member they assigned from alloc
  int released = 0;              ///< of those, files calling `release`
  std::map<std::string, int> by; ///< files per releasing call
  /// At least 5 files, and at least half of them.
  bool learned() const { return !release.empty() && released >= 5 && released * 2 >= files; }
  /// `callee` releases such memory in at most 1 file in 20: not the kernel's way to free it.
  bool foreign(const std::string& callee) const {
    auto it = by.find(callee);
    return (it == by.end() ? 0 : it->second) * 20 <= files;
  }
};
AllocRelease alloc_release(const std::filesystem::path& kernel_src, const std::string& alloc);

using AllocOracle = std::function<AllocRelease(const std::string& alloc)>;
/// alloc_release over `kernel_src`; an empty oracle when it is empty.
AllocOracle alloc_oracle(const std::filesystem::path& kernel_src);

/// A release on `line` of `fn` (`kfree(tx_ring->buffer_info)`) of a member the driver assigns from
/// an allocator (`txdr->buffer_info = vzalloc(size)`, the same member name) whose memory the
/// kernel's drivers give back with another call (vfree): the call that should release it.
struct ForeignRelease {
  std::string member;   ///< "buffer_info"
  std::string alloc;    ///< "vzalloc"
  std::string callee;   ///< "kfree", as the line calls it
  std::string release;  ///< "vfree"
  std::string alloc_at; ///< "netdev.c:2322", where the driver allocates it
  AllocRelease evidence;
};
std::optional<ForeignRelease> foreign_release(const std::vector<DriverFile>& driver, const std::string& file,
                                              const std::string& fn, int line, const AllocOracle& allocs);

} // namespace autodriver::crash
