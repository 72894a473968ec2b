#pragma once
// A port whose boot test crashes the target kernel: the crash analysed as `autodriver crash`
// analyses it (issue 18 item 4, without repair): title, kind, the driver's frames symbolized from
// the modules built in the work tree, and the hypotheses, for the verdict and the run store.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace autodriver::loop {

/// The first crash report of the boot gate's console on `release` (from check's JSON `gates`),
/// with the driver's frames (modules: the .ko files under `tree`) and hypotheses; null when the
/// console shows none. `kernel_src` (the target's source, may be empty) is where the kernel's
/// drivers show which calls release an object.
nlohmann::json analyse_boot_crash(const nlohmann::json& gates, const std::string& release, const std::filesystem::path& tree,
                                  const std::filesystem::path& kernel_src = {});

} // namespace autodriver::loop
