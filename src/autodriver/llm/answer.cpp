#include "autodriver/llm/answer.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <map>

namespace autodriver::llm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string strip_prefix(std::string p) {
  p = std::string(util::trim(p));
  if (auto tab = p.find('\t'); tab != std::string::npos) p.resize(tab); // "+++ b/x.c\t2024-..."
  if (p.starts_with("a/") || p.starts_with("b/")) p = p.substr(2);
  return p;
}

/// The diffs of the text: fenced ```diff / ```patch blocks, else from the first `--- ` line
/// followed by `+++ ` to the end.
std::vector<std::string> find_diffs(const std::vector<std::string_view>& lines) {
  std::vector<std::string> out;
  bool in = false, fenced_diff = false;
  std::string cur;
  for (auto l : lines) {
    if (l.starts_with("```")) {
      if (in) {
        if (fenced_diff && cur.find("\n+++ ") != std::string::npos) out.push_back(cur);
        in = false;
        cur.clear();
      } else {
        in = true;
        fenced_diff = l.find("diff") != std::string_view::npos || l.find("patch") != std::string_view::npos;
      }
      continue;
    }
    if (in) cur += std::string(l) + "\n";
  }
  if (!out.empty()) return out;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i)
    if (lines[i].starts_with("--- ") && lines[i + 1].starts_with("+++ ")) {
      std::string d;
      for (std::size_t k = i; k < lines.size() && !lines[k].starts_with("```"); ++k) d += std::string(lines[k]) + "\n";
      out.push_back(d);
      break;
    }
  return out;
}

} // namespace

util::Expected<Answer> parse_answer(const std::string& text) {
  Answer a;
  auto lines = util::split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (util::trim(lines[i]) != "<<<<<<< SEARCH") continue;
    // The path: the nearest non-empty line before, without fences or markdown.
    std::string path;
    for (std::size_t k = i; k-- > 0;) {
      std::string p(util::trim(lines[k]));
      if (p.empty() || p.starts_with("```")) continue;
      while (!p.empty() && (p.front() == '`' || p.front() == '*')) p.erase(p.begin());
      while (!p.empty() && (p.back() == '`' || p.back() == '*' || p.back() == ':')) p.pop_back();
      path = p;
      break;
    }
    SearchReplace b{path, "", ""};
    std::size_t k = i + 1;
    for (; k < lines.size() && util::trim(lines[k]) != "======="; ++k) b.search += std::string(lines[k]) + "\n";
    if (k >= lines.size()) return util::unexpected(util::ErrorKind::parse, fmt::format("line {}: SEARCH without =======", i + 1));
    for (++k; k < lines.size() && util::trim(lines[k]) != ">>>>>>> REPLACE"; ++k) b.replace += std::string(lines[k]) + "\n";
    if (k >= lines.size())
      return util::unexpected(util::ErrorKind::parse, fmt::format("line {}: SEARCH without >>>>>>> REPLACE", i + 1));
    if (path.empty())
      return util::unexpected(util::ErrorKind::parse, fmt::format("line {}: a SEARCH block names no file", i + 1));
    if (b.search.empty()) return util::unexpected(util::ErrorKind::parse, fmt::format("line {}: an empty SEARCH", i + 1));
    a.blocks.push_back(std::move(b));
    i = k;
  }
  if (a.blocks.empty()) a.diffs = find_diffs(lines);
  if (a.empty()) return util::unexpected(util::ErrorKind::parse, "the answer holds no unified diff and no SEARCH/REPLACE block");
  return a;
}

std::vector<std::string> diff_paths(const std::string& diff) {
  std::vector<std::string> out;
  std::string minus;
  for (auto l : util::split_lines(diff)) {
    if (l.starts_with("--- ")) minus = strip_prefix(std::string(l.substr(4)));
    else if (l.starts_with("+++ ")) {
      std::string plus = strip_prefix(std::string(l.substr(4)));
      out.push_back(plus == "/dev/null" ? minus : plus);
    }
  }
  return out;
}

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
