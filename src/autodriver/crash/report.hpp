#pragma once
// Kernel crash reports read from a console log or a syzbot-style report: what crashed (the kind),
// where (the faulting RIP/pc and the call trace, KASAN's allocation and free stacks), with what
// (registers, taint, the task) and a normalized title, so that two reports of one bug get the
// same title whatever their addresses, offsets, timestamps or CPU (as syzkaller's titles do).
// Logs are data: any bytes (interleaved lines, truncation, other architectures) give a result,
// never a throw.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::crash {

/// Closed set; numbers persisted, never reused.
enum class CrashKind : int {
  null_deref = 1,         ///< "BUG: kernel NULL pointer dereference" (x86), "Unable to handle kernel NULL pointer" (arm64)
  paging_request = 2,     ///< "BUG: unable to handle page fault", "... paging request"
  general_protection = 3, ///< "general protection fault"
  kasan_use_after_free = 4,
  kasan_out_of_bounds = 5,
  kasan_double_free = 6, ///< double-free and invalid-free
  kasan_other = 7,       ///< null-ptr-deref, wild-memory-access, ...
  bug_on = 8,            ///< "kernel BUG at FILE:LINE!"
  warning = 9,           ///< "WARNING: CPU: N PID: N at FILE:LINE"
  refcount = 10,         ///< "refcount_t: underflow; use-after-free." (with its WARNING)
  lockdep = 11,          ///< circular/recursive locking, inconsistent lock state, bad unlock balance
  soft_lockup = 12,
  hung_task = 13,
  panic = 14, ///< "Kernel panic - not syncing" with no other report before it
  ubsan = 15,
  rcu_stall = 16,
  bug_other = 17, ///< other "BUG: ..." lines (scheduling while atomic, sleeping in atomic, ...)
  oops = 18,      ///< an "Oops:" / "Internal error: Oops" with no headline the parser knows
  slab = 19,      ///< "BUG kmalloc-64 (Not tainted): Object already free" / "Poison overwritten": SLUB's debug checks
};

std::string_view to_string(CrashKind kind);

/// One call-trace frame: `[? ][[<addr>] ]func+0xOFF/0xSIZE[ file:line][ [inline]][ [module]]`.
struct Frame {
  std::string function;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::string module;   ///< empty: the kernel itself
  bool reliable = true; ///< false for "? " frames (stale stack contents)
  bool inlined = false; ///< "[inline]" frames of symbolized reports
  std::string file;     ///< from the report (decoded traces) or from symbolization
  int line = 0;
};

/// A lock lockdep names with where it was taken: ` #0: ffff... (&dev->lock){+.+.}-{4:4}, at: f+0x1c/0x60 [m]`.
struct LockSite {
  std::string lock;       ///< lockdep's name of the lock class: "&dev->lock"
  Frame at;               ///< the caller of the lock call
  bool acquiring = false; ///< the lock the task was trying to take (a deadlock report), not one it held
};

struct CrashReport {
  CrashKind kind = CrashKind::oops;
  std::string title;                            ///< normalized: "KASAN: slab-use-after-free Read in foo_remove"
  std::string headline;                         ///< the report's first line as printed, timestamp removed
  std::string detail;                           ///< kind-specific: KASAN's bug type, WARNING's FILE:LINE, the panic reason
  std::string access;                           ///< KASAN: "Read of size 8 at addr ffff... by task rmmod/123"
  std::optional<Frame> rip;                     ///< the faulting instruction (x86 RIP in kernel mode, arm64 pc)
  std::vector<Frame> trace;                     ///< the call trace, innermost first
  std::vector<Frame> alloc_stack;               ///< KASAN "Allocated by task N:"
  std::vector<Frame> free_stack;                ///< KASAN "Freed by task N:"
  std::vector<LockSite> locks;                  ///< lockdep's held and wanted locks
  std::map<std::string, std::string> registers; ///< "RAX" -> "0000000000000000", "CR2", "pc", ...
  std::string taint;                            ///< "G OE" from the CPU line, "Not tainted" as ""
  std::string release;                          ///< the kernel release on the CPU line ("6.12.117+deb12-amd64")
  std::string task;                             ///< "insmod" (Comm:)
  std::vector<std::string> unloading;           ///< modules "Modules linked in:" shows going away ("drv(OE-)")
  int pid = 0;
  bool panicked = false;  ///< a "Kernel panic" followed
  bool truncated = false; ///< the log ended inside the report
  int first_line = 0;     ///< 1-based line numbers in the log
  int last_line = 0;
  std::vector<std::string> lines; ///< the report's lines, timestamps removed (capped)

  /// The frame the title names: the RIP when it is not a reporting helper, else the first frame of
  /// the trace that is not one (kasan_report, __warn, refcount_warn_saturate, memcpy, ...); with
  /// neither (lockdep's "lock held when returning to user space"), where the first lock was taken.
  const Frame* guilty() const;
  /// A panic an NMI from outside caused (the boot gate's NMI into a hung guest, unknown_nmi_panic):
  /// the trace shows where the CPU was stuck.
  bool nmi_hang() const { return kind == CrashKind::panic && detail.starts_with("NMI"); }
  /// The innermost frame in `module` (the RIP first, then the trace; "?" frames last), or nullptr.
  const Frame* first_in(std::string_view module) const;
};

/// Every crash report in a log, in order. A log with none gives an empty list.
std::vector<CrashReport> parse_reports(std::string_view log);

/// One frame line ("func+0x1c/0x60 [mod]", with the variants above); nullopt when it is not one.
std::optional<Frame> parse_frame(std::string_view line);

nlohmann::json to_json(const Frame& f);
nlohmann::json to_json(const CrashReport& r);

} // namespace autodriver::crash
