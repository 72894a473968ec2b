#include "autodriver/corpus/mine_rules.hpp"

#include "autodriver/util/strings.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace autodriver::corpus {

namespace {

struct PathRule {
  const char* pattern; ///< fnmatch pattern; matches the path or any leading directory of it
  PathClass cls;
};

// First match wins. Core = the kernel's own API and its implementation; driver = code that uses it.
// Subsystem cores that live under drivers/ and sound/ come before the drivers/ and sound/ rows:
// a change to drivers/base/ or sound/core/ together with drivers using it is an API co-evolution.
// Everything else (arch code outside include/, net/ protocols, individual file systems, tools/,
// scripts/, Documentation/) is "other" and neither makes nor breaks a case.
constexpr auto k_rules = std::to_array<PathRule>({
    // The API: all headers, including uapi, asm-generic and per-arch asm headers.
    {"include", PathClass::core},
    {"arch/*/include", PathClass::core},
    // Core kernel.
    {"kernel", PathClass::core},
    {"mm", PathClass::core},
    {"lib", PathClass::core},
    {"block", PathClass::core},
    {"init", PathClass::core},
    {"ipc", PathClass::core},
    {"virt", PathClass::core},
    {"io_uring", PathClass::core},
    {"security", PathClass::core},
    {"crypto", PathClass::core},
    {"rust", PathClass::core},
    // VFS and file-system infrastructure, not the individual file systems (fs/ext4, fs/nfs, ...).
    {"fs/*.c", PathClass::core},
    {"fs/*.h", PathClass::core},
    {"fs/iomap", PathClass::core},
    {"fs/proc", PathClass::core},
    {"fs/sysfs", PathClass::core},
    {"fs/kernfs", PathClass::core},
    {"fs/debugfs", PathClass::core},
    {"fs/configfs", PathClass::core},
    {"fs/notify", PathClass::core},
    {"fs/quota", PathClass::core},
    {"fs/crypto", PathClass::core},
    {"fs/verity", PathClass::core},
    {"fs/netfs", PathClass::core},
    // Networking core and the driver-facing frameworks (ethtool, devlink, cfg80211, mac80211).
    {"net/core", PathClass::core},
    {"net/ethtool", PathClass::core},
    {"net/netlink", PathClass::core},
    {"net/devlink", PathClass::core},
    {"net/wireless", PathClass::core},
    {"net/mac80211", PathClass::core},
    // Subsystem cores under drivers/ and sound/.
    {"drivers/base", PathClass::core},
    {"drivers/of", PathClass::core},
    {"drivers/dma-buf", PathClass::core},
    {"drivers/usb/core", PathClass::core},
    {"drivers/pci/*.c", PathClass::core},
    {"drivers/pci/*.h", PathClass::core},
    {"drivers/gpu/drm/drm_*.c", PathClass::core},
    {"drivers/gpu/drm/drm_*.h", PathClass::core},
    {"drivers/i2c/i2c-core*", PathClass::core},
    {"drivers/spi/spi.c", PathClass::core},
    {"drivers/mmc/core", PathClass::core},
    {"drivers/media/v4l2-core", PathClass::core},
    {"drivers/media/dvb-core", PathClass::core},
    {"drivers/media/mc", PathClass::core},
    {"drivers/gpio/gpiolib*", PathClass::core},
    {"drivers/clk/clk.c", PathClass::core},
    {"drivers/regulator/core.c", PathClass::core},
    {"drivers/iio/industrialio-*", PathClass::core},
    {"drivers/hwmon/hwmon.c", PathClass::core},
    {"drivers/input/input.c", PathClass::core},
    {"drivers/tty/tty_*", PathClass::core},
    {"drivers/tty/serial/serial_core.c", PathClass::core},
    {"drivers/net/phy/phy.c", PathClass::core},
    {"drivers/net/phy/phy_device.c", PathClass::core},
    {"drivers/net/phy/mdio_bus.c", PathClass::core},
    {"drivers/scsi/scsi_debug.c", PathClass::driver},
    {"drivers/scsi/scsi*", PathClass::core},
    {"drivers/virtio/virtio.c", PathClass::core},
    {"drivers/virtio/virtio_ring.c", PathClass::core},
    {"drivers/mtd/mtdcore.c", PathClass::core},
    {"drivers/power/supply/power_supply_core.c", PathClass::core},
    {"drivers/thermal/thermal_core.c", PathClass::core},
    {"drivers/watchdog/watchdog_core.c", PathClass::core},
    {"drivers/leds/led-class.c", PathClass::core},
    {"drivers/leds/led-core.c", PathClass::core},
    {"drivers/pwm/core.c", PathClass::core},
    {"sound/core", PathClass::core},
    {"sound/soc/soc-*", PathClass::core},
    // Drivers.
    {"drivers", PathClass::driver},
    {"sound", PathClass::driver},
});

bool is_trailer_line(std::string_view line, std::string_view* key, std::string_view* value) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= line.size()) return false;
  std::string_view k = line.substr(0, colon);
  if (!std::isalpha(static_cast<unsigned char>(k.front()))) return false;
  for (char c : k)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  if (line[colon + 1] != ' ' && line[colon + 1] != '\t') return false;
  if (key) *key = k;
  if (value) *value = util::trim(line.substr(colon + 1));
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

} // namespace

std::string_view to_string(PathClass c) {
  switch (c) {
  case PathClass::core: return "core";
  case PathClass::driver: return "driver";
  case PathClass::other: return "other";
  }
  return "other";
}

PathClass classify_path(std::string_view path) {
  std::string p(path);
  for (const auto& rule : k_rules)
    if (fnmatch(rule.pattern, p.c_str(), FNM_PATHNAME | FNM_LEADING_DIR) == 0) return rule.cls;
  return PathClass::other;
}

bool is_source_path(std::string_view path) {
  for (std::string_view ext : {".c", ".h", ".S", ".rs"})
    if (path.ends_with(ext)) return true;
  return false;
}

std::string driver_unit_of(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string(".") : std::string(path.substr(0, slash));
}

std::string_view to_string(CommitKind k) {
  switch (k) {
  case CommitKind::mined: return "mined";
  case CommitKind::treewide: return "treewide";
  case CommitKind::merge: return "merge";
  case CommitKind::root: return "root";
  case CommitKind::whitespace_only: return "whitespace_only";
  case CommitKind::core_only: return "core_only";
  case CommitKind::driver_only: return "driver_only";
  case CommitKind::unrelated: return "unrelated";
  }
  return "unrelated";
}

CommitKind classify_commit(std::span<const ChangedFile> files, std::size_t treewide_threshold) {
  bool any_content = false, core_src = false, driver_src = false;
  std::size_t driver_files = 0;
  for (const auto& f : files) {
    if (!f.content_changed) continue;
    any_content = true;
    PathClass c = classify_path(f.path);
    if (c == PathClass::driver) ++driver_files;
    if (!is_source_path(f.path)) continue;
    core_src |= c == PathClass::core;
    driver_src |= c == PathClass::driver;
  }
  if (!files.empty() && !any_content) return CommitKind::whitespace_only;
  if (core_src && driver_src) return driver_files > treewide_threshold ? CommitKind::treewide : CommitKind::mined;
  if (core_src) return CommitKind::core_only;
  if (driver_src) return CommitKind::driver_only;
  return CommitKind::unrelated;
}

Trailers parse_trailers(std::string_view message) {
  Trailers t;
  auto lines = util::split_lines(message);
  // Paragraphs after the subject paragraph.
  std::size_t i = 0;
  while (i < lines.size() && !util::trim(lines[i]).empty()) ++i;
  while (i < lines.size()) {
    while (i < lines.size() && util::trim(lines[i]).empty()) ++i;
    std::size_t start = i;
    while (i < lines.size() && !util::trim(lines[i]).empty()) ++i;
    std::size_t trailer_lines = 0;
    for (std::size_t j = start; j < i; ++j) trailer_lines += is_trailer_line(util::trim(lines[j]), nullptr, nullptr);
    // A trailer block may hold a few notes ("[ rebased ]", continuation lines): most lines, not all.
    if (i == start || trailer_lines * 2 < i - start) continue;
    for (std::size_t j = start; j < i; ++j) {
      std::string_view key, value;
      if (!is_trailer_line(util::trim(lines[j]), &key, &value)) continue;
      std::vector<std::string>* dst = nullptr;
      if (iequals(key, "Fixes")) dst = &t.fixes;
      else if (iequals(key, "Link")) dst = &t.link;
      else if (iequals(key, "Closes")) dst = &t.closes;
      else if (iequals(key, "Signed-off-by")) dst = &t.signed_off_by;
      else if (iequals(key, "Reported-by")) dst = &t.reported_by;
      if (dst) dst->emplace_back(value);
    }
  }
  return t;
}

std::string subject_of(std::string_view message) {
  auto nl = message.find('\n');
  return std::string(util::trim(message.substr(0, nl)));
}

bool is_safe_relative_path(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    auto next = path.find('/', pos);
    if (next == std::string_view::npos) next = path.size();
    std::string_view comp = path.substr(pos, next - pos);
    if (comp.empty() || comp == "." || comp == "..") return false;
    pos = next + 1;
  }
  return true;
}

} // namespace autodriver::corpus
