#include "autodriver/loop/port.hpp"

#include "autodriver/loop/builder.hpp"
#include "autodriver/loop/port_session.hpp"

#include <filesystem>

namespace autodriver::loop {

namespace fs = std::filesystem;

util::Expected<PortReport> run_port(const PortRequest& request, const PortProgressFn& progress) {
  return run_port(request, progress, PortDeps{});
}

util::Expected<PortReport> run_port(const PortRequest& request, const PortProgressFn& progress, PortDeps deps) {
  PortSession session(request, progress, std::move(deps));
  return session.run();
}

nlohmann::json to_json(const PortReport& r, const PortRequest& req) {
  nlohmann::json acc = nlohmann::json::array();
  for (const auto& a : r.accepted) {
    auto e = propose::to_json(a.edit);
    e["errors_before"] = a.errors_before;
    e["errors_after"] = a.errors_after;
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [f, _] : a.snapshot) files.push_back(f);
    e["files"] = files;
    acc.push_back(e);
  }
  return {{"schema", "autodriver.port"},
          {"schema_version", k_port_schema_version},
          {"ok", r.ok},
          {"status", r.status},
          {"tree", fs::absolute(req.subdir.empty() ? req.tree : req.tree / req.subdir).lexically_normal().string()},
          {"root", r.root.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.root.string())},
          {"to", req.to},
          {"from", req.from},
          {"reference", r.reference},
          {"out", req.out.empty() ? "" : fs::absolute(req.out).string()},
          {"initial_errors", r.initial_errors},
          {"final_errors", r.final_errors},
          {"accepted", acc},
          {"remaining", r.remaining},
          {"final_build", r.final_build},
          {"integrity", r.integrity},
          {"gates", r.gates},
          {"compat", r.compat},
          {"changes", r.changes},
          {"patches", r.patches},
          {"checkpatch", r.checkpatch},
          {"steps", r.steps},
          {"llm", r.llm},
          {"elapsed_ms", r.elapsed.count()}};
}

} // namespace autodriver::loop
