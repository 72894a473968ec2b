#pragma once
// A reproducer for the boot gate (`--repro`): what the guest runs once the driver's modules are
// loaded. A C file is compiled statically on the host inside the sandbox (it is data until it
// runs in the guest); an executable is taken as it is (it must be static: the initramfs has no
// libc); any other file is a script for busybox sh; anything else is a shell command.

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>

namespace autodriver::gate {

struct ReproProgram {
  std::string kind;  ///< "c", "executable", "script", "command"
  std::string bytes; ///< what /bin/ad-repro holds in the guest
  bool executable = false;
};

/// `scratch` is where a C file is compiled. Errors: a C file that does not compile (with gcc's
/// words), a dynamically linked executable, a path that does not exist.
util::Expected<ReproProgram> prepare_repro(const std::string& repro, const std::filesystem::path& scratch);

} // namespace autodriver::gate
