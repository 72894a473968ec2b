#pragma once
// A port whose boot test crashes the target kernel: the crash analysed as `autodriver crash`
// analyses it (title, kind, the driver's frames symbolized from the modules built in the work
// tree, the hypotheses), for the verdict, the run store and port's repair of it (issue 18 item 4).

#include "autodriver/crash/localize.hpp"
#include "autodriver/crash/report.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::loop {

struct BootCrash {
  crash::CrashReport report;
  std::vector<crash::Hypothesis> hyps;
  bool in_driver = false;
  nlohmann::json json; ///< title, kind, headline, localized, hypotheses, ... for the verdict's gates.crash
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

/// The titles of the crash reports on the boot console of `release` in check's JSON `gates`.
std::vector<std::string> boot_crash_titles(const nlohmann::json& gates, const std::string& release);

} // namespace autodriver::loop
