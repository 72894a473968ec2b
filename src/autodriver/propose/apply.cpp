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

/// The lines an edit expects, as a block (for an insertion, the one line before it).
static std::vector<std::string> expected_block(const TextEdit& e) {
  std::vector<std::string> out;
  for (auto l : util::split_lines(*e.expect)) out.emplace_back(l);
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
    // Relocate each edit to the nearest place its expected lines still are (other accepted
    // edits may have moved them); all positions are taken before any of this list applies.
    for (auto& e : list) {
      if (!e.expect) continue;
      auto block = expected_block(e);
      if (block.empty()) continue;
      const long first = e.remove > 0 ? e.line - 1 : e.line - 2; // 0-based index of the block
      auto matches_at = [&](long at) {
        if (at < 0 || at + static_cast<long>(block.size()) > static_cast<long>(lines.size())) return false;
        for (std::size_t k = 0; k < block.size(); ++k)
          if (lines[static_cast<std::size_t>(at) + k] != block[k]) return false;
        return true;
      };
      long found = -1;
      for (long d = 0; d <= static_cast<long>(lines.size()) && found < 0; ++d) {
        if (matches_at(first - d)) found = first - d;
        else if (d > 0 && matches_at(first + d)) found = first + d;
      }
      if (found < 0)
        return util::unexpected(util::ErrorKind::parse,
                                fmt::format("{}:{}: the lines this edit replaces are no longer there", file, e.line));
      e.line = static_cast<int>(e.remove > 0 ? found + 1 : found + 2);
    }
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.line > b.line; });
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

void fill_expectations(Edit& edit, const fs::path& tree) {
  std::map<std::string, std::vector<std::string>> cache;
  for (auto& e : edit.text_edits) {
    if (e.expect) continue;
    auto it = cache.find(e.file);
    if (it == cache.end()) {
      std::vector<std::string> lines;
      if (auto t = util::read_file(tree / e.file))
        for (auto l : util::split_lines(*t)) lines.emplace_back(l);
      it = cache.emplace(e.file, std::move(lines)).first;
    }
    const auto& lines = it->second;
    const long first = e.remove > 0 ? e.line - 1 : e.line - 2;
    const long count = e.remove > 0 ? e.remove : 1;
    if (first < 0 || first + count > static_cast<long>(lines.size())) continue;
    std::string block;
    for (long k = 0; k < count; ++k) block += lines[static_cast<std::size_t>(first + k)] + "\n";
    e.expect = block;
  }
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

/// Token-level call rewrite: every `from(...)` with `arity` arguments becomes `to(templated args)`.
static util::Expected<ApplyResult> apply_edit_parts(const Edit& edit, const fs::path& tree, const fs::path& scratch,
                                                    const std::vector<std::string>& files);

static util::Expected<void> apply_call_rewrite(const CallRewrite& cr, const fs::path& tree,
                                               const std::vector<std::string>& files) {
  for (const auto& f : files) {
    auto text = util::read_file(tree / f);
    if (!text) continue;
    auto toks = tokenize(*text);
    if (toks.empty()) continue;
    auto calls = find_calls(toks, 0, toks.size() - 1);
    std::string out;
    std::size_t pos = 0;
    bool changed = false;
    for (const auto& c : calls) {
      if (c.callee != cr.from || c.args.size() != cr.arity) continue;
      if (toks[c.name_tok].begin < pos) continue; // nested in a call already rewritten
      // Keep each old argument's original spelling (the token-joined form would lose spacing).
      std::vector<std::string> raw;
      std::size_t arg_first = c.name_tok + 2;
      int depth = 0;
      for (std::size_t k = c.name_tok + 2; k <= c.close_tok; ++k) {
        const std::string& x = toks[k].text;
        bool close = k == c.close_tok;
        if (!close && (x == "(" || x == "[" || x == "{")) ++depth;
        if (!close && (x == ")" || x == "]" || x == "}")) --depth;
        if (close || (depth == 0 && x == ",")) {
          if (k > arg_first) raw.push_back(text->substr(toks[arg_first].begin, toks[k - 1].end - toks[arg_first].begin));
          arg_first = k + 1;
        }
      }
      if (raw.size() != cr.arity) continue;
      std::string args;
      for (std::size_t i = 0; i < cr.args.size(); ++i) {
        std::string a = cr.args[i];
        for (std::size_t j = raw.size(); j-- > 0;) {
          std::string pat = "$" + std::to_string(j);
          for (auto p2 = a.find(pat); p2 != std::string::npos; p2 = a.find(pat, p2 + raw[j].size()))
            a.replace(p2, pat.size(), raw[j]);
        }
        args += (i ? ", " : "") + a;
      }
      out.append(*text, pos, toks[c.name_tok].begin - pos);
      out += cr.to + "(" + args + ")";
      pos = toks[c.close_tok].end;
      changed = true;
    }
    if (!changed) continue;
    out.append(*text, pos, std::string::npos);
    if (auto w = util::write_file(tree / f, out); !w) return w;
  }
  return {};
}

util::Expected<ApplyResult> apply_edit(const Edit& edit, const fs::path& tree, const fs::path& scratch) {
  auto files = c_files(tree);
  // All or nothing: an edit whose SmPL ran but whose line edits then failed must not leave the
  // SmPL's changes behind (they would reach the tree with no patch to show for them).
  std::map<std::string, std::string> texts;
  for (const auto& f : files)
    if (auto t = util::read_file(tree / f)) texts[f] = std::move(*t);
  auto r = apply_edit_parts(edit, tree, scratch, files);
  if (!r)
    for (const auto& [f, t] : texts)
      if (auto now = util::read_file(tree / f); !now || *now != t) (void)util::write_file(tree / f, t);
  return r;
}

static util::Expected<ApplyResult> apply_edit_parts(const Edit& edit, const fs::path& tree, const fs::path& scratch,
                                                    const std::vector<std::string>& files) {
  ApplyResult res;
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
  if (edit.call && hashes(tree, files) == before)
    if (auto t = apply_call_rewrite(*edit.call, tree, files); !t) return util::unexpected(t.error());
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
