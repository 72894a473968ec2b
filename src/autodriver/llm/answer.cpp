#include "autodriver/llm/answer.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <map>

namespace autodriver::llm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool editable_path(const fs::path& tree, const std::string& path, const std::set<std::string>& editable) {
  if (path.empty() || path.front() == '/' || path.front() == '~' || path.find('\0') != std::string::npos) return false;
  const fs::path p = fs::path(path).lexically_normal();
  for (const auto& part : p)
    if (part == "..") return false;
  if (!editable.count(p.string())) return false;
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(tree / p, ec);
  const fs::path root = fs::weakly_canonical(tree, ec);
  if (ec) return false;
  auto rel = real.lexically_relative(root);
  return !rel.empty() && *rel.begin() != ".." && fs::is_regular_file(real, ec);
}

util::Expected<std::vector<std::string>> apply_answer(const Answer& a, const fs::path& tree,
                                                      const std::set<std::string>& editable) {
  std::map<std::string, std::string> texts; // new texts of the files the blocks change
  for (const auto& b : a.blocks) {
    const std::string rel = fs::path(b.path).lexically_normal().string();
    if (!editable_path(tree, b.path, editable))
      return util::unexpected(util::ErrorKind::config, fmt::format("{}: not a file of the driver this answer may edit", b.path));
    if (!texts.count(rel)) {
      auto t = util::read_file(tree / rel);
      if (!t) return util::unexpected(t.error());
      texts[rel] = *t;
    }
    std::string& t = texts[rel];
    const auto at = t.find(b.search);
    if (at == std::string::npos)
      return util::unexpected(util::ErrorKind::parse, fmt::format("{}: the SEARCH text is not in the file", b.path));
    if (t.find(b.search, at + 1) != std::string::npos)
      return util::unexpected(util::ErrorKind::parse, fmt::format("{}: the SEARCH text is in the file more than once", b.path));
    t.replace(at, b.search.size(), b.replace);
  }
  for (const auto& d : a.diffs) {
    auto paths = diff_paths(d);
    if (paths.empty()) return util::unexpected(util::ErrorKind::parse, "a diff names no file");
    for (const auto& p : paths)
      if (!editable_path(tree, p, editable))
        return util::unexpected(util::ErrorKind::config, fmt::format("{}: not a file of the driver this answer may edit", p));
  }
  std::vector<std::string> changed;
  // Diffs first as a dry run: nothing is written unless all of them apply.
  for (int dry = 1; dry >= 0; --dry)
    for (const auto& d : a.diffs) {
      util::RunRequest req;
      // `--- a/x.c` / `+++ b/x.c` (git's form) strip one component, `--- x.c` none.
      const bool prefixed = d.find("\n+++ b/") != std::string::npos || d.starts_with("+++ b/") ||
                            d.find("\n--- a/") != std::string::npos || d.starts_with("--- a/");
      req.argv = {"patch", prefixed ? "-p1" : "-p0", "--batch", "--forward", "--no-backup-if-mismatch", "-r", "-", "-s"};
      if (dry) req.argv.push_back("--dry-run");
      req.cwd = tree;
      req.stdin_data = d;
      req.timeout = 30s;
      req.stderr_mode = util::Stderr::merge;
      auto r = util::run(req);
      if (!r) return util::unexpected(r.error());
      if (!r->ok())
        return util::unexpected(util::ErrorKind::parse, fmt::format("the diff does not apply: {}",
                                                                    std::string(util::trim(util::tail_capped(r->out, 300)))));
      if (!dry)
        for (const auto& p : diff_paths(d)) changed.push_back(fs::path(p).lexically_normal().string());
    }
  for (const auto& [rel, t] : texts) {
    if (auto w = util::write_file(tree / rel, t); !w) return util::unexpected(w.error());
    changed.push_back(rel);
  }
  return changed;
}

} // namespace autodriver::llm
