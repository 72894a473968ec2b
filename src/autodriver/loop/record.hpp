#pragma once
// run_port with a record in the run store: the run row at the start, each step as it happens,
// the outcome, the patches and verdict by content hash, and KB entries for solved diagnostics.

#include "autodriver/loop/port.hpp"

#include <cstdint>
#include <optional>

namespace autodriver::loop {

struct RecordOptions {
  std::filesystem::path store; ///< empty = store::default_store_path()
  std::string command = "port";
  std::string case_id;
  std::optional<std::int64_t> parent_run;
  nlohmann::json extra_args = nlohmann::json::object(); ///< merged into the recorded args (rerun: from_step)
};

struct RecordedPort {
  util::Expected<PortReport> report;
  std::int64_t run_id = 0;
};

/// Opens the store, records the run around run_port. A store that cannot be opened (or has a
/// newer schema) is an error before anything runs; a failed write during the run is logged
/// and the port goes on (the loop's result matters more than its record).
util::Expected<RecordedPort> run_port_recorded(const PortRequest& request, const PortProgressFn& progress,
                                               const RecordOptions& options);

/// The request's effective options as recorded in runs.args, and back (for rerun).
nlohmann::json request_to_json(const PortRequest& request);
PortRequest request_from_json(const nlohmann::json& args);

} // namespace autodriver::loop
