#include "autodriver/util/diff.hpp"

#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

namespace autodriver::util {

std::string unified_diff(const std::filesystem::path& a_root, const std::filesystem::path& b_root, const std::string& file) {
  RunRequest d;
  d.argv = {"diff",
            "-u",
            "-N",
            "--text",
            "--label",
            "a/" + file,
            "--label",
            "b/" + file,
            (a_root / file).string(),
            (b_root / file).string()};
  d.timeout = std::chrono::seconds(30);
  auto r = run(d);
  return r && r->exit_code == 1 ? r->out : std::string();
}

std::vector<std::string> diff_hunks(std::string_view diff) {
  std::vector<std::string> out;
  for (auto line : split_lines(diff)) {
    if (line.starts_with("@@")) out.emplace_back();
    if (out.empty()) continue;
    out.back() += line;
    out.back() += '\n';
  }
  return out;
}

} // namespace autodriver::util
