#include "autodriver/corpus/runtime.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <optional>
#include <regex>

namespace autodriver::corpus {

const std::vector<QemuPciDevice>& qemu_pci_devices() {
  // Verified on QEMU 7.2 (Debian 12) by starting `qemu-system-x86_64 -nodefaults -S -machine pc
  // -device <name>` and reading the "PCI device vvvv:dddd" line of the monitor's `info pci`
  // (nvme needs serial=x, kvaser_pci a can-bus object). Note nvme is 1b36:0010 here, not the
  // older 8086:5845; megasas is 1000:0060 and megasas-gen2 1000:0079.
  static const std::vector<QemuPciDevice> k_devices = {
      {"e1000", 0x8086, 0x100e},
      {"e1000-82544gc", 0x8086, 0x100c},
      {"e1000-82545em", 0x8086, 0x100f},
      {"e1000e", 0x8086, 0x10d3},
      {"rtl8139", 0x10ec, 0x8139},
      {"ne2k_pci", 0x10ec, 0x8029},
      {"pcnet", 0x1022, 0x2000},
      {"vmxnet3", 0x15ad, 0x07b0},
      {"tulip", 0x1011, 0x0019},
      {"i82559er", 0x8086, 0x1209},
      {"i82557b", 0x8086, 0x1229},
      {"i82801", 0x8086, 0x2449},
      {"rocker", 0x1b36, 0x0006},
      {"kvaser_pci", 0x10e8, 0x8406},
      {"nvme", 0x1b36, 0x0010},
      {"ich9-ahci", 0x8086, 0x2922},
      {"megasas", 0x1000, 0x0060},
      {"megasas-gen2", 0x1000, 0x0079},
      {"mptsas1068", 0x1000, 0x0054},
      {"lsi53c895a", 0x1000, 0x0012},
      {"lsi53c810", 0x1000, 0x0001},
      {"am53c974", 0x1022, 0x2020},
      {"pvscsi", 0x15ad, 0x07c0},
      {"qemu-xhci", 0x1b36, 0x000d},
      {"nec-usb-xhci", 0x1033, 0x0194},
      {"usb-ehci", 0x8086, 0x24cd},
      {"ich9-usb-ehci1", 0x8086, 0x293a},
      {"ich9-usb-uhci1", 0x8086, 0x2934},
      {"piix3-usb-uhci", 0x8086, 0x7020},
      {"pci-ohci", 0x106b, 0x003f},
      {"intel-hda", 0x8086, 0x2668},
      {"ich9-intel-hda", 0x8086, 0x293e},
      {"AC97", 0x8086, 0x2415},
      {"ES1370", 0x1274, 0x5000},
      {"edu", 0x1234, 0x11e8},
      {"pvpanic-pci", 0x1b36, 0x0011},
      {"i6300esb", 0x8086, 0x25ab},
      {"sdhci-pci", 0x1b36, 0x0007},
      {"pci-serial", 0x1b36, 0x0002},
      {"pci-serial-2x", 0x1b36, 0x0003},
      {"bochs-display", 0x1234, 0x1111},
      {"cirrus-vga", 0x1013, 0x00b8},
      {"ati-vga", 0x1002, 0x5046},
      {"qxl", 0x1b36, 0x0100},
      {"vmware-svga", 0x15ad, 0x0405},
      {"pci-testdev", 0x1b36, 0x0005},
  };
  return k_devices;
}

namespace {

constexpr unsigned k_any_id = 0xffffffffU;

std::optional<unsigned> parse_number(std::string_view s) {
  s = util::trim(s);
  while (!s.empty() && s.front() == '(' && s.back() == ')') s = util::trim(s.substr(1, s.size() - 2));
  if (s.empty()) return std::nullopt;
  if (s == "PCI_ANY_ID" || s == "~0" || s == "(~0)") return k_any_id;
  std::string t(s);
  while (!t.empty() && (t.back() == 'u' || t.back() == 'U' || t.back() == 'l' || t.back() == 'L')) t.pop_back();
  try {
    std::size_t used = 0;
    unsigned long v = std::stoul(t, &used, 0);
    if (used != t.size()) return std::nullopt;
    return static_cast<unsigned>(v);
  } catch (...) {
    return std::nullopt;
  }
}

std::string strip_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      auto end = text.find("*/", i + 2);
      if (end == std::string_view::npos) break;
      i = end + 1;
      out += ' ';
    } else if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      auto end = text.find('\n', i);
      if (end == std::string_view::npos) break;
      i = end - 1;
    } else {
      out += text[i];
    }
  }
  return out;
}

/// Splits at commas outside () and {}.
std::vector<std::string> split_top(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '{') ++depth;
    if (c == ')' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(util::trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!util::trim(cur).empty()) out.emplace_back(util::trim(cur));
  return out;
}

std::optional<unsigned> resolve(std::string_view tok, const std::map<std::string, unsigned>& defines) {
  if (auto n = parse_number(tok)) return n;
  auto it = defines.find(std::string(util::trim(tok)));
  if (it != defines.end()) return it->second;
  return std::nullopt;
}

/// One level of function-like macro expansion with parameter substitution.
std::string expand_call(const std::string& entry, const std::map<std::string, std::string>& macros) {
  static const std::regex k_call(R"(^\s*([A-Za-z_]\w*)\s*\(([\s\S]*)\)\s*$)");
  std::smatch m;
  if (!std::regex_match(entry, m, k_call)) return entry;
  auto it = macros.find(m[1].str());
  if (it == macros.end()) return entry;
  auto sep = it->second.find('\x01');
  auto params = split_top(std::string_view(it->second).substr(0, sep));
  std::string body = it->second.substr(sep + 1);
  auto args = split_top(m[2].str());
  for (std::size_t i = 0; i < params.size() && i < args.size(); ++i) {
    std::regex p("\\b" + params[i] + "\\b");
    body = std::regex_replace(body, p, args[i]);
  }
  return body;
}

} // namespace

void collect_numeric_defines(std::string_view text, std::map<std::string, unsigned>& defines) {
  static const std::regex k_def(
      R"(^\s*#\s*define\s+([A-Za-z_]\w*)\s+(\(?\s*(?:0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*)\s*\)?)\s*(?:/[*/].*)?$)");
  std::vector<std::pair<std::string, std::string>> aliases;
  for (auto line : util::split_lines(text)) {
    if (line.find("define") == std::string_view::npos) continue;
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_match(line.begin(), line.end(), m, k_def)) continue;
    if (auto n = parse_number(m[2].str())) defines[m[1].str()] = *n;
    else aliases.emplace_back(m[1].str(), std::string(util::trim(m[2].str())));
  }
  for (int pass = 0; pass < 3; ++pass)
    for (const auto& [name, target] : aliases)
      if (auto it = defines.find(target); it != defines.end()) defines[name] = it->second;
}

void collect_function_macros(std::string_view text, std::map<std::string, std::string>& macros) {
  static const std::regex k_def(R"(^\s*#\s*define\s+([A-Za-z_]\w*)\(([^)]*)\)\s+(.*)$)");
  std::string joined;
  for (auto line : util::split_lines(text)) {
    std::string l(line);
    if (!joined.empty()) {
      joined += " " + l;
    } else if (l.find("#") != std::string::npos && l.find("define") != std::string::npos) {
      joined = l;
    } else {
      continue;
    }
    if (!joined.empty() && joined.back() == '\\') {
      joined.pop_back();
      continue;
    }
    std::smatch m;
    if (std::regex_match(joined, m, k_def)) macros[m[1].str()] = m[2].str() + '\x01' + m[3].str();
    joined.clear();
  }
}

std::vector<PciId> pci_ids_in(std::string_view source, const std::map<std::string, unsigned>& defines,
                              const std::map<std::string, std::string>& macros) {
  std::string text = strip_comments(source);
  std::vector<PciId> out;
  static const std::regex k_table(R"(MODULE_DEVICE_TABLE\s*\(\s*pci\s*,\s*([A-Za-z_]\w*)\s*\))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), k_table); it != std::sregex_iterator(); ++it) {
    std::string name = (*it)[1].str();
    std::regex def("\\b" + name + R"(\s*\[[^\]]*\]\s*=\s*\{)");
    std::smatch m;
    if (!std::regex_search(text, m, def)) continue;
    std::size_t start = static_cast<std::size_t>(m.position(0) + m.length(0));
    int depth = 1;
    std::size_t i = start;
    for (; i < text.size() && depth > 0; ++i) {
      if (text[i] == '{') ++depth;
      if (text[i] == '}') --depth;
    }
    std::string body = text.substr(start, i - start - 1);
    for (auto entry : split_top(body)) {
      if (entry.size() >= 2 && entry.front() == '{' && entry.back() == '}') entry = entry.substr(1, entry.size() - 2);
      for (int level = 0; level < 3; ++level) {
        auto parts = split_top(entry);
        if (parts.empty()) break;
        auto e = expand_call(parts[0], macros);
        if (e == parts[0]) break;
        entry = e;
        for (std::size_t k = 1; k < parts.size(); ++k) entry += ", " + parts[k];
        if (entry.size() >= 2 && entry.front() == '{' && entry.back() == '}') entry = entry.substr(1, entry.size() - 2);
      }
      auto parts = split_top(entry);
      if (parts.empty()) continue;
      std::string first = parts[0];
      static const std::regex k_std(
          R"(^\s*(PCI_DEVICE|PCI_DEVICE_SUB|PCI_VDEVICE|PCI_DEVICE_DATA|PCI_VDEVICE_SUB)\s*\(([\s\S]*)\)\s*$)");
      std::smatch sm;
      std::optional<unsigned> v, d;
      if (std::regex_match(first, sm, k_std)) {
        auto args = split_top(sm[2].str());
        if (args.size() < 2) continue;
        std::string kind = sm[1].str();
        if (kind == "PCI_VDEVICE" || kind == "PCI_VDEVICE_SUB") {
          v = resolve("PCI_VENDOR_ID_" + args[0], defines);
          d = resolve(args[1], defines);
        } else if (kind == "PCI_DEVICE_DATA") {
          v = resolve("PCI_VENDOR_ID_" + args[0], defines);
          d = resolve("PCI_DEVICE_ID_" + args[0] + "_" + args[1], defines);
        } else {
          v = resolve(args[0], defines);
          d = resolve(args[1], defines);
        }
      } else if (parts.size() >= 2) {
        // Raw initializer: { vendor, device, subvendor, subdevice, class, mask, data }, possibly designated.
        auto strip = [](std::string s) {
          if (auto eq = s.find('='); eq != std::string::npos && s.starts_with(".")) s = s.substr(eq + 1);
          return s;
        };
        v = resolve(strip(parts[0]), defines);
        d = resolve(strip(parts[1]), defines);
      }
      if (v && d && *v != 0 && *v != k_any_id) out.push_back({*v, *d});
    }
  }
  return out;
}

Runtime runtime_testability(const std::vector<std::string>& sources, const std::vector<PciId>& ids) {
  Runtime r;
  for (const auto& dev : qemu_pci_devices())
    for (const auto& id : ids)
      if (id.vendor == dev.vendor && id.device == dev.device) {
        r.qemu_devices.push_back(dev.name);
        break;
      }
  if (!r.qemu_devices.empty()) {
    r.kind = "device";
    r.qemu_device = r.qemu_devices.front();
    r.reason = fmt::format("PCI id table matches QEMU device {}", r.qemu_device);
    return r;
  }
  static const std::regex k_table(R"(MODULE_DEVICE_TABLE\s*\(\s*(\w+))");
  static const std::regex k_bus(
      R"(\b(module_\w+_driver|\w+_register_driver|i2c_add_driver|usb_register|pci_register_driver|platform_driver_probe|serio_register_driver|phy_drivers_register|mdio_driver_register|sdio_register_driver|pcmcia_register_driver|virtio_register_driver|hid_register_driver|acpi_bus_register_driver)\s*\()");
  static const std::regex k_own_device(
      R"(\b(platform_device_register|platform_device_alloc|platform_device_register_simple|platform_create_bundle)\s*\()");
  // Port I/O, DMI or CPU-model checks mean the module looks for specific hardware before it loads.
  static const std::regex k_hw_probe(
      R"(\b(inb|inb_p|inw|inl|outb|outb_p|request_region|request_muxed_region|superio_enter|dmi_check_system|dmi_first_match|x86_match_cpu|acpi_evaluate_object|wmi_has_guid)\s*\()");
  bool table = false, bus = false, own = false, hw_probe = false;
  std::string bus_name, probe_name;
  for (const auto& s : sources) {
    std::smatch m;
    if (std::regex_search(s, m, k_table)) table = true;
    if (std::regex_search(s, m, k_bus)) {
      bus = true;
      if (bus_name.empty()) bus_name = m[1].str();
    }
    if (std::regex_search(s, k_own_device)) own = true;
    if (std::regex_search(s, m, k_hw_probe)) {
      hw_probe = true;
      if (probe_name.empty()) probe_name = m[1].str();
    }
  }
  if (!table && (!bus || own) && hw_probe) {
    r.reason = "probes for specific hardware (" + probe_name + ")";
    return r;
  }
  if (!table && (!bus || own)) {
    r.kind = "virtual";
    r.reason = own ? "registers its own platform device (loads standalone)" : "no device id table, no bus driver";
    return r;
  }
  r.reason = !ids.empty() ? "PCI ids match no QEMU device"
             : table      ? "device id table for hardware QEMU does not emulate"
                          : "registers a bus driver (" + bus_name + ") without an emulated device";
  return r;
}

nlohmann::json to_json(const Runtime& r) {
  nlohmann::json j = {{"kind", r.kind}, {"reason", r.reason}};
  if (r.kind == "device") {
    j["qemu_device"] = r.qemu_device;
    j["qemu_devices"] = r.qemu_devices;
  }
  return j;
}

} // namespace autodriver::corpus
