#include "autodriver/propose/apply.hpp"

#include "autodriver/propose/c_tokens.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

namespace autodriver::propose {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::vector<std::string> c_files(const fs::path& tree) {
  std::vector<std::string> out;
  for (const auto& rel : util::list_files(tree)) {
    auto ext = rel.extension().string();
    if (ext == ".c" || ext == ".h") out.push_back(rel.string());
  }
  return out;
}

static std::map<std::string, std::size_t> hashes(const fs::path& tree, const std::vector<std::string>& files) {
  std::map<std::string, std::size_t> out;
  for (const auto& f : files) {
    auto t = util::read_file(tree / f);
    out[f] = t ? std::hash<std::string>{}(*t) : 0;
  }
  return out;
}

static util::Expected<void> apply_text_edits(const std::vector<TextEdit>& edits, const fs::path& tree) {
  std::map<std::string, std::vector<TextEdit>> by_file;
  for (const auto& e : edits) by_file[e.file].push_back(e);
  for (auto& [file, list] : by_file) {
    auto text = util::read_file(tree / file);
    if (!text) return util::unexpected(text.error());
    std::vector<std::string> lines;
    for (auto l : util::split_lines(*text)) lines.emplace_back(l);
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.line > b.line; });
    for (const auto& e : list) {
      auto at = static_cast<std::size_t>(std::max(1, e.line) - 1);
      if (at > lines.size()) at = lines.size();
      auto end = std::min(lines.size(), at + static_cast<std::size_t>(e.remove));
      lines.erase(lines.begin() + static_cast<long>(at), lines.begin() + static_cast<long>(end));
      std::vector<std::string> ins;
      for (auto l : util::split_lines(e.text)) ins.emplace_back(l);
      lines.insert(lines.begin() + static_cast<long>(at), ins.begin(), ins.end());
    }
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    if (auto w = util::write_file(tree / file, out); !w) return w;
  }
  return {};
}

static util::Expected<void> apply_renames(const std::vector<std::pair<std::string, std::string>>& renames,
                                          const fs::path& tree, const std::vector<std::string>& files) {
  for (const auto& f : files) {
    auto text = util::read_file(tree / f);
    if (!text) continue;
    auto toks = tokenize(*text);
    std::string out;
    std::size_t pos = 0;
    bool changed = false;
    for (const auto& t : toks) {
      if (t.kind != TokKind::ident) continue;
      for (const auto& [from, to] : renames) {
        if (t.text != from) continue;
        out.append(*text, pos, t.begin - pos);
        out += to;
        pos = t.end;
        changed = true;
      }
    }
    if (!changed) continue;
    out.append(*text, pos, std::string::npos);
    if (auto w = util::write_file(tree / f, out); !w) return w;
  }
  return {};
}

util::Expected<ApplyResult> apply_edit(const Edit& edit, const fs::path& tree, const fs::path& scratch) {
  ApplyResult res;
  auto files = c_files(tree);
  auto before = hashes(tree, files);
  if (!edit.smpl.empty()) {
    std::error_code ec;
    fs::create_directories(scratch, ec);
    fs::path rule = scratch / "rule.cocci";
    if (auto w = util::write_file(rule, edit.smpl); !w) return util::unexpected(w.error());
    util::RunRequest req;
    req.argv = {"spatch", "--very-quiet", "--in-place", "--no-show-diff", "--timeout", "60", "--sp-file", rule.string()};
    for (const auto& f : files) req.argv.push_back(f);
    req.cwd = tree;
    req.timeout = 180s;
    req.stderr_mode = util::Stderr::merge;
    req.env_set = {{"LC_ALL", "C"}};
    auto r = util::run(req);
    if (!r) return util::unexpected(r.error());
    res.tool_output = util::tail_capped(r->out, 4000);
    if (r->timed_out) return util::unexpected(util::ErrorKind::timeout, "spatch timed out");
    if (r->exit_code != 0)
      util::log_debug("spatch exited {}: {}", r->exit_code, util::tail_capped(r->out, 400));
  }
  if (!edit.text_edits.empty())
    if (auto t = apply_text_edits(edit.text_edits, tree); !t) return util::unexpected(t.error());
  if (!edit.renames.empty())
    if (auto t = apply_renames(edit.renames, tree, files); !t) return util::unexpected(t.error());
  auto after = hashes(tree, files);
  for (const auto& [f, h] : after)
    if (before[f] != h) res.changed_files.push_back(f);
  return res;
}

} // namespace autodriver::propose
