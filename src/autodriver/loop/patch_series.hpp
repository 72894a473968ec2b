#pragma once
// The reviewable result: one `git format-patch` patch per accepted API change.

#include "autodriver/loop/port.hpp"

namespace autodriver::loop {

/// Builds a scratch git repository (original tree, then one commit per accepted edit with a
/// message saying what changed in the kernel and how it was validated) and writes the series
/// as PATCH_DIR/*.patch. Returns the patch paths.
util::Expected<std::vector<std::string>> write_patch_series(const PortRequest& req, const PortReport& rep,
                                                            const std::filesystem::path& repo,
                                                            const std::filesystem::path& patch_dir);

/// The kernel's own style check of the series: `scripts/checkpatch.pl --strict` of the kernel
/// source `source` on each patch (what the patches add and their descriptions). A report, not a
/// verdict on the port: {"ran", "errors", "warnings", "checks", "patches": [{"patch", "findings"}]};
/// {"ran": false, "why"} without the script.
nlohmann::json checkpatch_series(const std::vector<std::string>& patches, const std::filesystem::path& source);

} // namespace autodriver::loop
