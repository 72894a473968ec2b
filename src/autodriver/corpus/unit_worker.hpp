#pragma once
// Deciding one unit: build it from the old tree against the old and new kernels; when the new
// build fails, assemble the case (golden, diagnostics, taxonomy, API delta, runtime) and write it.

#include "autodriver/core/kernel.hpp"
#include "autodriver/corpus/dkms.hpp"
#include "autodriver/corpus/driver_unit.hpp"
#include "autodriver/corpus/taxonomy.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

namespace autodriver::corpus {

/// Everything shared by the workers (read-only during the scan).
struct ScanContext {
  core::Kernel from;
  core::Kernel to;
  std::filesystem::path from_tree; ///< extracted linux-source of `from`
  std::filesystem::path to_tree;
  std::string from_version; ///< "6.1.158" (the source tree's Makefile)
  std::string to_version;
  std::map<std::string, DriverUnit> to_units_by_path;
  std::map<std::string, std::vector<std::string>> to_paths_by_module;
  std::map<std::string, unsigned> pci_defines; ///< include/linux/pci_ids.h of the old tree
  HeaderIndex from_headers{""};
  HeaderIndex to_headers{""};
  std::filesystem::path corpus;
  std::chrono::seconds build_timeout{300};
};

/// A decided unit: the journal entry ("outcome": "case", "builds-both", "not-buildable", "fails-both-timeout").
using Outcome = nlohmann::json;

/// In-tree unit. An Error means the tool could not decide (interrupted, disk full, make missing).
util::Expected<Outcome> decide_in_tree_unit(const ScanContext& ctx, const DriverUnit& unit);

/// A Debian DKMS package ("dkms/<name>").
util::Expected<Outcome> decide_dkms_unit(const ScanContext& ctx, const std::string& package);

/// "6.1.158" from a source tree's top Makefile (VERSION, PATCHLEVEL, SUBLEVEL).
std::string source_tree_version(const std::filesystem::path& tree);

} // namespace autodriver::corpus
