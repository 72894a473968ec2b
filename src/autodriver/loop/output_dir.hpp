#pragma once
// The output folder of a run (port -o, crash --repair -o): checked before anything runs, so that a
// refused OUT is never written, and OUT never holds a file the run did not create.

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <vector>

namespace autodriver::loop {

/// OK when `out` does not exist or is an empty folder, and is neither one of `trees` (the folders
/// the run reads and never writes: the driver, the root copied with it) nor inside one. The error
/// is one line saying which and what to do.
util::Expected<void> check_output_dir(const std::filesystem::path& out, const std::vector<std::filesystem::path>& trees);

/// The folders a run over `driver` reads and never writes: the driver, `given_root` (--root) and the
/// root its build files name (gate/build_root.hpp), when there is one.
std::vector<std::filesystem::path> trees_read(const std::filesystem::path& driver, const std::filesystem::path& given_root);

} // namespace autodriver::loop
