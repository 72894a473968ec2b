#include "autodriver/core/verdict.hpp"

namespace autodriver::core {

nlohmann::json to_json(const GateResult& g) {
  nlohmann::json diags = nlohmann::json::array();
  for (const auto& d : g.diagnostics) diags.push_back(to_json(d));
  nlohmann::json j = {{"gate", g.gate},       {"kernel", g.kernel},   {"ok", g.ok},
                      {"skipped", g.skipped}, {"summary", g.summary}, {"elapsed_ms", g.elapsed.count()},
                      {"diagnostics", diags}, {"details", g.details}};
  j["infra_error"] = g.infra_error ? nlohmann::json(*g.infra_error) : nlohmann::json(nullptr);
  return j;
}

} // namespace autodriver::core
