#include "autodriver/llm/answer.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

// Reading an answer's edits (no file touched here): the fuzz target `llm` runs exactly this code.

namespace autodriver::llm {

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

} // namespace autodriver::llm
