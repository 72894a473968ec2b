#pragma once
// Parse a QEMU serial console log: the /init script's @@AD markers and the kernel's findings
// (oops, BUG, WARNING, KASAN, panic, lockdep, Unknown symbol, invalid module format, taint).

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::gate {

/// Closed set; numbers persisted, never reused.
enum class FindingKind : int {
  oops = 1,
  bug = 2,
  warning = 3,
  kasan = 4,
  panic = 5,
  lockdep = 6,
  unknown_symbol = 7,
  invalid_module_format = 8,
  hung_task = 9,
  rcu_stall = 10,
  soft_lockup = 11,
  ubsan = 12,
};

std::string_view to_string(FindingKind kind);

struct ConsoleFinding {
  FindingKind kind;
  std::string line;           ///< the headline, timestamp removed
  std::string module;         ///< module named by "RIP: ... [mod]" or "mod: Unknown symbol", if any
  std::string location;       ///< "func+0x12/0x40 [mod]" from RIP, or "file:line" from WARNING
  std::string excerpt;        ///< the report's lines (call trace included), capped
  bool before_driver = false; ///< seen before the first of the driver's own modules began loading
};

struct PciBinding {
  std::string slot;
  std::string vendor;
  std::string device;
  std::string driver;
  std::string module; ///< module providing the driver (empty when built in)
};

struct ConsoleReport {
  bool reached_init = false;                         ///< "@@AD init" seen: the kernel booted to our /init
  bool finished = false;                             ///< "@@AD done" seen: /init ran to the end
  std::vector<std::pair<std::string, int>> preloads; ///< helper/dependency insmods and their exit codes
  std::vector<std::pair<std::string, int>> insmods;  ///< the driver's own modules
  std::map<std::string, std::string> insmod_output;  ///< what insmod printed, per module
  std::vector<std::pair<std::string, int>> rmmods;
  std::optional<int> repro_rc;        ///< "@@AD repro rc=N": the reproducer ran and exited N (124: timed out)
  std::vector<PciBinding> pci_before; ///< bindings before the driver's modules were loaded
  std::vector<PciBinding> pci_after;
  std::vector<PciBinding> bound_after; ///< drivers of modules bound on other buses ("virtio/virtio0" as slot)
  std::optional<long> tainted;
  std::vector<ConsoleFinding> findings;
};

ConsoleReport parse_console(std::string_view log);

/// "OE" for 12288: the kernel's taint letters for the set bits.
std::string decode_taint(long value);

nlohmann::json to_json(const ConsoleFinding& f);
nlohmann::json to_json(const PciBinding& b);

} // namespace autodriver::gate
