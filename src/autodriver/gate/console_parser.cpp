#include "autodriver/gate/console_parser.hpp"

#include "autodriver/util/strings.hpp"

#include <regex>
#include <set>
#include <sstream>

namespace autodriver::gate {

std::string_view to_string(FindingKind kind) {
  switch (kind) {
  case FindingKind::oops: return "oops";
  case FindingKind::bug: return "bug";
  case FindingKind::warning: return "warning";
  case FindingKind::kasan: return "kasan";
  case FindingKind::panic: return "panic";
  case FindingKind::lockdep: return "lockdep";
  case FindingKind::unknown_symbol: return "unknown-symbol";
  case FindingKind::invalid_module_format: return "invalid-module-format";
  case FindingKind::hung_task: return "hung-task";
  case FindingKind::rcu_stall: return "rcu-stall";
  case FindingKind::soft_lockup: return "soft-lockup";
  case FindingKind::ubsan: return "ubsan";
  }
  return "bug";
}

std::string decode_taint(long value) {
  // include/linux/panic.h TAINT_* bit order and letters (taint_flags[] in kernel/panic.c).
  static const char* k_letters = "PFSRMBUDAWCIOELKXTN";
  std::string out;
  for (int bit = 0; k_letters[bit] != '\0'; ++bit)
    if (value & (1L << bit)) out += k_letters[bit];
  return out;
}

nlohmann::json to_json(const ConsoleFinding& f) {
  return {{"kind", to_string(f.kind)}, {"line", f.line},       {"module", f.module},
          {"location", f.location},    {"excerpt", f.excerpt}, {"before_driver", f.before_driver}};
}

nlohmann::json to_json(const PciBinding& b) {
  return {{"slot", b.slot}, {"vendor", b.vendor}, {"device", b.device}, {"driver", b.driver}, {"module", b.module}};
}

namespace {

std::string strip_timestamp(std::string_view line) {
  static const std::regex k_ts(R"(^\s*\[\s*\d+\.\d+\]\s?)");
  std::string s(line);
  return std::regex_replace(s, k_ts, "", std::regex_constants::format_first_only);
}

bool has_timestamp(std::string_view line) {
  static const std::regex k_ts(R"(^\s*\[\s*\d+\.\d+\])");
  return std::regex_search(line.begin(), line.end(), k_ts);
}

struct Pattern {
  std::regex re;
  FindingKind kind;
};

const std::vector<Pattern>& patterns() {
  static const std::vector<Pattern> k = [] {
    std::vector<Pattern> p;
    auto add = [&](const char* re, FindingKind k2) { p.push_back({std::regex(re), k2}); };
    add(R"(^Kernel panic - not syncing)", FindingKind::panic);
    add(R"(^BUG: KASAN:)", FindingKind::kasan);
    add(R"(^BUG: KFENCE:)", FindingKind::kasan);
    add(R"(^UBSAN:)", FindingKind::ubsan);
    add(R"(^(?:watchdog: )?BUG: soft lockup)", FindingKind::soft_lockup);
    add(R"(^BUG: kernel NULL pointer dereference)", FindingKind::oops);
    add(R"(^BUG: unable to handle)", FindingKind::oops);
    add(R"(^Oops: )", FindingKind::oops);
    add(R"(^general protection fault)", FindingKind::oops);
    add(R"(^kernel BUG at )", FindingKind::bug);
    add(R"(^BUG: )", FindingKind::bug);
    add(R"(^BUG [\w.:-]+ \((?:Not tainted|Tainted:[^)]*)\): )", FindingKind::bug); // SLUB's debug checks
    add(R"(^WARNING: (?:possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|bad unlock balance))",
        FindingKind::lockdep);
    add(R"(^INFO: possible (?:irq lock inversion|recursive locking))", FindingKind::lockdep);
    add(R"(^WARNING: CPU: )", FindingKind::warning);
    add(R"(^WARNING: )", FindingKind::warning);
    add(R"(^(\S+): Unknown symbol (\S+))", FindingKind::unknown_symbol);
    add(R"(invalid module format)", FindingKind::invalid_module_format);
    add(R"(disagrees about version of symbol)", FindingKind::invalid_module_format);
    add(R"(: version magic '.*' should be)", FindingKind::invalid_module_format);
    add(R"(^INFO: task .* blocked for more than)", FindingKind::hung_task);
    add(R"(rcu: INFO: rcu_\w+ (?:self-)?detected)", FindingKind::rcu_stall);
    return p;
  }();
  return k;
}

// Kinds whose first line opens a multi-line report (excerpt follows until the end marker).
bool opens_report(FindingKind k) {
  return k == FindingKind::oops || k == FindingKind::bug || k == FindingKind::warning || k == FindingKind::kasan ||
         k == FindingKind::lockdep || k == FindingKind::panic || k == FindingKind::soft_lockup || k == FindingKind::hung_task ||
         k == FindingKind::rcu_stall || k == FindingKind::ubsan;
}

void parse_pci_marker(const std::string& rest, std::vector<PciBinding>& into) {
  // "pci SLOT vendor=0x.. device=0x.. driver=NAME module=NAME"
  std::istringstream ss(rest);
  PciBinding b;
  ss >> b.slot;
  std::string kv;
  while (ss >> kv) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "vendor") b.vendor = v;
    else if (k == "device") b.device = v;
    else if (k == "driver") b.driver = v;
    else if (k == "module") b.module = v;
  }
  into.push_back(b);
}

} // namespace

ConsoleReport parse_console(std::string_view log) {
  ConsoleReport rep;
  std::set<std::string> seen_kernel_lines;
  static const std::regex k_rip(R"(RIP: \d+:(\S+(?: \[\S+\])?))");
  static const std::regex k_warn_at(R"(^WARNING: CPU: \d+ PID: \d+ at (\S+) (\S+)(?: \[(\S+)\])?)");
  static const std::regex k_unknown(R"(^(\S+): Unknown symbol (\S+))");
  static const std::regex k_rip_mod(R"(\[(\w+)\]$)");

  constexpr std::size_t k_none = std::string::npos;
  std::size_t open_idx = k_none; // report being collected (index: the vector grows)
  int open_lines = 0;
  std::string insmod_capture; // module whose insmod output is being captured
  bool after_pci_before = false;
  bool driver_loading = false; // the first "insmod-begin" marker was seen

  for (auto raw_line : util::split_lines(log)) {
    std::string line(util::parsed_line(raw_line));
    auto marker = line.find("@@AD ");
    if (marker != std::string::npos) {
      std::istringstream ss(line.substr(marker + 5));
      std::string ev;
      ss >> ev;
      std::string rest;
      std::getline(ss, rest);
      rest = std::string(util::trim(rest));
      auto rc_of = [](const std::string& r) {
        auto p = r.find("rc=");
        return p == std::string::npos ? -1 : std::atoi(r.c_str() + p + 3);
      };
      auto first_word = [](const std::string& r) { return r.substr(0, r.find(' ')); };
      if (ev == "init") rep.reached_init = true;
      else if (ev == "done") rep.finished = true;
      else if (ev == "preload") rep.preloads.push_back({first_word(rest), rc_of(rest)});
      else if (ev == "insmod-begin") {
        insmod_capture = first_word(rest);
        driver_loading = true;
      } else if (ev == "insmod") {
        rep.insmods.push_back({first_word(rest), rc_of(rest)});
        insmod_capture.clear();
      } else if (ev == "rmmod") rep.rmmods.push_back({first_word(rest), rc_of(rest)});
      else if (ev == "repro") rep.repro_rc = rc_of(rest);
      else if (ev == "pci-before") after_pci_before = false;
      else if (ev == "pci-after") after_pci_before = true;
      else if (ev == "pci") parse_pci_marker(rest, after_pci_before ? rep.pci_after : rep.pci_before);
      else if (ev == "bound") parse_pci_marker(rest, rep.bound_after);
      else if (ev == "tainted") rep.tainted = std::atol(rest.c_str());
      continue;
    }
    bool kernel_line = has_timestamp(line);
    if (kernel_line) {
      // The live console and the final dmesg dump print the same lines: count each once.
      if (!seen_kernel_lines.insert(std::string(util::trim(line))).second) {
        continue;
      }
    } else if (!insmod_capture.empty()) {
      rep.insmod_output[insmod_capture] += line + "\n";
    }
    std::string text = strip_timestamp(line);
    if (open_idx != k_none) {
      static const std::regex k_new_report(
          R"(^(?:BUG: |BUG [\w.:-]+ \((?:Not tainted|Tainted:)|WARNING: |Kernel panic - not syncing|UBSAN:|INFO: task |kernel BUG at |watchdog: BUG|rcu: INFO))");
      ConsoleFinding& open = rep.findings[open_idx];
      bool ends = text.find("---[ end trace") != std::string::npos || text.find("---[ end Kernel panic") != std::string::npos;
      // A new headline closes the report ("Oops: 0002 [#1]" is not one: it continues a BUG: line).
      bool new_report = std::regex_search(text, k_new_report);
      if (!new_report || ends) {
        if (open_lines < 80) {
          open.excerpt += text + "\n";
          ++open_lines;
        }
        std::smatch m;
        if (open.location.empty() && std::regex_search(text, m, k_rip)) {
          open.location = m[1].str();
          std::smatch mm;
          if (std::regex_search(open.location, mm, k_rip_mod)) open.module = mm[1].str();
        }
        if (ends || open_lines >= 80) open_idx = k_none;
        continue;
      }
      open_idx = k_none;
    }
    for (const auto& p : patterns()) {
      std::smatch m;
      if (!std::regex_search(text, m, p.re)) continue;
      ConsoleFinding f;
      f.kind = p.kind;
      f.line = text;
      if (p.kind == FindingKind::unknown_symbol && std::regex_search(text, m, k_unknown)) f.module = m[1].str();
      if (p.kind == FindingKind::warning && std::regex_search(text, m, k_warn_at)) {
        f.location = m[1].str() + " " + m[2].str();
        if (m[3].matched) f.module = m[3].str();
      }
      f.excerpt = text + "\n";
      f.before_driver = !driver_loading;
      rep.findings.push_back(std::move(f));
      if (opens_report(p.kind)) {
        open_idx = rep.findings.size() - 1;
        open_lines = 1;
      }
      break;
    }
  }
  return rep;
}

} // namespace autodriver::gate
