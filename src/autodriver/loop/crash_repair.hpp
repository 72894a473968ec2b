#pragma once
// Crash repair validated by reproduction (issue 18 item 3): the crash is first reproduced with the
// unchanged driver (boot the kernel, load the module, probe on the device), then each candidate
// repair (crash/repair.hpp) is built and run N times; one is kept only when the crash is gone in
// N of N runs and the boot gate passes (module loads, binds the device, no oops, BUG or WARNING).

#include "autodriver/crash/localize.hpp"
#include "autodriver/crash/report.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace autodriver::loop {

struct CrashRepairRequest {
  std::filesystem::path driver; ///< never written
  std::string kernel;
  std::string device;        ///< QEMU -device the driver probes on (empty: load only)
  std::string repro;         ///< run in the guest once the module is loaded (gate::CheckRequest::repro)
  int runs = 3;              ///< N: boots of a candidate, all of which must be clean
  std::filesystem::path out; ///< OUT/tree, OUT/repair.patch, OUT/repair.json
  std::chrono::seconds build_timeout{600};
};

/// The repair document (schema autodriver.crash-repair): whether the crash reproduced, each
/// candidate with its runs, and the one kept. An Error only when the tool could not run.
util::Expected<nlohmann::json> repair_crash(const CrashRepairRequest& req, const crash::CrashReport& report,
                                            const std::vector<crash::Hypothesis>& hyps,
                                            const std::function<void(const std::string&)>& note);

/// The unchanged driver's boot `again` reproduced `report`: a report with the same title
/// (same_crash_title); or, when the cause is something the driver left behind (the first of
/// `hyps` a missing cleanup or teardown), any fault in a gone module's memory for a report that
/// faulted there, and for a missing teardown any crash while the module unloads for a report that
/// came while it unloaded (the same leftover reached by another path).
bool reproduced(const crash::CrashReport& report, const std::vector<crash::Hypothesis>& hyps,
                const std::vector<crash::CrashReport>& again);

} // namespace autodriver::loop
