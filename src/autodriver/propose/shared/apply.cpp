#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/version_cond.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/kb/kb_extract.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/sandbox.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

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

std::vector<std::pair<std::string, std::string>> sources_mentioning(const fs::path& tree, const std::string& word) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& rel : c_files(tree)) {
    auto t = util::read_file(tree / rel);
    if (t && t->find(word) != std::string::npos) out.emplace_back(std::move(rel), std::move(*t));
  }
  return out;
}

std::string apply_line_edits(const std::string& text, std::vector<TextEdit> edits) {
  std::vector<std::string> lines;
  for (auto l : util::split_lines(text)) lines.emplace_back(l);
  std::stable_sort(edits.begin(), edits.end(), [](const auto& a, const auto& b) { return a.line > b.line; });
  for (const auto& e : edits) {
    if (e.line < 0) continue; // already applied
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
  return out;
}

std::optional<TextEdit> changed_lines_edit(const std::string& file, const std::string& before, const std::string& after) {
  auto a = util::split_lines(before), b = util::split_lines(after);
  std::size_t p = 0;
  while (p < a.size() && p < b.size() && a[p] == b[p]) ++p;
  std::size_t s = 0;
  while (s < a.size() - p && s < b.size() - p && a[a.size() - 1 - s] == b[b.size() - 1 - s]) ++s;
  if (p == a.size() && p == b.size()) return std::nullopt;
  TextEdit e;
  e.file = file;
  e.line = static_cast<int>(p) + 1;
  e.remove = static_cast<int>(a.size() - s - p);
  for (std::size_t i = p; i < b.size() - s; ++i) e.text += std::string(b[i]) + "\n";
  return e;
}

TextEdit token_span_edit(const std::string& file, const std::string& text, const Token& first, const Token& last,
                         const std::string& replacement) {
  std::size_t line_start = text.rfind('\n', first.begin);
  line_start = line_start == std::string::npos ? 0 : line_start + 1;
  std::size_t line_end = text.find('\n', last.end);
  if (line_end == std::string::npos) line_end = text.size();
  std::string lines =
      text.substr(line_start, first.begin - line_start) + replacement + text.substr(last.end, line_end - last.end) + "\n";
  return {file, first.line, last.line - first.line + 1, lines};
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

/// `after_smpl`: the edit's SmPL ran first, and a replacement it already made (spatch retypes a
/// definition's prototypes with it) counts as applied.
/// A file the edits create: it does not exist yet and every edit inserts at its start.
static bool creates_file(const std::vector<TextEdit>& list, const fs::path& tree) {
  std::error_code ec;
  if (list.empty() || fs::exists(tree / list.front().file, ec)) return false;
  return std::all_of(list.begin(), list.end(), [](const TextEdit& e) { return e.remove == 0 && e.line <= 1 && !e.expect; });
}

/// A relative path with no `..` component (a new file stays inside the tree).
static bool safe_relative(const std::string& rel) {
  fs::path p(rel);
  if (p.empty() || p.is_absolute()) return false;
  return std::none_of(p.begin(), p.end(), [](const fs::path& c) { return c == ".."; });
}

static util::Expected<void> apply_text_edits(const std::vector<TextEdit>& edits, const fs::path& tree, bool after_smpl) {
  std::map<std::string, std::vector<TextEdit>> by_file;
  for (const auto& e : edits) by_file[e.file].push_back(e);
  for (auto& [file, list] : by_file) {
    util::Expected<std::string> text = std::string();
    if (creates_file(list, tree)) {
      if (!safe_relative(file)) return util::unexpected(util::ErrorKind::config, file + ": a new file must stay inside the tree");
    } else {
      text = util::read_file(tree / file);
    }
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
      auto matches_at = [&](long at, const std::vector<std::string>& want) {
        if (at < 0 || at + static_cast<long>(want.size()) > static_cast<long>(lines.size())) return false;
        for (std::size_t k = 0; k < want.size(); ++k)
          if (lines[static_cast<std::size_t>(at) + k] != want[k]) return false;
        return true;
      };
      auto nearest = [&](const std::vector<std::string>& want) {
        for (long d = 0; d <= static_cast<long>(lines.size()); ++d) {
          if (matches_at(first - d, want)) return first - d;
          if (d > 0 && matches_at(first + d, want)) return first + d;
        }
        return -1L;
      };
      long found = nearest(block);
      if (found < 0 && e.remove > 0 && after_smpl) {
        std::vector<std::string> repl;
        for (auto l : util::split_lines(e.text)) repl.emplace_back(l);
        if (!repl.empty() && nearest(repl) >= 0) {
          e.line = -1;
          continue;
        }
      }
      if (found < 0)
        return util::unexpected(util::ErrorKind::parse,
                                fmt::format("{}:{}: the lines this edit replaces are no longer there", file, e.line));
      e.line = static_cast<int>(e.remove > 0 ? found + 1 : found + 2);
    }
    if (auto w = util::write_file(tree / file, apply_line_edits(*text, std::move(list))); !w) return w;
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

static util::Expected<void> apply_renames(const std::vector<std::pair<std::string, std::string>>& renames, const fs::path& tree,
                                          const std::vector<std::string>& files) {
  for (const auto& f : files) {
    auto text = util::read_file(tree / f);
    if (!text) continue;
    auto toks = tokenize(*text);
    std::string out;
    std::size_t pos = 0;
    bool changed = false;
    auto rename_at = [&](std::size_t begin, std::size_t end, std::string_view name) {
      for (const auto& [from, to] : renames) {
        if (name != from) continue;
        out.append(*text, pos, begin - pos);
        out += to;
        pos = end;
        changed = true;
        return;
      }
    };
    for (const auto& t : toks) {
      if (t.kind == TokKind::ident) rename_at(t.begin, t.end, t.text);
      // A macro's body names the old API too (`#define p_free kzfree`); its name, its parameters
      // and the conditions of #if/#ifdef (which ask whether the old name exists) stay.
      if (t.kind == TokKind::pp_line)
        // A compat shim mapping the new name onto the old one (`#define nf_reset_ct nf_reset`)
        // is not rewritten into a self-reference: that shim is dropped or guarded, not renamed.
        if (auto body = csrc::macro_definition(t.text);
            body && std::none_of(renames.begin(), renames.end(), [&](const auto& r) { return r.second == body->name; }))
          for (const auto& b : tokenize(t.text.substr(body->body_offset)))
            if (b.kind == TokKind::ident && !body->params.count(b.text))
              rename_at(t.begin + body->body_offset + b.begin, t.begin + body->body_offset + b.end, b.text);
    }
    if (!changed) continue;
    out.append(*text, pos, std::string::npos);
    if (auto w = util::write_file(tree / f, out); !w) return w;
  }
  return {};
}

static util::Expected<ApplyResult> apply_edit_parts(const Edit& edit, const fs::path& tree, const fs::path& scratch,
                                                    const std::vector<std::string>& files);

/// Token-level call rewrite: every `from(...)` with `arity` arguments becomes `to(templated args)`.
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

std::vector<bool> version_dead_lines(const std::string& text, long code) {
  auto lines = util::split_lines(text);
  std::vector<bool> dead(lines.size(), false);
  static const std::regex k_dir(R"(^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$)");
  struct Frame {
    bool parent_dead = false, any_true = false, dead = false;
  };
  std::vector<Frame> stack;
  auto decide = [&](const std::string& cond) -> int { // 1 true, 0 false, -1 unknown
    auto v = version_condition_value(cond, code);
    return !v ? -1 : *v ? 1 : 0;
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string l(util::parsed_line(lines[i])); // the regex overflows the stack on huge lines
    std::smatch m;
    if (std::regex_match(l, m, k_dir)) {
      std::string d = m[1].str(), cond = m[2].str();
      while (i + 1 < lines.size() && !l.empty() && l.back() == '\\') l = std::string(lines[++i]); // continuation
      bool parent = !stack.empty() && stack.back().dead;
      if (d == "if" || d == "ifdef" || d == "ifndef") {
        int v = d == "if" ? decide(cond) : -1;
        stack.push_back({parent, v == 1, parent || v == 0});
      } else if (d == "elif" && !stack.empty()) {
        auto& f = stack.back();
        int v = decide(cond);
        f.dead = f.parent_dead || f.any_true || v == 0;
        f.any_true = f.any_true || v == 1;
      } else if (d == "else" && !stack.empty()) {
        auto& f = stack.back();
        f.dead = f.parent_dead || f.any_true;
      } else if (d == "endif" && !stack.empty()) {
        stack.pop_back();
      }
      continue;
    }
    dead[i] = !stack.empty() && stack.back().dead;
  }
  return dead;
}

long linux_version_code(const fs::path& build_dir) {
  auto text = util::read_file(build_dir / "include/generated/uapi/linux/version.h");
  if (!text) return 0;
  static const std::regex k_code(R"(#define\s+LINUX_VERSION_CODE\s+(\d+))");
  std::smatch m;
  return std::regex_search(*text, m, k_code) ? std::stol(m[1].str()) : 0;
}

util::Expected<ApplyResult> apply_edit(const Edit& edit, const fs::path& tree, const fs::path& scratch,
                                       const ApplyOptions& options) {
  auto files = c_files(tree);
  if (options.compiled)
    std::erase_if(files, [&](const std::string& f) { return f.ends_with(".c") && !options.compiled->count(f); });
  // Files the edit writes beyond the C sources count as changed when written.
  std::vector<std::string> created;
  for (const auto& te : edit.text_edits) {
    if (!safe_relative(te.file) || std::find(files.begin(), files.end(), te.file) != files.end()) continue;
    std::error_code ec;
    // A file the edit creates (a header vendored from the old kernel), or one that is not C (a Makefile).
    if (!fs::exists(tree / te.file, ec)) created.push_back(te.file);
    files.push_back(te.file);
  }
  // All or nothing: an edit whose SmPL ran but whose line edits then failed must not leave the
  // SmPL's changes behind (they would reach the tree with no patch to show for them).
  std::map<std::string, std::string> texts;
  std::map<std::string, fs::file_time_type> mtimes;
  for (const auto& f : files)
    if (auto t = util::read_file(tree / f)) {
      texts[f] = std::move(*t);
      std::error_code ec;
      mtimes[f] = fs::last_write_time(tree / f, ec);
    }
  // A file written back as it was gets its time back too: in a built tree a new time makes kbuild
  // recompile every file that includes it (a header masked below was rewritten for every edit).
  auto put_back = [&](const std::string& f, const std::string& text) {
    (void)util::write_file(tree / f, text);
    std::error_code ec;
    if (auto m = mtimes.find(f); m != mtimes.end() && texts[f] == text) fs::last_write_time(tree / f, m->second, ec);
  };
  auto restore = [&] {
    for (const auto& [f, t] : texts)
      if (auto now = util::read_file(tree / f); !now || *now != t) put_back(f, t);
    std::error_code ec;
    for (const auto& f : created) fs::remove(tree / f, ec);
  };
  // Old-kernel branches the target's version rules out are hidden behind marker comments while
  // the edit runs, then put back as they were.
  std::map<std::string, std::vector<std::string>> hidden; // file -> original lines by marker index
  if (options.version_code > 0 && edit.text_edits.empty())
    for (const auto& [f, t] : texts) {
      if (t.find("LINUX_VERSION_CODE") == std::string::npos) continue;
      auto dead = version_dead_lines(t, options.version_code);
      if (std::find(dead.begin(), dead.end(), true) == dead.end()) continue;
      auto lines = util::split_lines(t);
      std::string masked;
      auto& keep = hidden[f];
      for (std::size_t i = 0; i < lines.size(); ++i) {
        if (dead[i]) {
          masked += fmt::format("/*@@AD-KEEP-{}@@*/", keep.size());
          keep.emplace_back(lines[i]);
        } else {
          masked += lines[i];
        }
        if (i + 1 < lines.size() || (!t.empty() && t.back() == '\n')) masked += '\n';
      }
      if (auto w = util::write_file(tree / f, masked); !w) {
        restore();
        return util::unexpected(w.error());
      }
    }
  auto r = apply_edit_parts(edit, tree, scratch, files);
  for (const auto& [f, keep] : hidden) {
    auto now = util::read_file(tree / f);
    bool ok = now.has_value();
    std::string out = ok ? *now : std::string();
    for (std::size_t k = 0; ok && k < keep.size(); ++k) {
      std::string marker = fmt::format("/*@@AD-KEEP-{}@@*/", k);
      auto pos = out.find(marker);
      if (pos == std::string::npos) ok = false;
      else out.replace(pos, marker.size(), keep[k]);
    }
    if (!ok) {
      restore();
      return util::unexpected(util::ErrorKind::parse, "the edit removed lines of an old-kernel branch");
    }
    put_back(f, out);
  }
  if (!r) {
    restore();
    return r;
  }
  if (!hidden.empty()) {
    // changed_files was computed on the masked texts: recompute against the originals.
    r->changed_files.clear();
    for (const auto& [f, t] : texts)
      if (auto now = util::read_file(tree / f); now && *now != t) r->changed_files.push_back(f);
  }
  return r;
}

/// The files spatch needs to read for `smpl`: a rule changes code only where one of its removed
/// lines matches, and every identifier such a line names (not metavariables, C keywords or NULL,
/// which isomorphisms may match in another form) is in the code it matches: a file that lacks
/// an identifier of each removed line of every rule cannot change. Every file when a rule removes
/// no line naming an identifier, or the SmPL has a script rule. On a 44-file driver this is the
/// difference between 15 s and 2.
std::vector<std::string> files_for_smpl(const std::string& smpl, const fs::path& tree, const std::vector<std::string>& files) {
  static const std::set<std::string> k_not_needles = {
      "if",       "else",  "return", "for",    "while",  "do",     "switch",   "case",   "default",  "break",
      "continue", "goto",  "sizeof", "struct", "union",  "enum",   "const",    "static", "volatile", "inline",
      "extern",   "int",   "char",   "void",   "long",   "short",  "unsigned", "signed", "bool",     "NULL",
      "true",     "false", "when",   "any",    "strict", "forall", "exists",   "typeof"};
  static const std::regex k_ident(R"([A-Za-z_]\w*)");
  std::vector<std::vector<std::set<std::string>>> rules; // rule -> removed line -> identifiers
  std::set<std::string> metas;
  int at_lines = 0;
  for (auto line : util::split_lines(smpl)) {
    std::string l(line);
    if (l.starts_with("@")) {
      if (l.find("script") != std::string::npos) return files;
      if (++at_lines % 2 == 1) {
        rules.emplace_back();
        metas.clear();
      }
      continue;
    }
    if (rules.empty()) continue;
    bool declarations = at_lines % 2 == 1;
    std::set<std::string> needles;
    for (auto it = std::sregex_iterator(l.begin(), l.end(), k_ident); it != std::sregex_iterator(); ++it) {
      std::string id = it->str();
      if (declarations) metas.insert(id);
      else if (l.starts_with("-") && !metas.count(id) && !k_not_needles.count(id)) needles.insert(id);
    }
    if (!needles.empty()) rules.back().push_back(std::move(needles));
  }
  if (rules.empty() || std::any_of(rules.begin(), rules.end(), [](const auto& r) { return r.empty(); })) return files;
  std::vector<std::string> out;
  for (const auto& f : files) {
    auto text = util::read_file(tree / f);
    if (!text) {
      out.push_back(f);
      continue;
    }
    auto line_fits = [&](const std::set<std::string>& ids) {
      return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) { return has_word(*text, id); });
    };
    if (std::any_of(rules.begin(), rules.end(), [&](const auto& r) { return std::any_of(r.begin(), r.end(), line_fits); }))
      out.push_back(f);
  }
  return out;
}

static util::Expected<ApplyResult> apply_edit_parts(const Edit& edit, const fs::path& tree, const fs::path& scratch,
                                                    const std::vector<std::string>& files) {
  ApplyResult res;
  auto before = hashes(tree, files);
  std::vector<std::string> targets;
  if (!edit.smpl.empty()) targets = files_for_smpl(edit.smpl, tree, files);
  if (!targets.empty()) {
    std::error_code ec;
    fs::create_directories(scratch, ec);
    fs::path rule = scratch / "rule.cocci";
    if (auto w = util::write_file(rule, edit.smpl); !w) return util::unexpected(w.error());
    util::RunRequest req;
    req.argv = {"spatch", "--very-quiet", "--in-place", "--no-show-diff", "--timeout", "60", "--sp-file", rule.string()};
    // Files are independent: spatch's own workers share them out over the CPUs.
    if (int cpus = util::available_cpus(); cpus > 1 && targets.size() > 1)
      for (const auto& a : {std::string("-j"), std::to_string(std::min<std::size_t>(cpus, targets.size()))})
        req.argv.push_back(a);
    for (const auto& f : targets) req.argv.push_back(f);
    req.cwd = tree;
    req.timeout = 180s;
    req.stderr_mode = util::Stderr::merge;
    req.env_set = {{"LC_ALL", "C"}};
    // The driver's files and a rule that may come from an LLM or a shared KB are data: spatch
    // runs sandboxed like a build, with only the tree writable.
    if (auto s = util::sandbox_request(req, {{}, {rule}, {tree}, {}}); !s) return util::unexpected(s.error());
    auto r = util::run(req);
    if (!r) return util::unexpected(r.error());
    res.tool_output = util::tail_capped(r->out, 4000);
    if (r->timed_out) return util::unexpected(util::ErrorKind::timeout, "spatch timed out");
    if (r->exit_code != 0) util::log_debug("spatch exited {}: {}", r->exit_code, util::tail_capped(r->out, 400));
  }
  if (edit.call && hashes(tree, files) == before)
    if (auto t = apply_call_rewrite(*edit.call, tree, files); !t) return util::unexpected(t.error());
  if (!edit.text_edits.empty())
    if (auto t = apply_text_edits(edit.text_edits, tree, !edit.smpl.empty()); !t) return util::unexpected(t.error());
  if (!edit.renames.empty())
    if (auto t = apply_renames(edit.renames, tree, files); !t) return util::unexpected(t.error());
  auto after = hashes(tree, files);
  for (const auto& [f, h] : after)
    if (before[f] != h) res.changed_files.push_back(f);
  return res;
}

} // namespace autodriver::propose
