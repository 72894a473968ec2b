#pragma once
// A port whose boot test crashes the target kernel: the crash analysed as `autodriver crash`
// analyses it (title, kind, the driver's frames symbolized from the modules built in the work
// tree, the hypotheses), for the verdict, the run store and port's repair of it (issue 18 item 4).

#include "autodriver/crash/localize.hpp"
#include "autodriver/crash/report.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace autodriver::loop {

struct BootCrash {
  crash::CrashReport report;
  std::vector<crash::Hypothesis> hyps;
  bool in_driver = false;
  nlohmann::json json;                ///< title, kind, headline, localized, hypotheses, ... for the verdict's gates.crash
  std::set<std::string> modules = {}; ///< the driver's module names (its .ko files)
};

/// The first crash report of the boot gate's console on `release` (from check's JSON `gates`),
/// with the driver's frames (modules: the .ko files under `tree`) and hypotheses; nullopt when the
/// console shows none. `kernel_src` (the target's source, may be empty) is where the kernel's
/// drivers show which calls release an object.
std::optional<BootCrash> analyse_boot_crash(const nlohmann::json& gates, const std::string& release,
                                            const std::filesystem::path& tree, const std::filesystem::path& kernel_src = {});

/// The boot gate's outcome on `release` in check's JSON `gates` ("ok", "oops", ...); empty when
/// that kernel has no boot result.
std::string boot_outcome(const nlohmann::json& gates, const std::string& release);

/// The crash reports on the boot console of `release` in check's JSON `gates`.
std::vector<crash::CrashReport> boot_crash_reports(const nlohmann::json& gates, const std::string& release);

/// One of `others` (the unchanged driver's crashes on its own kernel) is the crash `c`: the same
/// title, or the same kind with the same innermost function of the driver's modules (kernels
/// inline differently, so the same bug's title may name another kernel function: vhba's unload
/// is "general protection fault in platform_remove" on 6.12 and "... in
/// device_release_driver_internal" on 7.3, both under vhba_exit).
bool same_crash(const BootCrash& c, const std::vector<crash::CrashReport>& others);

/// Two crash titles name the same crash: equal, or one of the two names no function where the
/// other does ("INFO: task hung" and "INFO: task hung in foo_probe": a report whose stack was not
/// printed), or one is the generic "Oops in f" of the other's fault in the same f (its first line
/// lost among the console's other output).
bool same_crash_title(const std::string& a, const std::string& b);

} // namespace autodriver::loop
