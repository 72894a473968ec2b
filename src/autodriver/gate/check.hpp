#pragma once
// `check`: run the requested gates for every requested kernel on scratch copies of a tree.

#include "autodriver/core/verdict.hpp"
#include "autodriver/gate/gate.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace autodriver::gate {

/// Version of the `check --json` document (docs/check-json.md). Bump on incompatible changes.
inline constexpr int k_check_schema_version = 1;

struct KernelCheck {
  std::string kernel; ///< as requested
  std::string release;
  bool ok = false;
  std::vector<core::GateResult> gates;
};

struct CheckReport {
  bool ok = false;
  std::filesystem::path tree; ///< the driver's folder (absolute)
  std::filesystem::path root; ///< the folder copied with it when that was not the driver's own; else empty
  std::vector<KernelCheck> kernels;
  std::chrono::milliseconds elapsed{0};
};

using GateProgressFn = std::function<void(const std::string& kernel, const core::GateResult& result)>;

/// Validates the request (directory, makefile, kernels, images) and returns a config/not_found
/// Error with one clear line when it is unusable; otherwise runs the gates.
util::Expected<CheckReport> run_check(const CheckRequest& request, const GateProgressFn& progress);

nlohmann::json to_json(const CheckReport& report, const CheckRequest& request);

} // namespace autodriver::gate
