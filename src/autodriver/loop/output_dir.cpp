#include "autodriver/loop/output_dir.hpp"

#include "autodriver/gate/build_root.hpp"

#include <fmt/format.h>

namespace autodriver::loop {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

util::Expected<void> check_output_dir(const fs::path& out, const std::vector<fs::path>& trees) {
  if (out.empty()) return unexpected(ErrorKind::config, "no output directory (-o OUT)");
  std::error_code ec;
  const fs::path out_abs = fs::weakly_canonical(fs::absolute(out), ec);
  for (const auto& t : trees) {
    if (t.empty()) continue;
    const fs::path tree_abs = fs::weakly_canonical(fs::absolute(t), ec);
    const fs::path rel = out_abs.lexically_relative(tree_abs);
    if (!rel.empty() && *rel.begin() != "..")
      return unexpected(ErrorKind::config,
                        fmt::format("-o {} is inside {}, which is read and never written: choose a folder outside it",
                                    out.string(), tree_abs.string()));
  }
  if (fs::exists(fs::symlink_status(out, ec))) {
    if (!fs::is_directory(out, ec))
      return unexpected(ErrorKind::config, fmt::format("-o {} is a file, not a folder: choose another -o", out.string()));
    if (!fs::is_empty(out, ec))
      return unexpected(
          ErrorKind::config,
          fmt::format("{} already exists and is not empty: choose another -o (nothing in it was touched)", out.string()));
  }
  return {};
}

std::vector<fs::path> trees_read(const fs::path& driver, const fs::path& given_root) {
  std::vector<fs::path> out = {driver};
  if (!given_root.empty()) out.push_back(given_root);
  if (auto located = gate::find_build_root(driver, given_root)) out.push_back(located->root);
  return out;
}

} // namespace autodriver::loop
