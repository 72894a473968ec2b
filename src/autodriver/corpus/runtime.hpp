#pragma once
// Runtime testability of a driver: a QEMU-emulated PCI device its id table matches ("device"),
// a module that loads standalone with no device ("virtual"), or neither ("none").

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::corpus {

struct QemuPciDevice {
  std::string name; ///< `-device` name
  unsigned vendor = 0;
  unsigned device = 0;
};

/// QEMU 7.2's PCI devices with the vendor:device they present (verified with `info pci`, see the .cpp).
const std::vector<QemuPciDevice>& qemu_pci_devices();

struct PciId {
  unsigned vendor = 0;
  unsigned device = 0;
  bool operator==(const PciId&) const = default;
};

/// Object-like macros "#define NAME 0x1234" of a source text, added to `defines`.
void collect_numeric_defines(std::string_view text, std::map<std::string, unsigned>& defines);

/// Function-like macro bodies "#define NAME(args) body" of a source text.
void collect_function_macros(std::string_view text, std::map<std::string, std::string>& macros);

/// The (vendor, device) pairs of every `MODULE_DEVICE_TABLE(pci, table)` in `source`: entries written
/// with PCI_DEVICE, PCI_VDEVICE, PCI_DEVICE_SUB, raw { vendor, device, ... } initializers or a
/// driver macro wrapping those. Identifiers resolve through `defines` (pci_ids.h plus the driver's own).
std::vector<PciId> pci_ids_in(std::string_view source, const std::map<std::string, unsigned>& defines,
                              const std::map<std::string, std::string>& macros);

struct Runtime {
  std::string kind = "none";             ///< "device", "virtual", "none"
  std::string qemu_device;               ///< for "device"
  std::vector<std::string> qemu_devices; ///< every matching QEMU device
  std::string reason;
};

/// Decides from the driver's sources (all text concatenated per file) and its PCI ids.
Runtime runtime_testability(const std::vector<std::string>& sources, const std::vector<PciId>& ids);

nlohmann::json to_json(const Runtime& r);

} // namespace autodriver::corpus
