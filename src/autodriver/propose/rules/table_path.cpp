// The table-path mechanism of the rule packs (kind table-path, rules/sysctl-register-path.rule):
// a registration of nested tables, each level one directory entry (`.procname = "dev"`,
// `.child = next`), becomes one call naming the directories as a path, and the directory tables,
// used nowhere else, are deleted. Every name (the table and path struct types, the name and
// child members, the old calls, the new call, the header declaring it) comes from the rule; the
// trigger and the target's side come from the target: its header must declare the new call and
// no longer declare the old one. When the target's new call is a macro that sizes the table
// itself (ARRAY_SIZE), the empty entry that ended the table would count as a nameless entry, so
// the leaf's terminator goes too. A level with several entries cannot be one path: nothing is
// proposed then.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/rules/rule_mechanisms.hpp"
#include "autodriver/propose/rules/rules.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;

namespace {

struct CtlEntry {
  std::size_t open = 0, close = 0; ///< tokens of its braces
  std::string procname;            ///< the string literal's text, quotes included; empty if none
  std::string child;               ///< `.child = x`: x
  bool empty = false;              ///< `{ }` / `{ 0 }` / `{}`: the old terminator
};

struct CtlTable {
  std::string name;
  std::string type;                ///< "ctl_table" or "ctl_path"
  std::size_t first = 0, last = 0; ///< tokens of the whole declaration (to its ';')
  std::vector<CtlEntry> entries;
  bool positional = false; ///< an entry without designators: not understood
};

/// The rule's names.
struct TablePathSpec {
  std::string table_type, path_type, name_member, child_member, table_call, paths_call, new_call, header;
  std::string origin; ///< the rule's provenance
  std::string why;
};

/// `[static] [const] struct TABLE NAME[] = { {...}, ... };` declarations of a file.
std::map<std::string, CtlTable> ctl_tables(const std::vector<Token>& toks, const TablePathSpec& sp) {
  std::map<std::string, CtlTable> out;
  for (const auto& u : find_units(toks)) {
    if (u.kind != UnitKind::initializer) continue;
    std::string type = has_word(u.type, sp.table_type) ? sp.table_type : has_word(u.type, sp.path_type) ? sp.path_type : "";
    if (type.empty() || u.type.find("struct") == std::string::npos) continue;
    std::size_t open = u.body + 1;
    if (open >= toks.size() || toks[open].text != "{") continue;
    std::size_t close = matching_close(toks, open);
    if (close == std::string::npos) continue;
    CtlTable t;
    t.name = u.name;
    t.type = type;
    t.first = u.first;
    t.last = u.last;
    for (std::size_t i = open + 1; i < close; ++i) {
      if (toks[i].text != "{") continue;
      std::size_t c = matching_close(toks, i);
      if (c == std::string::npos || c > close) break;
      CtlEntry e;
      e.open = i;
      e.close = c;
      e.empty = c == i + 1 || (c == i + 2 && (toks[i + 1].text == "0" || toks[i + 1].text == "NULL"));
      bool designated = false;
      for (std::size_t k = i + 1; k + 2 < c; ++k) {
        if (toks[k].text != "." || toks[k + 2].text != "=") continue;
        designated = true;
        if (toks[k + 1].text == sp.name_member && toks[k + 3].kind == TokKind::string) e.procname = toks[k + 3].text;
        if (toks[k + 1].text == sp.child_member && toks[k + 3].kind == TokKind::ident) e.child = toks[k + 3].text;
      }
      if (!designated && !e.empty) t.positional = true;
      t.entries.push_back(e);
      i = c;
    }
    out[t.name] = std::move(t);
  }
  return out;
}

/// The lines [first, last] (1-based) a declaration spans, widened by one blank line after it
/// when a blank line also precedes it (the file keeps one blank line between its neighbours).
std::pair<int, int> decl_lines(const std::vector<std::string_view>& lines, const std::vector<Token>& toks, const CtlTable& t) {
  int first = toks[t.first].line, last = toks[t.last].line;
  auto blank = [&](int n) { return n >= 1 && n <= static_cast<int>(lines.size()) && util::trim(lines[n - 1]).empty(); };
  if (blank(first - 1) && blank(last + 1)) ++last;
  return {first, last};
}

/// Whole-word occurrences of `name` in the tokens.
int uses_of(const std::vector<Token>& toks, const std::string& name) {
  return static_cast<int>(std::count_if(toks.begin(), toks.end(), [&](const Token& t) { return t.text == name; }));
}

/// "dev" "ipmi" -> "\"dev/ipmi\"" (the literals' contents joined).
std::string path_literal(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) {
    if (p.size() < 2) return {};
    if (!s.empty()) s += "/";
    s += p.substr(1, p.size() - 2);
  }
  return "\"" + s + "\"";
}

struct TargetTables {
  bool has_path_call = false;  ///< the new call, e.g. register_sysctl(path, table)
  bool has_table_call = false; ///< the old call of a root table still there
  bool has_paths_call = false; ///< the old call of a path and a table still there
  bool sized = false;          ///< the new call is a macro passing ARRAY_SIZE(table): no terminator
};

TargetTables target_tables(const PortContext& ctx, const TablePathSpec& sp) {
  TargetTables t;
  std::vector<fs::path> where;
  if (!ctx.new_src.empty()) where.push_back(ctx.new_src / sp.header);
  if (ctx.to) where.push_back(ctx.to->build_dir / sp.header);
  for (const auto& p : where) {
    auto text = util::read_file(p);
    if (!text) continue;
    t.has_path_call = text->find(sp.new_call + "(") != std::string::npos;
    t.has_table_call = has_word(*text, sp.table_call);
    t.has_paths_call = !sp.paths_call.empty() && has_word(*text, sp.paths_call);
    static const std::regex k_sized(R"(ARRAY_SIZE\s*\()");
    auto def = text->find("#define " + sp.new_call + "(");
    if (def != std::string::npos) {
      auto end = text->find('\n', def);
      while (end != std::string::npos && end > 0 && (*text)[end - 1] == '\\') end = text->find('\n', end + 1);
      t.sized = std::regex_search(text->substr(def, end == std::string::npos ? std::string::npos : end - def), k_sized);
    }
    break;
  }
  return t;
}

std::optional<Edit> rewrite(const std::string& rel, const std::string& text, const std::vector<Token>& toks,
                            const std::vector<std::string_view>& lines, const std::map<std::string, CtlTable>& tables,
                            const Call& call, bool paths_call, bool sized, const TablePathSpec& sp) {
  std::vector<std::string> parts;
  std::vector<const CtlTable*> dirs; // tables that only name a directory: deleted
  std::string leaf;
  auto table_named = [&](const std::string& n) -> const CtlTable* {
    auto it = tables.find(n);
    return it == tables.end() || it->second.positional ? nullptr : &it->second;
  };
  if (paths_call) {
    // register_sysctl_paths(path, table): struct ctl_path { .procname } entries, then a terminator.
    const CtlTable* p = table_named(call.args[0]);
    if (!p || p->type != sp.path_type) return std::nullopt;
    for (const auto& en : p->entries) {
      if (en.empty) continue;
      if (en.procname.empty()) return std::nullopt;
      parts.push_back(en.procname);
    }
    dirs.push_back(p);
    leaf = call.args[1];
  } else {
    std::string cur = call.args[0];
    for (int depth = 0;; ++depth) {
      const CtlTable* t = table_named(cur);
      if (!t || t->type != sp.table_type || depth > 8) return std::nullopt;
      std::vector<const CtlEntry*> live;
      for (const auto& en : t->entries)
        if (!en.empty) live.push_back(&en);
      bool any_child = std::any_of(live.begin(), live.end(), [](const CtlEntry* en) { return !en->child.empty(); });
      if (!any_child) {
        leaf = cur;
        break;
      }
      // One directory entry per level, or the registration is not one path.
      if (live.size() != 1 || live[0]->procname.empty()) return std::nullopt;
      parts.push_back(live[0]->procname);
      dirs.push_back(t);
      cur = live[0]->child;
    }
  }
  if (parts.empty() || leaf.empty() || !table_named(leaf)) return std::nullopt;
  std::string path = path_literal(parts);
  if (path.size() <= 2) return std::nullopt;
  // A directory table used anywhere else (another registration, a pointer) stays, and then
  // its .child would still not compile: give up.
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    int expected = 1 /* its declaration */ + 1 /* the call or the parent's .child */;
    if (uses_of(toks, dirs[i]->name) > expected) return std::nullopt;
  }
  Edit e;
  e.proposer = "rule-pack";
  e.change_id = fmt::format("table-path:{}:{}", rel, call.args[0]);
  e.label = "removed-with-replacement";
  e.title = fmt::format("{}() is gone: register {} under {}", call.callee, leaf, path);
  e.description =
      fmt::format("The target kernel has no {}(): {}. The table is registered under its path, {}({}, {}), and the tables that "
                  "only named its directories are deleted. Rule: {}.",
                  call.callee, sp.why, sp.new_call, path, leaf, sp.origin);
  // The call: its tokens from the name to the ')' replaced, on the lines they span.
  int l0 = toks[call.name_tok].line, l1 = toks[call.close_tok].line;
  e.text_edits.push_back(
      token_span_edit(rel, text, toks[call.name_tok], toks[call.close_tok], fmt::format("{}({}, {})", sp.new_call, path, leaf)));
  for (const auto* d : dirs) {
    auto [first, last] = decl_lines(lines, toks, *d);
    if (first <= l1 && last >= l0) return std::nullopt;
    e.text_edits.push_back({rel, first, last - first + 1, ""});
  }
  // The leaf's terminator, when the target sizes tables itself (and it sits on lines of its own).
  if (sized) {
    const CtlTable* t = table_named(leaf);
    for (const auto& en : t->entries) {
      if (!en.empty) continue;
      int a = toks[en.open].line, b = toks[en.close].line;
      std::size_t after = en.close + 1 < toks.size() && toks[en.close + 1].text == "," ? en.close + 1 : en.close;
      bool alone = (en.open == 0 || toks[en.open - 1].line < a) && (after + 1 >= toks.size() || toks[after + 1].line > b);
      if (alone) e.text_edits.push_back({rel, a, b - a + 1, ""});
    }
    e.description += fmt::format(" The target's {}() passes the table's size (ARRAY_SIZE), so the empty entry "
                                 "that ended the table would be registered as a nameless entry: it goes.",
                                 sp.new_call);
  }
  std::stable_sort(e.text_edits.begin(), e.text_edits.end(),
                   [](const TextEdit& a, const TextEdit& b) { return a.line > b.line; });
  e.symbols = {call.callee, sp.new_call, leaf};
  for (const auto* d : dirs) e.symbols.push_back(d->name); // deleted whole (the integrity gate reads this)
  e.support = 1;
  e.evidence = {sp.origin};
  util::log_debug("table-path: {} -> {}({}, {})", call.callee, sp.new_call, path, leaf);
  return e;
}

} // namespace

std::vector<Edit> propose_table_path(const std::vector<core::Diagnostic>& diags, const PortContext& ctx, const Rule& rule) {
  std::vector<Edit> out;
  auto field = [&](const char* k) {
    auto w = rule.words(k);
    return w.empty() ? std::string() : w.front();
  };
  TablePathSpec sp{field("table-type"), field("path-type"), field("name-member"), field("child-member"), field("table-call"),
                   field("paths-call"), field("new-call"),  field("header"),      rule.provenance(),     rule.why};
  bool named = std::any_of(diags.begin(), diags.end(), [&](const core::Diagnostic& d) {
    return (!d.symbols.empty() && (d.symbols[0] == sp.table_call || (!sp.paths_call.empty() && d.symbols[0] == sp.paths_call))) ||
           (d.kind == core::DiagKind::no_member && has_word(d.message, sp.table_type) &&
            d.message.find("'" + sp.child_member + "'") != std::string::npos);
  });
  if (!named) return out;
  TargetTables target = target_tables(ctx, sp);
  if (!target.has_path_call) return out;
  long version = ctx.to ? linux_version_code(ctx.to->build_dir) : 0;
  // Files naming either old call: their names' common prefix.
  std::string stem = sp.table_call;
  if (!sp.paths_call.empty())
    stem.resize(static_cast<std::size_t>(
        std::mismatch(stem.begin(), stem.end(), sp.paths_call.begin(), sp.paths_call.end()).first - stem.begin()));
  for (const auto& [rel, text] : sources_mentioning(ctx.tree, stem)) {
    auto toks = tokenize(text);
    auto tables = ctl_tables(toks, sp);
    auto lines = util::split_lines(text);
    auto dead = version ? version_dead_lines(text, version) : std::vector<bool>{};
    for (const auto& call : find_calls(toks, 0, toks.empty() ? 0 : toks.size() - 1)) {
      bool table_call = call.callee == sp.table_call && !target.has_table_call && call.args.size() == 1;
      bool paths_call = !sp.paths_call.empty() && call.callee == sp.paths_call && !target.has_paths_call && call.args.size() == 2;
      if (!table_call && !paths_call) continue;
      int line = toks[call.name_tok].line;
      if (line - 1 < static_cast<int>(dead.size()) && dead[static_cast<std::size_t>(line - 1)]) continue;
      if (auto e = rewrite(rel, text, toks, lines, tables, call, paths_call, target.sized, sp); e) out.push_back(std::move(*e));
    }
  }
  return out;
}

} // namespace autodriver::propose
