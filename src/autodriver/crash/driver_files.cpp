#include "autodriver/crash/driver_files.hpp"

#include "autodriver/util/files.hpp"

#include <algorithm>

namespace autodriver::crash {

namespace fs = std::filesystem;

std::vector<DriverFile> read_driver(const fs::path& tree) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == ".c") paths.push_back(it->path());
  std::sort(paths.begin(), paths.end());
  std::vector<DriverFile> out;
  for (const auto& p : paths) {
    auto text = util::read_file(p);
    if (!text) continue;
    DriverFile f{fs::relative(p, tree).string(), csrc::tokenize(*text), {}};
    f.units = csrc::find_units(f.toks);
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace autodriver::crash
