#include "autodriver/crash/report.hpp"
#include "autodriver/util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <regex>

namespace autodriver::crash {

namespace {

constexpr std::size_t k_max_report_lines = 400;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string squash_spaces(std::string_view s) {
  std::string out;
  for (char c : trim(s)) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

/// A console line without its CR, syslog level (`<4>`), timestamp (`[   12.345678]`) and caller id
/// (`[    T123]`, `[  C0]`, printed with CONFIG_PRINTK_CALLER).
std::string_view strip_prefix(std::string_view l) {
  while (!l.empty() && (l.back() == '\r' || l.back() == '\n')) l.remove_suffix(1);
  if (l.size() >= 3 && l[0] == '<' && std::isdigit(static_cast<unsigned char>(l[1]))) {
    auto gt = l.find('>');
    if (gt != std::string_view::npos && gt <= 4) l.remove_prefix(gt + 1);
  }
  for (int pass = 0; pass < 2; ++pass) {
    std::size_t i = 0;
    while (i < l.size() && l[i] == ' ') ++i;
    if (i >= l.size() || l[i] != '[') break;
    auto close = l.find(']', i);
    if (close == std::string_view::npos || close - i > 20) break;
    std::string_view in = trim(l.substr(i + 1, close - i - 1));
    bool stamp = !in.empty() && std::all_of(in.begin(), in.end(),
                                            [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
    bool caller = in.size() >= 2 && (in[0] == 'T' || in[0] == 'C') &&
                  std::all_of(in.begin() + 1, in.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!stamp && !caller) break;
    l.remove_prefix(close + 1);
    if (!l.empty() && l[0] == ' ') l.remove_prefix(1);
  }
  return l;
}

int decimal(const std::string& s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? v : 0;
}

std::uint64_t hex(std::string_view s) {
  std::uint64_t v = 0;
  if (s.starts_with("0x")) s.remove_prefix(2);
  std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return v;
}

/// gcc's clone suffixes name the same source function: foo.constprop.0, foo.isra.0, foo.part.1, foo.cold.
std::string base_function(std::string f) {
  for (const char* suffix : {".constprop", ".isra", ".part", ".cold", ".llvm"}) {
    auto p = f.find(suffix);
    if (p != std::string::npos && p > 0) f.resize(p);
  }
  return f;
}

/// Functions that report, warn, check or copy: a title names their caller, as syzkaller's do.
bool reporting_helper(const std::string& f) {
  static const std::regex k_helper(
      "^(dump_stack.*|show_stack|show_trace_log_lvl|print_report|print_address_description.*|kasan_.*|__kasan_.*|"
      "__asan_.*|asan_.*|check_memory_region.*|__warn.*|warn_slowpath.*|report_bug|handle_bug|exc_invalid_op|"
      "asm_exc_.*|refcount_warn_saturate|__refcount_.*|refcount_.*|panic|die|oops_.*|__die.*|lock_acquire.*|"
      "lock_release|__lock_acquire|lockdep_.*|print_.*_bug|print_.*deadlock.*|check_.*_bug|validate_chain|"
      "check_prev_add|check_prevs_add|check_noncircular|debug_check_no_.*|__might_sleep|__might_resched|__might_fault|"
      "___might_sleep|might_fault|kfree|kfree_sensitive|kvfree|kmem_cache_free|slab_free.*|__slab_free|do_slab_free|"
      "memcpy|memmove|memset|__memcpy|__memset|__memmove|memcmp|strcpy|strncpy|strlen|strnlen|strcmp|strscpy|"
      "sized_strscpy|copy_to_user|copy_from_user|_copy_to_user|_copy_from_user|__x86_indirect_thunk_.*|"
      "__x86_return_thunk|ubsan_.*|__ubsan_.*|watchdog_timer_fn|__hrtimer_run_queues|hrtimer_interrupt|"
      "rcu_sched_clock_irq|rcu_pending|update_process_times|tick_.*|__schedule|schedule|schedule_.*|"
      "io_schedule.*|__switch_to.*|context_switch|wait_for_.*|__wait_.*|rwsem_down_.*|__down.*|down|down_.*|"
      "__mutex_lock.*|mutex_lock.*|__schedule_loop|native_queued_spin_lock_slowpath|queued_spin_lock_slowpath|"
      "__pv_queued_spin_lock_slowpath|do_raw_spin_lock|vpanic|nmi_panic|unknown_nmi_error|default_do_nmi|exc_nmi|"
      "end_repeat_nmi|_raw_spin_lock.*|_raw_read_lock.*|_raw_write_lock.*|__pfx_.*|print_trailer|object_err|"
      "slab_err|slab_bug|free_debug_processing|free_to_partial_list|free_consistency_checks|check_object|"
      "check_bytes_and_report|on_freelist|alloc_debug_processing|alloc_consistency_checks|___slab_alloc|__slab_alloc.*|"
      "slab_alloc_node|__kmalloc.*|kmalloc_trace.*|kmem_cache_alloc.*|__kmem_cache_alloc.*)$");
  return std::regex_match(f, k_helper);
}

struct Headline {
  CrashKind kind;
  std::string detail;
  std::optional<Frame> at; ///< a frame the headline names ("in foo+0x1/0x2", WARNING's "at F:L foo+...")
};

std::optional<Headline> headline(std::string_view t) {
  static const std::regex k_kasan(R"(BUG: KASAN: ([\w-]+)(?: in (\S+))?)");
  // KFENCE (sampled, in Debian's 6.x images): "BUG: KFENCE: use-after-free read in f+0x1/0x2",
  // "BUG: KFENCE: invalid free in f+...", "BUG: KFENCE: memory corruption in f+...".
  static const std::regex k_kfence(R"(BUG: KFENCE: ([\w -]+?)(?: in (\S+(?: \[\S+\])?))?\s*$)");
  static const std::regex k_warning(R"(^WARNING: CPU: \d+ PID: \d+ at (\S+))");
  // Newer kernels (7.x): "WARNING: drivers/pci/pci.c:2238 at pci_disable_device+0xa6/0xc0, CPU#0: rmmod/122".
  static const std::regex k_warning_at(R"(^WARNING: (\S+:\d+) at ([^,\s]+), CPU#\d+: )");
  static const std::regex k_bug_at(R"(^kernel BUG at (\S+?)!?$)");
  static const std::regex k_ubsan(R"(^UBSAN: ([\w-]+) in (\S+))");
  static const std::regex k_slab(R"(^BUG ([\w.:-]+) \((?:Not tainted|Tainted:[^)]*)\): (.+)$)");
  std::cmatch m;
  std::string s(t);
  if (std::regex_search(s.c_str(), m, k_kasan)) {
    std::string type = m[1].str();
    CrashKind k = type.find("use-after-free") != std::string::npos  ? CrashKind::kasan_use_after_free
                  : type.find("out-of-bounds") != std::string::npos ? CrashKind::kasan_out_of_bounds
                  : type.find("double-free") != std::string::npos || type.find("invalid-free") != std::string::npos
                      ? CrashKind::kasan_double_free
                      : CrashKind::kasan_other;
    Headline h{k, type, std::nullopt};
    if (m[2].matched) h.at = parse_frame(m[2].str());
    return h;
  }
  if (std::regex_search(s.c_str(), m, k_kfence)) {
    std::string type = "KFENCE " + m[1].str();
    CrashKind k = type.find("use-after-free") != std::string::npos  ? CrashKind::kasan_use_after_free
                  : type.find("out-of-bounds") != std::string::npos ? CrashKind::kasan_out_of_bounds
                  : type.find("invalid free") != std::string::npos  ? CrashKind::kasan_double_free
                                                                    : CrashKind::kasan_other;
    Headline h{k, std::move(type), std::nullopt};
    if (m[2].matched) h.at = parse_frame(m[2].str());
    return h;
  }
  if (t.starts_with("BUG: kernel NULL pointer dereference") || t.starts_with("BUG: unable to handle kernel NULL pointer") ||
      t.starts_with("Unable to handle kernel NULL pointer dereference"))
    return Headline{CrashKind::null_deref, "", std::nullopt};
  if (t.starts_with("BUG: unable to handle page fault") || t.starts_with("BUG: unable to handle kernel paging request") ||
      t.starts_with("Unable to handle kernel paging request"))
    return Headline{CrashKind::paging_request, "", std::nullopt};
  if (t.starts_with("general protection fault") || t.starts_with("Oops: general protection fault"))
    return Headline{CrashKind::general_protection, "", std::nullopt};
  if (std::regex_search(s.c_str(), m, k_bug_at)) return Headline{CrashKind::bug_on, m[1].str(), std::nullopt};
  if (std::regex_search(s.c_str(), m, k_slab)) {
    static const std::regex k_addr(R"(\b0x[0-9a-f]+\b)");
    return Headline{CrashKind::slab, squash_spaces(std::regex_replace(m[2].str(), k_addr, "X")), std::nullopt};
  }
  if (t.starts_with("refcount_t: ")) return Headline{CrashKind::refcount, std::string(trim(t.substr(12))), std::nullopt};
  for (const char* l : {"WARNING: possible circular locking dependency", "WARNING: possible recursive locking",
                        "WARNING: inconsistent lock state", "WARNING: bad unlock balance", "WARNING: held lock freed",
                        "WARNING: lock held when returning", "WARNING: suspicious RCU usage",
                        "WARNING: possible irq lock inversion", "WARNING: nested lock was not taken"})
    if (t.starts_with(l)) return Headline{CrashKind::lockdep, std::string(t.substr(9)), std::nullopt};
  if (std::regex_search(s.c_str(), m, k_warning_at)) {
    Headline h{CrashKind::warning, m[1].str(), std::nullopt};
    h.at = parse_frame(m[2].str());
    return h;
  }
  if (std::regex_search(s.c_str(), m, k_warning)) {
    Headline h{CrashKind::warning, m[1].str(), std::nullopt};
    h.at = parse_frame(s.substr(static_cast<std::size_t>(m.position(0) + m.length(0))));
    return h;
  }
  if (t.find("BUG: soft lockup") != std::string_view::npos) return Headline{CrashKind::soft_lockup, "", std::nullopt};
  if (t.starts_with("INFO: task ") && t.find(" blocked for more than ") != std::string_view::npos)
    return Headline{CrashKind::hung_task, "", std::nullopt};
  if ((t.starts_with("rcu: INFO: ") || t.starts_with("INFO: rcu")) && t.find("stall") != std::string_view::npos)
    return Headline{CrashKind::rcu_stall, "", std::nullopt};
  if (std::regex_search(s.c_str(), m, k_ubsan)) return Headline{CrashKind::ubsan, m[1].str(), std::nullopt};
  if (t.starts_with("Kernel panic - not syncing:"))
    return Headline{CrashKind::panic, std::string(trim(t.substr(27))), std::nullopt};
  if (t.starts_with("BUG: ")) {
    std::string what(t.substr(5));
    auto colon = what.find(':');
    if (colon != std::string::npos) what.resize(colon);
    return Headline{CrashKind::bug_other, squash_spaces(what), std::nullopt};
  }
  if (t.starts_with("Oops: ") || t.starts_with("Internal error: Oops")) return Headline{CrashKind::oops, "", std::nullopt};
  return std::nullopt;
}

bool is_end(std::string_view t) { return t.starts_with("---[ end trace") || t.starts_with("---[ end Kernel panic"); }
bool is_separator(std::string_view t) { return t.size() >= 20 && t.find_first_not_of('=') == std::string_view::npos; }

enum class Section { none, trace, alloc, free, other_stack };

/// Fills a report from its lines (already stripped).
class ReportReader {
public:
  explicit ReportReader(CrashReport& r) : m_r(r) {}

  void line(std::string_view t) {
    if (m_r.lines.size() < k_max_report_lines) m_r.lines.emplace_back(t);
    if (cpu_line(t) || section_line(t) || lock_line(t) || modules_line(t)) return;
    if (m_section != Section::none) {
      std::string_view s = trim(t);
      if (s == "</TASK>" && m_section == Section::trace) m_trace_closed = true;
      if (s == "<TASK>" || s == "</TASK>" || s == "<IRQ>" || s == "</IRQ>" || s == "<NMI>" || s == "</NMI>" || s == "<SOFTIRQ>" ||
          s == "</SOFTIRQ>" || s.empty())
        return;
      // An interrupted context's registers inside a trace (after `</NMI>` or `</IRQ>`): the
      // frames go on after them.
      static const std::regex k_regs_line(R"(^(RIP|Code|RSP|RAX|RDX|RBP|R10|R13|FS|CS|CR2|DR0|DR3|DR6|PKRU):)");
      if (m_section == Section::trace && std::regex_search(std::string(s.substr(0, 8)), k_regs_line)) {
        rip_line(s);
        if (!m_user_regs) registers(s);
        return;
      }
      if (auto f = parse_frame(t); f && !t.starts_with("RIP:")) {
        (m_section == Section::trace   ? m_r.trace
         : m_section == Section::alloc ? m_r.alloc_stack
         : m_section == Section::free  ? m_r.free_stack
                                       : m_scratch)
            .push_back(std::move(*f));
        return;
      }
      m_section = Section::none;
    }
    rip_line(t);
    if (!m_user_regs) registers(t);
    if (m_r.access.empty() && (t.starts_with("Read of size") || t.starts_with("Write of size"))) m_r.access = std::string(t);
  }

private:
  /// lockdep: "cat/153 is trying to acquire lock:", "but task is already holding lock:", and the
  /// lock lines after them or after "1 lock held by cat/153:".
  bool lock_line(std::string_view t) {
    std::string_view s = trim(t);
    if (s.ends_with("is trying to acquire lock:")) {
      m_acquiring = true;
      return true;
    }
    if (s.starts_with("but task is already holding lock") ||
        (s.find(" held by ") != std::string_view::npos && s.ends_with(":"))) {
      m_acquiring = false;
      return true;
    }
    static const std::regex k_lock(R"(^(?:#\d+:\s*)?(?:[0-9a-f]{8,16}\s*)?\((.+?)\)\{[^}]*\}(?:-\{[^}]*\})?, at: (.+)$)");
    if (s.find(", at: ") == std::string_view::npos) return false;
    std::cmatch m;
    std::string line(s);
    if (!std::regex_search(line.c_str(), m, k_lock)) return false;
    auto f = parse_frame(m[2].str());
    if (!f) return false;
    m_r.locks.push_back(LockSite{m[1].str(), std::move(*f), m_acquiring});
    return true;
  }

  bool cpu_line(std::string_view t) {
    static const std::regex k_cpu(
        R"(^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (\S+) (?:Not tainted|Tainted: ([A-Z ]*?))\s+(\S+) #)");
    // A hung task's report names the kernel on a line of its own: "      Tainted: G   OE   6.12.1 #1".
    static const std::regex k_taint(R"(^\s+(?:Not tainted|Tainted: ([A-Z ]*?))\s+(\S+) #)");
    if (m_r.release.empty() && (t.starts_with("      Tainted: ") || t.starts_with("      Not tainted"))) {
      std::cmatch m;
      std::string s(t);
      if (!std::regex_search(s.c_str(), m, k_taint)) return false;
      m_r.taint = m[1].matched ? squash_spaces(m[1].str()) : "";
      m_r.release = m[2].str();
      return true;
    }
    // lockdep's ident line: "6.12.0-rc1 #1 Not tainted".
    static const std::regex k_ident(R"(^(\d+\.\d+\S*) #\S+\s+(?:Not tainted|Tainted: ([A-Z ]*?))\s*$)");
    if (m_r.release.empty() && m_r.kind == CrashKind::lockdep && !t.empty() && t[0] >= '0' && t[0] <= '9') {
      std::cmatch m;
      std::string s(t);
      if (!std::regex_search(s.c_str(), m, k_ident)) return false;
      m_r.release = m[1].str();
      m_r.taint = m[2].matched ? squash_spaces(m[2].str()) : "";
      return true;
    }
    if (!t.starts_with("CPU: ") || !m_r.task.empty()) return false;
    std::cmatch m;
    std::string s(t);
    if (!std::regex_search(s.c_str(), m, k_cpu)) return false;
    m_r.pid = decimal(m[1].str());
    m_r.task = m[2].str();
    m_r.taint = m[3].matched ? squash_spaces(m[3].str()) : "";
    m_r.release = m[4].str();
    return true;
  }

  /// "Modules linked in: drv(OE-) mii": the modules the kernel is unloading carry `-` (and those
  /// still loading `+`) after their taint letters. The list may go on over several lines.
  bool modules_line(std::string_view t) {
    std::string_view s = trim(t);
    if (!s.starts_with("Modules linked in:")) return false;
    s.remove_prefix(std::string_view("Modules linked in:").size());
    m_section = Section::none;
    while (!s.empty()) {
      const auto b = s.find_first_not_of(' ');
      if (b == std::string_view::npos) break;
      s.remove_prefix(b);
      std::string_view word = s.substr(0, s.find(' '));
      s.remove_prefix(word.size());
      const auto open = word.find('(');
      if (open != std::string_view::npos && word.size() >= open + 3 && word.substr(word.size() - 2) == "-)")
        m_r.unloading.emplace_back(word.substr(0, open));
    }
    return true;
  }

  bool section_line(std::string_view t) {
    std::string_view s = trim(t);
    if (s == "Call Trace:" || s == "Call trace:") m_section = m_r.trace.empty() ? Section::trace : Section::other_stack;
    else if (s.starts_with("Allocated by task") || s.starts_with("Allocated by CPU") || s.starts_with("allocated by task"))
      m_section = Section::alloc;
    else if (s.starts_with("Freed by task") || s.starts_with("Freed by CPU") || s.starts_with("freed by task"))
      m_section = Section::free;
    else if (kfence_access(s)) {
      // KFENCE: "Use-after-free read at 0x... (in kfence-#79):", the faulting stack below it.
      m_section = m_r.trace.empty() ? Section::trace : Section::other_stack;
      if (m_r.access.empty()) m_r.access = std::string(s);
    } else if (auto track = slab_track(s)) {
      // SLUB: "Allocated in f+0x1/0x2 age=3 cpu=0 pid=1", the call stack indented below it.
      m_section = track->first;
      if (auto f = parse_frame(track->second)) (m_section == Section::alloc ? m_r.alloc_stack : m_r.free_stack).push_back(*f);
    } else if (s.ends_with("work creation:") || s.ends_with("call_rcu:") || s.starts_with("Last potentially related"))
      m_section = Section::other_stack;
    else return false;
    return true;
  }

  /// KFENCE's access line: "Use-after-free read at 0x... (in kfence-#79):", "Invalid free of 0x... (in kfence-#81):".
  static bool kfence_access(std::string_view s) { return s.ends_with("):") && s.find(" (in kfence-#") != std::string_view::npos; }

  static std::optional<std::pair<Section, std::string_view>> slab_track(std::string_view s) {
    if (s.starts_with("INFO: ")) s.remove_prefix(6);
    Section which = s.starts_with("Allocated in ") ? Section::alloc : s.starts_with("Freed in ") ? Section::free : Section::none;
    if (which == Section::none) return std::nullopt;
    s.remove_prefix(s.find(" in ") + 4);
    auto age = s.find(" age=");
    if (age == std::string_view::npos) return std::nullopt;
    return std::make_pair(which, s.substr(0, age));
  }

  void rip_line(std::string_view t) {
    // x86: "RIP: 0010:foo+0x26/0x40 [mod]"; user mode is "RIP: 0033:0x47fbe9" (its registers follow).
    // arm64: "pc : foo+0x1c/0x60 [mod]".
    if (t.starts_with("RIP: ")) {
      std::string_view rest = t.substr(5);
      auto colon = rest.find(':');
      std::string_view seg = colon == std::string_view::npos ? std::string_view() : rest.substr(0, colon);
      if (seg == "0033" || seg == "0023") {
        m_user_regs = true;
        return;
      }
      if (!m_r.rip) m_r.rip = parse_frame(colon == std::string_view::npos ? rest : rest.substr(colon + 1));
    } else if (t.starts_with("pc : ") && !m_r.rip) {
      m_r.rip = parse_frame(t.substr(5));
    }
  }

  void registers(std::string_view t) {
    static const std::regex k_reg(
        R"((?:^|\s)(R[A-Z0-9]{1,2}|EFLAGS|CR[0-4]|ORIG_RAX|pc|lr|sp|x\d{1,2}|pstate)\s?:\s?([0-9a-fx:]+)\b)");
    std::string s(t);
    for (auto it = std::sregex_iterator(s.begin(), s.end(), k_reg); it != std::sregex_iterator(); ++it) {
      std::string name = (*it)[1].str(), value = (*it)[2].str();
      if (name == "RIP" || name == "pc" || name == "lr") continue; // frames, not numbers
      m_r.registers.emplace(name, value);
    }
  }

public:
  /// The main call trace was closed by its `</TASK>`.
  bool trace_closed() const { return m_trace_closed; }

private:
  CrashReport& m_r;
  bool m_trace_closed = false;
  Section m_section = Section::none;
  bool m_user_regs = false;
  bool m_acquiring = false;
  std::vector<Frame> m_scratch;
};

std::string title_of(const CrashReport& r) {
  const Frame* g = r.guilty();
  std::string in = g ? " in " + base_function(g->function) : "";
  std::string rw = r.access.starts_with("Read") ? " Read" : r.access.starts_with("Write") ? " Write" : "";
  switch (r.kind) {
  case CrashKind::null_deref: return "BUG: kernel NULL pointer dereference" + in;
  case CrashKind::paging_request: return "BUG: unable to handle page fault" + in;
  case CrashKind::general_protection: return "general protection fault" + in;
  case CrashKind::kasan_use_after_free:
  case CrashKind::kasan_out_of_bounds:
  case CrashKind::kasan_double_free:
  case CrashKind::kasan_other:
    // KFENCE's detail names its access ("KFENCE use-after-free read"): "KFENCE: use-after-free read in f".
    if (r.detail.starts_with("KFENCE ")) return "KFENCE: " + r.detail.substr(7) + in;
    return "KASAN: " + r.detail + rw + in;
  case CrashKind::bug_on: return "kernel BUG" + in;
  case CrashKind::warning: return "WARNING" + in;
  case CrashKind::refcount: return "refcount bug" + in;
  case CrashKind::lockdep:
    if (r.detail.find("circular") != std::string::npos || r.detail.find("recursive") != std::string::npos)
      return "possible deadlock" + in;
    if (r.detail.find("inconsistent lock state") != std::string::npos) return "inconsistent lock state" + in;
    if (r.detail.find("bad unlock balance") != std::string::npos) return "bad unlock balance" + in;
    if (r.detail.find("lock held when returning") != std::string::npos) return "lock held when returning to user space" + in;
    return "lockdep bug" + in;
  case CrashKind::soft_lockup: return "BUG: soft lockup" + in;
  case CrashKind::hung_task: return "INFO: task hung" + in;
  case CrashKind::rcu_stall: return "INFO: rcu detected stall" + in;
  case CrashKind::ubsan: return "UBSAN: " + r.detail + in;
  case CrashKind::panic: {
    if (r.nmi_hang()) return "hang (NMI)" + in;
    static const std::regex k_num(R"(\b(0x)?[0-9a-f]{6,}\b|\b\d+\b)");
    return "kernel panic: " + std::regex_replace(r.detail, k_num, "X");
  }
  case CrashKind::bug_other: return "BUG: " + r.detail + in;
  case CrashKind::oops: return "Oops" + in;
  case CrashKind::slab: return "BUG: slab " + r.detail + in;
  }
  return "crash" + in;
}

} // namespace

std::string_view to_string(CrashKind kind) {
  switch (kind) {
  case CrashKind::null_deref: return "null-deref";
  case CrashKind::paging_request: return "paging-request";
  case CrashKind::general_protection: return "general-protection";
  case CrashKind::kasan_use_after_free: return "kasan-use-after-free";
  case CrashKind::kasan_out_of_bounds: return "kasan-out-of-bounds";
  case CrashKind::kasan_double_free: return "kasan-double-free";
  case CrashKind::kasan_other: return "kasan-other";
  case CrashKind::bug_on: return "bug-on";
  case CrashKind::warning: return "warning";
  case CrashKind::refcount: return "refcount";
  case CrashKind::lockdep: return "lockdep";
  case CrashKind::soft_lockup: return "soft-lockup";
  case CrashKind::hung_task: return "hung-task";
  case CrashKind::panic: return "panic";
  case CrashKind::ubsan: return "ubsan";
  case CrashKind::rcu_stall: return "rcu-stall";
  case CrashKind::bug_other: return "bug";
  case CrashKind::oops: return "oops";
  case CrashKind::slab: return "slab";
  }
  return "oops";
}

std::optional<Frame> parse_frame(std::string_view line) {
  // [? ][[<ffffffff81234567>] ]func+0x1c/0x60[ file.c:123][ [inline]][ [module]][ (other)]
  static const std::regex k_frame(
      R"(^\s*(\? )?(?:\[<[0-9a-f]+>\]\s+)?([A-Za-z_.$][\w.$]*)(?:\+0x([0-9a-f]+)/0x([0-9a-f]+))?(?: ([\w./+-]+\.[chS]):(\d+)(?::\d+)?)?( \[inline\])?(?: \[([\w-]+)\])?\s*(?:\(\S+\))?\s*$)");
  std::string s(line);
  if (s.size() > 400) return std::nullopt;
  std::smatch m;
  if (!std::regex_match(s, m, k_frame)) return std::nullopt;
  // A bare word is no frame: an offset, a file:line or [inline] must say it is one.
  if (!m[3].matched && !m[5].matched && !m[7].matched) return std::nullopt;
  Frame f;
  f.reliable = !m[1].matched;
  f.function = m[2].str();
  if (m[3].matched) f.offset = hex(m[3].str()), f.size = hex(m[4].str());
  if (m[5].matched) f.file = m[5].str(), f.line = decimal(m[6].str());
  f.inlined = m[7].matched;
  if (m[8].matched) f.module = m[8].str();
  return f;
}

const Frame* CrashReport::guilty() const {
  if (rip && !reporting_helper(base_function(rip->function))) return &*rip;
  for (const auto& f : trace)
    if (f.reliable && !reporting_helper(base_function(f.function))) return &f;
  if (rip) return &*rip;
  for (const auto& f : trace)
    if (f.reliable) return &f;
  for (const auto& l : locks) return &l.at;
  return nullptr;
}

const Frame* CrashReport::first_in(std::string_view module) const {
  if (module.empty()) return nullptr;
  if (rip && rip->module == module) return &*rip;
  for (const auto& f : trace)
    if (f.reliable && f.module == module) return &f;
  for (const auto& f : trace)
    if (f.module == module) return &f;
  return nullptr;
}

static std::size_t frames(const CrashReport& r) {
  return r.trace.size() + r.alloc_stack.size() + r.free_stack.size() + r.locks.size() + (r.rip ? 1 : 0);
}

std::vector<CrashReport> parse_reports(std::string_view log) {
  std::vector<CrashReport> out;
  std::optional<CrashReport> cur;
  std::optional<ReportReader> reader;
  std::vector<std::string> headlines; // raw headline lines (timestamps kept) of the reports in `out`
  std::string cur_raw;
  int n = 0;
  auto close = [&](bool at_eof) {
    if (!cur) return;
    // At the end of the log a report is whole only when its trace was closed (`</TASK>`); reports
    // with end markers or separators were closed by them before.
    cur->truncated = at_eof && !reader->trace_closed();
    cur->title = title_of(*cur);
    // A console that also prints `dmesg` shows each report twice, with the same timestamps; the
    // live copy lacks what the console's loglevel hid (stacks, a WARNING's trace): keep the richer one.
    auto seen = std::find(headlines.begin(), headlines.end(), cur_raw);
    if (cur_raw.empty() || seen == headlines.end() || cur_raw == cur->headline) {
      headlines.push_back(cur_raw);
      out.push_back(std::move(*cur));
    } else if (auto& first = out[static_cast<std::size_t>(seen - headlines.begin())]; frames(*cur) > frames(first)) {
      first = std::move(*cur);
    }
    cur.reset();
    reader.reset();
  };
  std::size_t pos = 0;
  while (pos <= log.size()) {
    auto nl = log.find('\n', pos);
    std::string_view raw = log.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? log.size() + 1 : nl + 1;
    ++n;
    std::string_view t = strip_prefix(util::parsed_line(raw));
    const bool separated = cur && ((cur->kind >= CrashKind::kasan_use_after_free && cur->kind <= CrashKind::kasan_other) ||
                                   cur->kind == CrashKind::ubsan);
    if (cur && (is_end(t) || (separated && is_separator(t) && n > cur->first_line + 1))) {
      reader->line(t);
      cur->last_line = n;
      close(false);
      continue;
    }
    if (auto h = headline(t)) {
      bool part_of_current = false;
      if (cur) {
        int since = n - cur->first_line;
        // "Oops: 0002 [#1]" follows the fault headline; a refcount_t line's WARNING follows it; a
        // panic ends the report it follows.
        if (h->kind == CrashKind::oops && since < 12) part_of_current = true;
        else if (h->kind == CrashKind::general_protection && cur->kind == CrashKind::general_protection && since < 12)
          part_of_current = true;
        else if (h->kind == CrashKind::warning && cur->kind == CrashKind::refcount && since < 4) {
          part_of_current = true;
          if (!cur->rip && h->at) cur->rip = h->at;
        } else if (h->kind == CrashKind::warning && cur->kind == CrashKind::slab && since < 120) {
          part_of_current = true; // 6.x WARNs in the check that printed the slab report: its stack is the report's
          if (!cur->rip && h->at) cur->rip = h->at;
        } else if (h->kind == CrashKind::panic) {
          cur->panicked = true;
          cur->lines.emplace_back(t);
          cur->last_line = n;
          close(false);
          continue;
        }
      } else if (h->kind == CrashKind::panic && !out.empty() && n - out.back().last_line < 40) {
        out.back().panicked = true; // the panic of the report just ended (panic_on_oops, "Fatal exception")
        continue;
      } else if (h->kind == CrashKind::oops && !out.empty() && n - out.back().last_line < 3) {
        continue;
      }
      if (!part_of_current) {
        close(false);
        cur.emplace();
        cur->kind = h->kind;
        cur->detail = h->detail;
        cur->headline = std::string(t);
        cur_raw = std::string(trim(raw));
        cur->first_line = n;
        if (h->at) cur->rip = h->at;
        static const std::regex k_hung(R"(^INFO: task (.+):(\d+) blocked)");
        std::cmatch hm;
        std::string hs(t);
        if (h->kind == CrashKind::hung_task && std::regex_search(hs.c_str(), hm, k_hung))
          cur->task = hm[1].str(), cur->pid = decimal(hm[2].str());
        reader.emplace(*cur);
      }
    }
    if (cur) {
      reader->line(t);
      cur->last_line = n;
      if (cur->kind == CrashKind::panic && cur->last_line > cur->first_line + 60) close(false);
    }
  }
  close(true);
  return out;
}

nlohmann::json to_json(const Frame& f) {
  nlohmann::json j = {
      {"function", f.function}, {"offset", f.offset}, {"size", f.size}, {"module", f.module}, {"reliable", f.reliable}};
  if (f.inlined) j["inlined"] = true;
  if (!f.file.empty()) j["file"] = f.file, j["line"] = f.line;
  return j;
}

nlohmann::json to_json(const CrashReport& r) {
  auto frames = [](const std::vector<Frame>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& f : v) a.push_back(to_json(f));
    return a;
  };
  nlohmann::json locks = nlohmann::json::array();
  for (const auto& l : r.locks) locks.push_back({{"lock", l.lock}, {"at", to_json(l.at)}, {"acquiring", l.acquiring}});
  nlohmann::json j = {{"kind", to_string(r.kind)},
                      {"title", r.title},
                      {"headline", r.headline},
                      {"detail", r.detail},
                      {"access", r.access},
                      {"rip", r.rip ? to_json(*r.rip) : nlohmann::json()},
                      {"trace", frames(r.trace)},
                      {"alloc_stack", frames(r.alloc_stack)},
                      {"free_stack", frames(r.free_stack)},
                      {"locks", locks},
                      {"registers", r.registers},
                      {"taint", r.taint},
                      {"release", r.release},
                      {"task", r.task},
                      {"unloading", r.unloading},
                      {"pid", r.pid},
                      {"panicked", r.panicked},
                      {"truncated", r.truncated},
                      {"first_line", r.first_line},
                      {"last_line", r.last_line}};
  return j;
}

} // namespace autodriver::crash
