#pragma once
// How the port loop builds a tree: kbuild in the build sandbox (make_kbuild_builder), or, in the
// loop's own tests, a scripted fake that answers with diagnostics.

#include "autodriver/core/kernel.hpp"
#include "autodriver/loop/build_state.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace autodriver::loop {

class Builder {
public:
  virtual ~Builder() = default;
  /// Builds `tree` as it is against `kernel` (a copy of a built tree recompiles only what changed
  /// since); `objects` (paths relative to the tree): only these single objects, else the module.
  /// An interrupted build is an `interrupted` error, never a state.
  virtual util::Expected<BuildState> build(const core::Kernel& kernel, const std::filesystem::path& tree, const BuildLimit& limit,
                                           const std::vector<std::string>& objects) = 0;
  /// True when a trial may be judged by single objects (kbuild's own make, not a --build-cmd).
  virtual bool single_objects() const = 0;
  /// sparse's findings on a tree built without errors (a C=2 CHECK=sparse build; `gcc` is the
  /// plain build's diagnostics, told apart from sparse's); none when the builder cannot run it.
  virtual util::Expected<std::vector<core::Diagnostic>> sparse(const core::Kernel& kernel, const std::filesystem::path& tree,
                                                               const BuildLimit& limit,
                                                               const std::vector<core::Diagnostic>& gcc) {
    (void)kernel, (void)tree, (void)limit, (void)gcc;
    return std::vector<core::Diagnostic>{};
  }
};

/// kbuild (`make -k M=`), or `build_cmd` with {kdir}/{kver}/{tree}/{src} substituted, in the build
/// sandbox; `subdir`: where the driver is in the tree copied (a root around it).
std::unique_ptr<Builder> make_kbuild_builder(std::string build_cmd, std::filesystem::path subdir);

} // namespace autodriver::loop
