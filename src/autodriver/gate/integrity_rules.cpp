// The integrity rules, one function per rule id. Each compares one changed file's original
// and candidate (scanned by c_scan) through the diff blocks and reports candidate lines.

#include "autodriver/gate/integrity_rules.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/gate/feature_switch.hpp"
#include "autodriver/util/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

namespace autodriver::gate::integrity {

namespace {

constexpr std::size_t k_max_violations = 500;

const std::set<std::string> k_keywords = {
    "struct",   "union",  "enum",   "const",  "void", "int",  "char",  "long", "short",    "unsigned", "signed",
    "static",   "inline", "return", "if",     "else", "for",  "while", "do",   "switch",   "case",     "break",
    "continue", "goto",   "sizeof", "typeof", "bool", "true", "false", "NULL", "volatile", "extern",   "default"};

/// Identifiers inside '...' quotes of a gcc message (the names it talks about).
void quoted_idents(std::string_view msg, std::set<std::string>& out) {
  std::size_t pos = 0;
  while (true) {
    auto a = msg.find('\'', pos);
    if (a == std::string_view::npos) return;
    auto b = msg.find('\'', a + 1);
    if (b == std::string_view::npos) return;
    for (auto& id : csrc::identifiers(msg.substr(a + 1, b - a - 1)))
      if (!k_keywords.count(id)) out.insert(id);
    pos = b + 1;
  }
}

void collect_idents(const core::Diagnostic& d, std::set<std::string>& out) {
  for (const auto& s : d.symbols)
    for (auto& id : csrc::identifiers(s))
      if (!k_keywords.count(id)) out.insert(id);
  quoted_idents(d.message, out);
  for (const auto& n : d.notes) quoted_idents(n.message, out);
}

std::string same_file(const std::string& diag_file) {
  return std::filesystem::path(diag_file).lexically_normal().generic_string();
}

std::string nospace(std::string_view s) {
  std::string out;
  for (char ch : s)
    if (!std::isspace(static_cast<unsigned char>(ch))) out += ch;
  return out;
}

std::size_t count_of(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string_view::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

bool substantive(std::string_view code) {
  for (auto& id : csrc::identifiers(code))
    if (!id.empty()) return true;
  return false;
}

bool mentions(std::string_view code, const std::set<std::string>& names) {
  if (names.empty()) return false;
  for (auto& id : csrc::identifiers(code))
    if (names.count(id)) return true;
  return false;
}

/// Directive word and the rest of a preprocessor line ("if", "0").
std::pair<std::string, std::string> directive(std::string_view code) {
  auto h = code.find('#');
  if (h == std::string_view::npos) return {};
  std::size_t i = h + 1;
  while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i]))) ++i;
  std::size_t j = i;
  while (j < code.size() && std::isalpha(static_cast<unsigned char>(code[j]))) ++j;
  return {std::string(code.substr(i, j - i)), csrc::normalize_space(code.substr(j))};
}

bool is_compat_guard(std::string_view code) {
  auto [word, rest] = directive(code);
  if (word == "else" || word == "endif") return true;
  if (word == "if" || word == "elif")
    return rest.find("LINUX_VERSION_CODE") != std::string::npos || rest.find("KERNEL_VERSION") != std::string::npos;
  return false;
}

/// `#if 0`, `#if false`, `#ifdef NEVER`, `#if defined(NOTYET)` ...: a guard that is never true.
bool is_disabling_guard(std::string_view code) {
  static const std::set<std::string> k_never = {
      "NEVER", "NOTYET", "NOT_YET", "NOTDEF",   "DISABLED", "DISABLE",      "UNUSED",    "DEAD_CODE", "XXX", "TODO",
      "FIXME", "BROKEN", "REMOVED", "OLD_CODE", "NOT_USED", "DONT_COMPILE", "UNDEFINED", "NOPE",      "0"};
  auto [word, rest] = directive(code);
  std::string r = nospace(rest);
  auto upper = [](std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
  };
  if (word == "if" || word == "elif") {
    if (r == "0" || r == "(0)" || r == "false" || r == "(false)" || r.starts_with("0&&") || r.starts_with("(0)&&")) return true;
    if (r.starts_with("defined(") && r.ends_with(")") && r.find('&') == std::string::npos && r.find('|') == std::string::npos)
      return k_never.count(upper(r.substr(8, r.size() - 9))) > 0;
    if (r.starts_with("defined") && r.find_first_of("(&|") == std::string::npos) return k_never.count(upper(r.substr(7))) > 0;
    return false;
  }
  if (word == "ifdef") return k_never.count(upper(r)) > 0;
  return false;
}

struct DiagLine {
  int line = 0;
  const core::Diagnostic* diag = nullptr;
};

/// Original lines of this file that a diagnostic (or one of its notes) points at.
std::vector<DiagLine> diag_lines(const Context& ctx, const std::string& rel) {
  std::vector<DiagLine> out;
  for (const auto& d : ctx.in.diagnostics) {
    if (d.line > 0 && same_file(d.file) == rel) out.push_back({d.line, &d});
    for (const auto& n : d.notes)
      if (n.line > 0 && same_file(n.file) == rel) out.push_back({n.line, &d});
  }
  return out;
}

const csrc::TopItem* best_function(const csrc::ScannedFile& f, const std::string& name) {
  const csrc::TopItem* best = nullptr;
  for (const auto& it : f.items)
    if (it.kind == csrc::ItemKind::function && it.name == name && (!best || it.statements.size() > best->statements.size()))
      best = &it;
  return best;
}

bool is_return_only(const std::vector<std::string>& st) {
  return st.empty() || (st.size() == 1 && (st[0] == "return" || st[0].starts_with("return ") || st[0].starts_with("return(")));
}

// ---------------------------------------------------------------- per-file rule state

struct CFile {
  Context& ctx;
  const FilePair& f;
  std::vector<DiagLine> dlines;
  std::set<std::string> file_idents;  ///< identifiers named by diagnostics pointing into this file
  std::set<std::string> dline_idents; ///< identifiers on the original's lines those diagnostics point at
  std::set<std::string> o_functions;
  std::set<std::string> allowed_names; ///< items whose edits are explained by a diagnostic
  std::set<std::string> o_tables;      ///< top-level declarations (tables, variables) of the original
  std::vector<std::pair<int, int>> allowed_ranges;

  CFile(Context& c, const FilePair& fp) : ctx(c), f(fp) {
    dlines = diag_lines(ctx, f.rel);
    for (const auto& dl : dlines) {
      collect_idents(*dl.diag, file_idents);
      for (const auto& id : csrc::identifiers(f.o.code_line(dl.line))) dline_idents.insert(id);
    }
    for (const auto& it : f.o.items) {
      if (it.kind == csrc::ItemKind::function && !it.name.empty()) o_functions.insert(it.name);
      if (it.kind == csrc::ItemKind::declaration && !it.name.empty()) o_tables.insert(it.name);
    }
  }

  bool diag_into(const csrc::TopItem& it, std::set<std::string>* idents = nullptr) const {
    bool any = false;
    for (const auto& dl : dlines)
      if (it.first_line <= dl.line && dl.line <= it.last_line) {
        any = true;
        if (idents) collect_idents(*dl.diag, *idents);
      }
    return any;
  }
};

void function_rules(CFile& cf) {
  const auto& f = cf.f;
  for (const auto& it : f.o.items) {
    if (it.kind != csrc::ItemKind::function || it.name.empty()) continue;
    const csrc::TopItem* now = best_function(f.c, it.name);
    if (!now) {
      if (cf.ctx.candidate_functions.count(it.name)) continue;                          // moved to another file
      if (cf.ctx.removed.count(it.name) || cf.ctx.diag_idents.count(it.name)) continue; // clashes with the kernel
      cf.ctx.add("function-deleted", f.rel, f.candidate_line(it.first_line),
                 fmt::format("function '{}' (original line {}) is no longer defined", it.name, it.first_line));
      continue;
    }
    const auto& o = it.statements;
    const auto& c = now->statements;
    bool real = o.size() >= 2 || (o.size() == 1 && !is_return_only(o));
    if (real && is_return_only(c)) {
      std::set<std::string> named = cf.ctx.removed;
      bool pointed = cf.diag_into(it, &named);
      bool explained = pointed;
      for (const auto& s : o)
        if (std::find(c.begin(), c.end(), s) == c.end() && !mentions(s, named)) explained = false;
      if (!explained)
        cf.ctx.add("function-stubbed", f.rel, now->first_line,
                   fmt::format("function '{}' had {} statement(s), now only {}", it.name, o.size(),
                               c.empty() ? std::string("an empty body") : "'" + c[0] + "'"));
      continue;
    }
    long lost = static_cast<long>(o.size()) - static_cast<long>(c.size());
    if (lost > 3 && lost * 2 > static_cast<long>(o.size()) && !cf.diag_into(it))
      cf.ctx.add(
          "function-stubbed", f.rel, now->first_line,
          fmt::format("function '{}' lost {} of its {} statements and no diagnostic points into it", it.name, lost, o.size()));
  }
}

void code_disabled_rules(CFile& cf) {
  const auto& f = cf.f;
  // (1) added never-true guards and if (0)
  for (const auto& b : f.blocks)
    for (int l = b.c_first; l < b.c_first + b.c_count; ++l) {
      const auto& code = f.c.code_line(l);
      if (f.c.is_preproc(l) && is_disabling_guard(code))
        cf.ctx.add("code-disabled", f.rel, l, "added never-true guard '" + csrc::normalize_space(code) + "'");
    }
  std::size_t o_if0 = 0, c_if0 = 0;
  for (const auto& l : f.o.code) o_if0 += count_of(nospace(l), "if(0)") + count_of(nospace(l), "if(false)");
  for (const auto& l : f.c.code) c_if0 += count_of(nospace(l), "if(0)") + count_of(nospace(l), "if(false)");
  bool if0_reported = c_if0 <= o_if0;
  for (const auto& b : f.blocks)
    for (int l = b.c_first; l < b.c_first + b.c_count && !if0_reported; ++l) {
      auto n = nospace(f.c.code_line(l));
      if (n.find("if(0)") != std::string::npos || n.find("if(false)") != std::string::npos) {
        cf.ctx.add("code-disabled", f.rel, l, "added 'if (0)' around code");
        if0_reported = true;
      }
    }
  // (2) unchanged original code lines that a new comment now swallows
  for (int l = 1; l <= f.o.line_count(); ++l) {
    int j = f.o_to_c[static_cast<std::size_t>(l)];
    if (j == 0 || !f.o.has_code(l) || f.c.has_code(j) || !substantive(f.o.code_line(l))) continue;
    int run = 1;
    while (l + run <= f.o.line_count() && f.o_to_c[static_cast<std::size_t>(l + run)] != 0 &&
           !f.c.has_code(f.o_to_c[static_cast<std::size_t>(l + run)]) && f.o.has_code(l + run))
      ++run;
    cf.ctx.add("code-disabled", f.rel, j,
               fmt::format("{} original code line(s) (from original line {}) are now inside a comment", run, l));
    l += run - 1;
  }
  // (3) removed code lines that come back as comment text
  for (const auto& b : f.blocks) {
    std::vector<std::pair<int, std::string>> comments;
    for (int l = b.c_first; l < b.c_first + b.c_count; ++l) {
      std::string t = f.c.comment_line(l);
      auto s = t.find_first_not_of(" \t*/");
      if (s == std::string::npos) continue;
      comments.emplace_back(l, csrc::normalize_space(t.substr(s)));
    }
    if (comments.empty()) continue;
    for (int l = b.o_first; l < b.o_first + b.o_count; ++l) {
      if (!f.o.has_code(l) || !substantive(f.o.code_line(l))) continue;
      std::string text =
          csrc::normalize_space(f.o.comment_line(l).empty() ? f.o.raw[static_cast<std::size_t>(l - 1)] : f.o.code_line(l));
      if (text.size() < 6) continue;
      auto hit =
          std::find_if(comments.begin(), comments.end(), [&](const auto& c) { return c.second.find(text) != std::string::npos; });
      if (hit != comments.end()) {
        cf.ctx.add("code-disabled", f.rel, hit->first, fmt::format("original line {} '{}' is now a comment", l, text));
        break;
      }
    }
  }
}

/// A `#define` line split into its name, its parameter list (with the parentheses; empty for an
/// object-like macro) and its body, spaces removed; nullopt for any other line.
struct MacroDef {
  std::string name, params, body;
};
std::optional<MacroDef> macro_def(std::string_view code) {
  auto [word, rest] = directive(code);
  if (word != "define") return std::nullopt;
  std::size_t i = 0;
  while (i < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[i])) || rest[i] == '_')) ++i;
  if (i == 0) return std::nullopt;
  MacroDef m{rest.substr(0, i), {}, {}};
  if (i < rest.size() && rest[i] == '(') { // function-like only when '(' follows the name directly
    auto close = rest.find(')', i);
    if (close == std::string::npos) return std::nullopt;
    m.params = nospace(rest.substr(i, close + 1 - i));
    i = close + 1;
  }
  m.body = nospace(rest.substr(i));
  return m;
}

/// The macro maps its name onto itself: `#define f(a, b) f(a, b)`, `#define X X`, `#define X (X)`.
bool self_mapping(const MacroDef& m) {
  if (m.params.empty()) return m.body == m.name || m.body == "(" + m.name + ")";
  return m.body == m.name + m.params || m.body == "(" + m.name + m.params + ")";
}

/// A statement that only calls the function it is in: `return f(...);` or `f(...);` inside f.
bool self_call(const std::vector<std::string>& st, const std::string& name) {
  if (st.size() != 1) return false;
  std::string n = nospace(st[0]);
  if (n.starts_with("return")) n = n.substr(6);
  return n.starts_with(name + "(");
}

/// A driver's own compatibility layer maps one API onto another (`#define new_name(x)
/// old_name(x)`, an inline wrapper). A rename applied inside it leaves a self-reference (`#define
/// new_name(x) new_name(x)`: it compiles, and the kernels the shim served lose it), and an edit
/// that empties it keeps the name but drops what it did; the shim must be guarded or dropped.
void shim_rules(CFile& cf) {
  const auto& f = cf.f;
  std::map<std::string, MacroDef> original;
  for (int l = 1; l <= f.o.line_count(); ++l)
    if (f.o.is_preproc(l))
      if (auto m = macro_def(f.o.code_line(l)); m && !self_mapping(*m)) original.emplace(m->name, *m);
  for (const auto& b : f.blocks)
    for (int l = b.c_first; l < b.c_first + b.c_count; ++l) {
      if (!f.c.is_preproc(l)) continue;
      auto m = macro_def(f.c.code_line(l));
      if (!m) continue;
      auto was = original.find(m->name);
      if (was == original.end() || was->second.params != m->params) continue;
      if (self_mapping(*m))
        cf.ctx.add("shim-self-reference", f.rel, l,
                   fmt::format("'#define {}{} {}' now maps '{}' onto itself", m->name, m->params, was->second.body, m->name));
      else if (m->body.empty() && !was->second.body.empty())
        cf.ctx.add("shim-emptied", f.rel, l, fmt::format("macro '{}' lost its body '{}'", m->name, was->second.body));
    }
  for (const auto& it : f.o.items) {
    if (it.kind != csrc::ItemKind::function || it.name.empty() || self_call(it.statements, it.name)) continue;
    const csrc::TopItem* now = best_function(f.c, it.name);
    if (now && self_call(now->statements, it.name))
      cf.ctx.add("shim-self-reference", f.rel, now->first_line,
                 fmt::format("function '{}' now only calls itself (it was '{}')", it.name,
                             it.statements.empty() ? std::string() : it.statements[0]));
  }
}

void warning_rules(CFile& cf) {
  const auto& f = cf.f;
  static const std::vector<std::pair<std::string, std::string>> k_patterns = {
      {"#pragmaGCCdiagnostic", "#pragma GCC diagnostic"},
      {"#pragmaclangdiagnostic", "#pragma clang diagnostic"},
      {"#pragmawarning", "#pragma warning"},
      {"_Pragma(", "_Pragma"},
      {"__attribute__((unused))", "__attribute__((unused))"},
      {"__attribute__((__unused__))", "__attribute__((__unused__))"},
      {"__maybe_unused", "__maybe_unused"},
      {"__always_unused", "__always_unused"}};
  for (const auto& [pat, label] : k_patterns) {
    std::size_t o = 0, c = 0;
    for (const auto& l : f.o.code) o += count_of(nospace(l), pat);
    for (const auto& l : f.c.code) c += count_of(nospace(l), pat);
    if (c <= o) continue;
    int at = 0;
    for (const auto& b : f.blocks)
      for (int l = b.c_first; l < b.c_first + b.c_count && at == 0; ++l)
        if (nospace(f.c.code_line(l)).find(pat) != std::string::npos) at = l;
    cf.ctx.add("warning-suppressed", f.rel, at, fmt::format("added '{}' ({} -> {})", label, o, c));
  }
}

std::size_t silencing_casts(std::string_view code) {
  std::string n = nospace(code);
  std::size_t count = count_of(n, "(*)(");
  for (std::string_view pat : {"(void*)", "(constvoid*)"})
    for (auto p = n.find(pat); p != std::string::npos; p = n.find(pat, p + 1))
      if (p > 0 && (n[p - 1] == '=' || n[p - 1] == ',' || n[p - 1] == '(')) ++count;
  return count;
}

void cast_rules(CFile& cf) {
  const auto& f = cf.f;
  for (const auto& b : f.blocks) {
    std::size_t removed = 0, added = 0;
    int at = 0;
    for (int l = b.o_first; l < b.o_first + b.o_count; ++l) removed += silencing_casts(f.o.code_line(l));
    for (int l = b.c_first; l < b.c_first + b.c_count; ++l) {
      std::size_t n = silencing_casts(f.c.code_line(l));
      if (n && !at) at = l;
      added += n;
    }
    if (added > removed)
      cf.ctx.add("silencing-cast", f.rel, at,
                 fmt::format("added cast '{}' where the original had none", csrc::normalize_space(f.c.code_line(at))));
  }
}

/// `(int (*)(struct x *))foo` -> `foo`: a cast does not unwire a callback (silencing-cast judges it).
std::string uncast(const std::string& v) {
  if (v.empty() || v[0] != '(') return v;
  int depth = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '(') ++depth;
    else if (v[i] == ')' && --depth == 0) {
      std::string rest = csrc::normalize_space(std::string_view(v).substr(i + 1));
      bool simple = !rest.empty() && (rest[0] == '&' || rest[0] == '_' || std::isalpha(static_cast<unsigned char>(rest[0])));
      return simple && csrc::identifiers(rest).size() == 1 ? rest : v;
    }
  }
  return v;
}

/// The identifiers used by the functions in `roots`, and by the functions those use (bounded).
std::set<std::string> reached_from(const std::set<std::string>& roots,
                                   const std::map<std::string, std::set<std::string>>& used_in_function) {
  std::set<std::string> seen(roots.begin(), roots.end());
  std::vector<std::string> todo(roots.begin(), roots.end());
  for (std::size_t i = 0; i < todo.size() && i < 256; ++i) {
    auto it = used_in_function.find(todo[i]);
    if (it == used_in_function.end()) continue;
    for (const auto& id : it->second)
      if (seen.insert(id).second) todo.push_back(id);
  }
  return seen;
}

void ops_rules(CFile& cf) {
  const auto& f = cf.f;
  auto key = [](const csrc::Assignment& a) { return a.scope + "\n" + a.member + "\n" + uncast(a.value); };
  std::map<std::string, int> now;
  std::map<std::string, std::set<std::string>> values_in_scope; // scope -> values assigned in the candidate
  for (const auto& a : csrc::member_assignments(f.c)) {
    ++now[key(a)];
    values_in_scope[a.scope].insert(uncast(a.value));
  }
  // Identifiers each function of the candidate still uses: an assignment of a callback folded
  // into a call that takes it (`t.function = f;` + `hrtimer_init(&t, ...)` -> `hrtimer_setup(&t,
  // f, ...)`) leaves the callback used in the same function.
  std::map<std::string, std::set<std::string>> used_in_function;
  for (const auto& it : f.c.items)
    if (it.kind == csrc::ItemKind::function && !it.name.empty())
      for (const auto& st : it.statements)
        for (const auto& id : csrc::identifiers(st)) used_in_function[it.name].insert(id);
  for (const auto& a : csrc::member_assignments(f.o)) {
    auto it = now.find(key(a));
    if (it != now.end() && it->second > 0) {
      --it->second;
      continue;
    }
    auto vids = csrc::identifiers(a.value);
    bool removed = cf.ctx.removed.count(a.member) > 0;
    bool value_named = false;
    for (const auto& id : vids)
      if (cf.ctx.removed.count(id) || cf.file_idents.count(id)) value_named = true;
    bool member_named = cf.file_idents.count(a.member) > 0;
    if (value_named) continue;
    // A table an accepted edit names as removed (sysctl directory tables the target's path
    // registration replaced): its entries went with it.
    if (!a.scope.empty() && cf.ctx.removed.count(a.scope)) continue;
    // The same value still set in the same table under another member: the member was renamed
    // (`.open = f` -> `.proc_open = f` when the table's struct type changed).
    if (vids.size() == 1 && values_in_scope[a.scope].count(uncast(a.value))) continue;
    if (vids.size() == 1 && cf.o_functions.count(vids[0]) && used_in_function[a.scope].count(vids[0])) continue;
    // The callback is still called by a function the same table now holds, directly or through
    // functions those call (a table whose struct type the target removed, converted with adapters
    // of the new callback types that call the driver's callbacks).
    if (vids.size() == 1 && cf.o_functions.count(vids[0]) &&
        reached_from(values_in_scope[a.scope], used_in_function).count(vids[0]))
      continue;
    // The table itself is what a diagnostic names, or passes on its line (its struct type is gone
    // or changed: `proc_create(..., &fops)` of a `file_operations` the target wants as
    // `proc_ops`): values that are no callback of this file (`.owner = THIS_MODULE`, `.class =
    // "x"`) may go with the old type.
    if (!a.scope.empty() && (cf.file_idents.count(a.scope) || cf.dline_idents.count(a.scope)) &&
        !(vids.size() == 1 && cf.o_functions.count(vids[0])))
      continue;
    if (removed || member_named) {
      // A callback of this file must stay wired up: renaming the member is fine, dropping it is not.
      std::string fn = vids.size() == 1 ? vids[0] : std::string();
      if (fn.empty() || !cf.o_functions.count(fn)) continue;
      if (values_in_scope[a.scope].count(a.value)) continue;
      cf.ctx.add("ops-assignment-removed", f.rel, f.candidate_line(a.line),
                 fmt::format("callback '{}' is no longer assigned in '{}' (was .{} on original line {})", fn, a.scope, a.member,
                             a.line));
      continue;
    }
    cf.ctx.add("ops-assignment-removed", f.rel, f.candidate_line(a.line),
               fmt::format("'{}{} = {}' removed from '{}' (original line {}) and no diagnostic names it",
                           a.scope.empty() ? "" : ".", a.member, a.value, a.scope, a.line));
  }
}

void unrelated_rules(CFile& cf) {
  const auto& f = cf.f;
  // Which original items and names a diagnostic explains.
  for (const auto& dl : cf.dlines) {
    const auto* it = f.o.item_at(dl.line);
    if (it) {
      cf.allowed_ranges.emplace_back(it->first_line, it->last_line);
      if (!it->name.empty()) cf.allowed_names.insert(it->name);
    } else {
      // a directive's continuation lines (`#define m(x) \` and the next) are the line gcc names
      int last = dl.line;
      while (last < f.o.line_count() && util::trim(f.o.raw[static_cast<std::size_t>(last) - 1]).ends_with("\\")) ++last;
      cf.allowed_ranges.emplace_back(dl.line, last);
    }
    // a callback assigned on the diagnostic's line (`.remove = foo_remove`): its definition may
    // change; so may a table the line passes (`proc_create(..., &fops)`: its struct type changed)
    for (const auto& id : csrc::identifiers(f.o.code_line(dl.line)))
      if (cf.o_functions.count(id) || cf.o_tables.count(id)) cf.allowed_names.insert(id);
  }
  // The callbacks a table on a diagnostic's line holds (`.drv.pm = &foo_pm` of an object whose
  // struct type went: its pm callbacks get another object's device now) may change too; the
  // table is a declaration of that name or one a declaring macro makes (`SIMPLE_DEV_PM_OPS(foo_pm,
  // suspend, resume)`).
  {
    std::set<std::string> tables;
    for (const auto& id : cf.dline_idents)
      if (!cf.o_functions.count(id)) tables.insert(id);
    for (const auto& it : f.o.items) {
      if (it.kind != csrc::ItemKind::declaration) continue;
      const auto text = std::string_view(f.o.text).substr(it.begin, it.end - it.begin);
      const auto ids = csrc::identifiers(text);
      bool holds = tables.count(it.name) > 0;
      for (std::size_t i = 0; !holds && i + 1 < ids.size(); ++i)
        holds =
            tables.count(ids[i + 1]) &&
            std::none_of(ids[i].begin(), ids[i].end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); }) &&
            nospace(text).find(ids[i] + "(" + ids[i + 1] + ",") != std::string::npos;
      if (!holds) continue;
      for (const auto& id : ids)
        if (cf.o_functions.count(id)) cf.allowed_names.insert(id);
    }
  }
  // A driver function the port's changes name (a callback whose type changed, found only after
  // an earlier fix let gcc get that far: the original build stopped at a missing header).
  for (const auto& fn : cf.o_functions)
    if (cf.ctx.diag_idents.count(fn) || cf.ctx.diag_functions.count(fn) || cf.ctx.removed.count(fn)) cf.allowed_names.insert(fn);
  // A callback handed to a changed call in any file: its definition here, or its prototype.
  for (const auto& it : f.o.items)
    if (cf.ctx.passed_functions.count(it.name)) cf.allowed_names.insert(it.name);
  // New helpers are fine when code that may change calls them, and so are the helpers those
  // call (an adapter a converted table holds calls a handler adapter of its own).
  for (std::size_t before = 0; before != cf.allowed_names.size();) {
    before = cf.allowed_names.size();
    for (const auto& it : f.c.items) {
      if (it.name.empty() || !cf.allowed_names.count(it.name)) continue;
      for (const auto& id : csrc::identifiers(std::string_view(f.c.text).substr(it.begin, it.end - it.begin)))
        if (!cf.o_functions.count(id) && best_function(f.c, id)) cf.allowed_names.insert(id);
    }
  }

  auto ignorable = [&cf](const csrc::ScannedFile& s, int l) {
    if (!s.has_code(l)) return true; // blank or comment only (commented-out code is code-disabled's)
    if (!s.is_preproc(l)) return false;
    auto [word, rest] = directive(s.code_line(l));
    // a feature switch turned on: explained by the diagnostics in the branch it switches off
    if (word == "define" && cf.ctx.feature_switches.count(defined_switch(s.code_line(l)))) return true;
    // a constant the diagnostics say is undeclared, defined by the candidate (a number the kernel
    // dropped from its registry header)
    if (word == "define" && &s == &cf.f.c) {
      static const std::regex k_const(R"(^\s*#\s*define\s+([A-Za-z_]\w*)\s+(?:0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*\s*$)");
      std::smatch m;
      const std::string code(s.code_line(l));
      if (std::regex_match(code, m, k_const) && cf.ctx.diag_idents.count(m[1].str())) return true;
    }
    return word == "include" || is_compat_guard(s.code_line(l));
  };
  auto o_allowed = [&](int l) {
    for (const auto& [a, b] : cf.allowed_ranges)
      if (a <= l && l <= b) return true;
    const auto* it = f.o.item_at(l);
    return (it && cf.allowed_names.count(it->name)) || mentions(f.o.code_line(l), cf.ctx.removed);
  };
  auto c_allowed = [&](int l) {
    const auto* it = f.c.item_at(l);
    if ((it && cf.allowed_names.count(it->name)) || mentions(f.c.code_line(l), cf.ctx.removed)) return true;
    // A file-scope line (MODULE_IMPORT_NS("NS");) naming what a module-wide diagnostic names,
    // string contents included.
    if ((it && it->kind == csrc::ItemKind::function) || cf.ctx.module_words.empty()) return false;
    const auto words = csrc::identifiers(f.c.raw[static_cast<std::size_t>(l) - 1]);
    return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return cf.ctx.module_words.count(w) > 0; });
  };
  for (const auto& b : f.blocks) {
    std::vector<int> ol, cl;
    std::string os, cs;
    for (int l = b.o_first; l < b.o_first + b.o_count; ++l)
      if (!ignorable(f.o, l)) ol.push_back(l), os += nospace(f.o.code_line(l));
    for (int l = b.c_first; l < b.c_first + b.c_count; ++l)
      if (!ignorable(f.c, l)) cl.push_back(l), cs += nospace(f.c.code_line(l));
    if (ol.empty() && cl.empty()) continue;
    if (os == cs) continue; // whitespace-only
    // Lines a diagnostic points at may be replaced by anything the other rules let through (a
    // top-level `static DECLARE_MUTEX(m);` becomes `static DEFINE_SEMAPHORE(m);`: the item's
    // name is the macro's, so names alone would not tell).
    auto diagnosed = [&](int l) {
      return std::any_of(cf.dlines.begin(), cf.dlines.end(), [&](const auto& dl) { return dl.line == l; });
    };
    // So may lines naming a symbol whose API changed (an accepted edit's, removed_symbols): the
    // build reports such a line only once an earlier error is gone (a header the target lacks
    // stops gcc before `.probe_new = f,` further down), after the diagnostics the gate is given.
    auto names_changed = [&](int l) { return diagnosed(l) || mentions(f.o.code_line(l), cf.ctx.removed); };
    bool replaced_explained = !ol.empty() && std::all_of(ol.begin(), ol.end(), names_changed) && cl.size() <= ol.size() + 2;
    // A statement folded into the changed call beside it (`hrtimer_init(&t, c, m); t.function = f;`
    // -> `hrtimer_setup(&t, f, c, m);`): no more lines than before, the new ones naming a changed
    // symbol, and every variable of the folded lines (not the members they name) still there.
    const auto folded = [&] {
      if (ol.empty() || cl.empty() || cl.size() > ol.size() || !std::any_of(ol.begin(), ol.end(), names_changed) ||
          !std::any_of(cl.begin(), cl.end(), [&](int l) { return mentions(f.c.code_line(l), cf.ctx.removed); }))
        return false;
      std::set<std::string> kept;
      for (int l : cl)
        for (auto& id : csrc::identifiers(f.c.code_line(l))) kept.insert(id);
      for (int l : ol) {
        if (names_changed(l)) continue;
        const auto toks = csrc::tokenize(std::string(f.o.code_line(l)));
        for (std::size_t k = 0; k < toks.size(); ++k)
          if (toks[k].kind == csrc::TokKind::ident && !(k > 0 && (toks[k - 1].text == "->" || toks[k - 1].text == ".")) &&
              !kept.count(toks[k].text))
            return false;
      }
      return true;
    };
    const bool fold = folded();
    bool ok = (fold || std::all_of(ol.begin(), ol.end(), o_allowed)) &&
              (fold || replaced_explained || std::all_of(cl.begin(), cl.end(), c_allowed));
    if (ok) continue;
    int at = !cl.empty() ? cl.front() : f.candidate_line(ol.front());
    const auto* it = !cl.empty() ? f.c.item_at(cl.front()) : f.o.item_at(ol.front());
    std::string where = it && !it->name.empty() ? fmt::format(" in '{}'", it->name) : std::string();
    std::string what = !f.in_candidate ? "file deleted"
                       : ol.empty()    ? fmt::format("{} line(s) added", cl.size())
                       : cl.empty()    ? fmt::format("{} line(s) removed (original line {})", ol.size(), ol.front())
                                       : fmt::format("original lines {}-{} changed", ol.front(), ol.back());
    cf.ctx.add("unrelated-change", f.rel, at, fmt::format("{}{} and no diagnostic points there", what, where));
  }
}

} // namespace

// ---------------------------------------------------------------- FilePair, Context

void FilePair::build_line_map() {
  auto n = static_cast<std::size_t>(o.line_count());
  o_to_c.assign(n + 1, 0);
  o_block.assign(n + 1, -1);
  int delta = 0;
  std::size_t bi = 0;
  for (int l = 1; l <= o.line_count(); ++l) {
    while (bi < blocks.size() && blocks[bi].o_first + blocks[bi].o_count <= l) {
      delta += blocks[bi].c_count - blocks[bi].o_count;
      ++bi;
    }
    if (bi < blocks.size() && blocks[bi].o_first <= l && l < blocks[bi].o_first + blocks[bi].o_count) {
      o_block[static_cast<std::size_t>(l)] = static_cast<int>(bi);
      continue;
    }
    int j = l + delta;
    if (j >= 1 && j <= c.line_count()) o_to_c[static_cast<std::size_t>(l)] = j;
  }
}

int FilePair::candidate_line(int o_line) const {
  if (!in_candidate) return 0;
  if (o_line >= 1 && static_cast<std::size_t>(o_line) < o_to_c.size()) {
    if (int j = o_to_c[static_cast<std::size_t>(o_line)]; j) return j;
    if (int b = o_block[static_cast<std::size_t>(o_line)]; b >= 0)
      return std::clamp(blocks[static_cast<std::size_t>(b)].c_first, 1, std::max(1, c.line_count()));
  }
  return 0;
}

Context::Context(const IntegrityInput& input, IntegrityReport& rep) : in(input), report(rep) {
  removed.insert(in.removed_symbols.begin(), in.removed_symbols.end());
  std::map<std::string, std::vector<SwitchTest>> tests; // original file -> its switch tests
  for (const auto& d : in.diagnostics) {
    collect_idents(d, diag_idents);
    if (!d.function.empty()) diag_functions.insert(d.function);
    if (d.tool == "modpost" || d.file.empty())
      for (auto& id : csrc::identifiers(d.message))
        if (std::any_of(id.begin(), id.end(), [](char ch) { return ch == '_' || std::isupper(static_cast<unsigned char>(ch)); }))
          module_words.insert(id);
    if (d.file.empty() || d.file.front() == '/' || d.line <= 0) continue;
    auto it = tests.find(d.file);
    if (it == tests.end()) {
      auto text = util::read_file(in.original / d.file);
      it = tests.emplace(d.file, text ? switch_tests(*text) : std::vector<SwitchTest>{}).first;
    }
    for (const auto* t : switches_off_at(it->second, d.line)) feature_switches.insert(t->macro);
  }
}

void Context::add(const std::string& rule, const std::string& file, int line, std::string detail) {
  report.ok = false;
  if (report.violations.size() >= k_max_violations) return;
  report.violations.push_back({rule, file, line, std::move(detail)});
}

void Context::note_candidate_functions(const csrc::ScannedFile& f) {
  for (const auto& it : f.items)
    if (it.kind == csrc::ItemKind::function && !it.name.empty()) candidate_functions.insert(it.name);
}

void Context::note_passed_functions(const FilePair& f) {
  if (!f.in_original) return;
  std::set<int> lines;
  for (const auto& dl : diag_lines(*this, f.rel)) lines.insert(dl.line);
  for (int l = 1; l <= f.o.line_count(); ++l)
    if (lines.count(l) || mentions(f.o.code_line(l), removed))
      for (const auto& id : csrc::identifiers(f.o.code_line(l)))
        if (candidate_functions.count(id) && !removed.count(id)) passed_functions.insert(id);
}

bool is_c_source(const std::string& rel) {
  auto ext = std::filesystem::path(rel).extension().string();
  return ext == ".c" || ext == ".h";
}

bool is_makefile(const std::string& rel) {
  auto name = std::filesystem::path(rel).filename().string();
  return name == "Makefile" || name == "makefile" || name == "GNUmakefile" || name == "Kbuild" || name.starts_with("Makefile.") ||
         name.starts_with("Kbuild.") || name.ends_with(".mk");
}

void check_c_file(Context& ctx, const FilePair& f) {
  CFile cf(ctx, f);
  function_rules(cf);
  code_disabled_rules(cf);
  if (f.in_original) shim_rules(cf);
  warning_rules(cf);
  cast_rules(cf);
  ops_rules(cf);
  if (f.in_original) unrelated_rules(cf); // a new file (compat header) has no original to compare with
}

} // namespace autodriver::gate::integrity
