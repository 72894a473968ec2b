#include "autodriver/crash/driver_files.hpp"

#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/files.hpp"

#include <algorithm>
#include <regex>

namespace autodriver::crash {

namespace fs = std::filesystem;

const csrc::Unit* function_named(const std::vector<csrc::Unit>& units, const std::string& name) {
  for (const auto& u : units)
    if (u.kind == csrc::UnitKind::function && u.name == name) return &u;
  return nullptr;
}

std::size_t statement_holding(const std::vector<csrc::Token>& t, const std::vector<std::pair<std::size_t, std::size_t>>& sts,
                              int line) {
  std::size_t at = sts.size();
  for (std::size_t k = 0; k < sts.size(); ++k)
    if (t[sts[k].first].line <= line && line <= t[sts[k].second].line) at = k;
  return at;
}

std::size_t block_holding(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line) {
  std::size_t block = fn.body;
  for (;;) {
    const auto sts = csrc::block_statements(t, block);
    const std::size_t at = statement_holding(t, sts, line);
    if (at == sts.size()) return block;
    // A statement's own block holding the line (`if (x) {`, `else {`, `do {`, a bare `{`), not
    // an initializer's braces.
    std::size_t inner = 0;
    for (std::size_t i = sts[at].first; i <= sts[at].second && !inner; ++i) {
      if (t[i].text != "{" || i == 0) continue;
      const std::string& before = t[i - 1].text;
      if (before != ")" && before != "else" && before != "do" && i != sts[at].first) continue;
      const std::size_t close = csrc::matching_close(t, i);
      if (close == std::string::npos) return block;
      if (t[i].line <= line && line <= t[close].line) inner = i;
      else i = close;
    }
    if (!inner || inner == block) return block;
    const auto nested = csrc::block_statements(t, inner);
    if (statement_holding(t, nested, line) == nested.size()) return block;
    block = inner;
  }
}

std::vector<std::string> parameter_names(const std::vector<csrc::Token>& t, const csrc::Unit& fn) {
  std::size_t open = fn.first;
  while (open < fn.body && !(t[open].text == "(" && open > 0 && t[open - 1].text == fn.name)) ++open;
  if (open >= fn.body) return {};
  const auto calls = csrc::find_calls(t, open - 1, csrc::matching_close(t, open));
  std::vector<std::string> out;
  if (!calls.empty())
    for (const auto& [first, last] : calls.front().arg_toks)
      out.push_back(t[last].kind == csrc::TokKind::ident && last > first ? t[last].text : "");
  return out;
}

std::vector<DriverFile> read_driver(const fs::path& tree, const std::string& extension) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == extension) paths.push_back(it->path());
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

namespace {

void each_file(const fs::path& kernel_src, const std::string& word, const std::string& also,
               const std::function<void(const std::vector<csrc::Token>&, const std::vector<csrc::Unit>&)>& fn) {
  static const std::regex k_name(R"(^[A-Za-z_]\w*$)");
  if (kernel_src.empty() || !std::regex_match(word, k_name)) return;
  auto files = kernel::c_files_naming(kernel_src, word, kernel::k_driver_dirs, std::chrono::seconds(120));
  if (files.size() > 1500) files.resize(1500);
  for (const auto& rel : files) {
    auto text = util::read_file(kernel_src / rel);
    if (!text || (!also.empty() && text->find(also) == std::string::npos)) continue;
    auto t = csrc::tokenize(*text);
    fn(t, csrc::find_units(t));
  }
}

} // namespace

void for_each_kernel_function(const fs::path& kernel_src, const std::string& word,
                              const std::function<void(const std::vector<csrc::Token>&, const csrc::Unit&)>& fn,
                              const std::string& also) {
  each_file(kernel_src, word, also, [&](const auto& t, const auto& units) {
    for (const auto& u : units)
      if (u.kind == csrc::UnitKind::function) fn(t, u);
  });
}

void for_each_kernel_file(const fs::path& kernel_src, const std::string& word,
                          const std::function<void(const std::vector<csrc::Token>&, const std::vector<csrc::Unit>&)>& fn) {
  each_file(kernel_src, word, "", fn);
}

} // namespace autodriver::crash
