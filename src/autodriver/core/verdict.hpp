#pragma once
// Verdicts: what a gate concluded about a tree. "The patch is wrong" is a Verdict,
// "the tool broke" is an Error; a GateResult can carry either (infra_error).

#include "autodriver/core/diagnostic.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::core {

struct GateResult {
  std::string gate;   ///< "build", "sparse", "boot", ...
  std::string kernel; ///< release
  bool ok = false;
  bool skipped = false;                   ///< not applicable (e.g. nothing to boot because the build failed)
  std::string summary;                    ///< one line for humans
  std::optional<std::string> infra_error; ///< the tool itself failed (timeout of make is not infra)
  std::vector<Diagnostic> diagnostics;
  nlohmann::json details = nlohmann::json::object();
  std::chrono::milliseconds elapsed{0};
};

nlohmann::json to_json(const GateResult& g);

} // namespace autodriver::core
