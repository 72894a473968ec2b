// Proposer "sysctl-path": sysctl directories named by a path string instead of nested tables.
// General kernel-API knowledge, stated once: Linux 6.6 removed register_sysctl_table() and
// struct ctl_table's .child (and 6.5 register_sysctl_paths() with struct ctl_path); a driver
// registers its leaf table under a "dir/subdir" path with register_sysctl(path, table), which
// 6.1 already has. The trigger and the target's side come from the target: its sysctl.h must
// declare register_sysctl() and no longer declare the old call. When the target's
// register_sysctl() sizes the table itself (a macro passing ARRAY_SIZE(table), Linux 6.11+),
// the empty entry that ended the table is counted as an entry with no name and the
// registration fails, so the leaf's sentinel goes too.
//
// register_sysctl_table(root) where each table on the way down has one entry, a directory
// (`.procname = "dev"`, `.child = next`), becomes register_sysctl("dev/ipmi", leaf), and the
// directory tables, used nowhere else, are deleted. A level with several entries cannot be one
// path: nothing is proposed then.

#include "autodriver/propose/apply.hpp"
#include "autodriver/propose/c_tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace autodriver::propose {

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
  std::string type;                 ///< "ctl_table" or "ctl_path"
  std::size_t first = 0, last = 0;  ///< tokens of the whole declaration (to its ';')
  std::vector<CtlEntry> entries;
  bool positional = false;          ///< an entry without designators: not understood
};

/// `[static] [const] struct ctl_table NAME[] = { {...}, ... };` declarations of a file.
std::map<std::string, CtlTable> ctl_tables(const std::vector<Token>& toks) {
  std::map<std::string, CtlTable> out;
  for (const auto& u : find_units(toks)) {
    if (u.kind != UnitKind::initializer) continue;
    std::string type = u.type.find("ctl_table") != std::string::npos ? "ctl_table"
                       : u.type.find("ctl_path") != std::string::npos ? "ctl_path" : "";
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
        if (toks[k + 1].text == "procname" && toks[k + 3].kind == TokKind::string) e.procname = toks[k + 3].text;
        if (toks[k + 1].text == "child" && toks[k + 3].kind == TokKind::ident) e.child = toks[k + 3].text;
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
std::pair<int, int> decl_lines(const std::vector<std::string_view>& lines, const std::vector<Token>& toks,
                               const CtlTable& t) {
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

struct TargetSysctl {
  bool has_path_call = false;  ///< register_sysctl(path, table)
  bool has_table_call = false; ///< register_sysctl_table(table) still there
  bool has_paths_call = false; ///< register_sysctl_paths(path, table) still there
  bool sized = false;          ///< register_sysctl() passes ARRAY_SIZE(table): no terminator
};

TargetSysctl target_sysctl(const PortContext& ctx) {
  TargetSysctl t;
  std::vector<fs::path> where;
  if (!ctx.new_src.empty()) where.push_back(ctx.new_src / "include/linux/sysctl.h");
  if (ctx.to) where.push_back(ctx.to->build_dir / "include/linux/sysctl.h");
  for (const auto& p : where) {
    auto text = util::read_file(p);
    if (!text) continue;
    t.has_path_call = text->find("register_sysctl(") != std::string::npos;
    t.has_table_call = has_word(*text, "register_sysctl_table");
    t.has_paths_call = has_word(*text, "register_sysctl_paths");
    t.sized = text->find("ARRAY_SIZE(table)") != std::string::npos &&
              text->find("#define register_sysctl(") != std::string::npos;
    break;
  }
  return t;
}

class SysctlPath final : public Proposer {
public:
  std::string_view id() const override { return "sysctl-path"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    bool named = std::any_of(diags.begin(), diags.end(), [](const core::Diagnostic& d) {
      return (!d.symbols.empty() && (d.symbols[0] == "register_sysctl_table" || d.symbols[0] == "register_sysctl_paths")) ||
             (d.kind == core::DiagKind::no_member && d.message.find("ctl_table") != std::string::npos &&
              d.message.find("'child'") != std::string::npos);
    });
    if (!named) return out;
    TargetSysctl target = target_sysctl(ctx);
    if (!target.has_path_call) return out;
    long version = ctx.to ? linux_version_code(ctx.to->build_dir) : 0;
    for (const auto& [rel, text] : sources_mentioning(ctx.tree, "register_sysctl_")) {
      auto toks = tokenize(text);
      auto tables = ctl_tables(toks);
      auto lines = util::split_lines(text);
      auto dead = version ? version_dead_lines(text, version) : std::vector<bool>{};
      for (const auto& call : find_calls(toks, 0, toks.empty() ? 0 : toks.size() - 1)) {
        bool table_call = call.callee == "register_sysctl_table" && !target.has_table_call && call.args.size() == 1;
        bool paths_call = call.callee == "register_sysctl_paths" && !target.has_paths_call && call.args.size() == 2;
        if (!table_call && !paths_call) continue;
        int line = toks[call.name_tok].line;
        if (line - 1 < static_cast<int>(dead.size()) && dead[static_cast<std::size_t>(line - 1)]) continue;
        if (auto e = rewrite(rel, text, toks, lines, tables, call, paths_call, target.sized); e) out.push_back(std::move(*e));
      }
    }
    return out;
  }

private:
  static std::optional<Edit> rewrite(const std::string& rel, const std::string& text, const std::vector<Token>& toks,
                                     const std::vector<std::string_view>& lines,
                                     const std::map<std::string, CtlTable>& tables, const Call& call, bool paths_call,
                                     bool sized) {
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
      if (!p || p->type != "ctl_path") return std::nullopt;
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
        if (!t || t->type != "ctl_table" || depth > 8) return std::nullopt;
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
    e.proposer = "sysctl-path";
    e.change_id = fmt::format("sysctl:{}:{}", rel, call.args[0]);
    e.label = "removed-with-replacement";
    e.title = fmt::format("{}() is gone: register {} under {}", call.callee, leaf, path);
    e.description = fmt::format(
        "The target kernel has no {}() (Linux 6.6 removed it with struct ctl_table's .child; 6.5 "
        "register_sysctl_paths()): a sysctl table is registered under a path, register_sysctl({}, {}), "
        "and the tables that only named its directories are deleted.",
        call.callee, path, leaf);
    // The call: its tokens from the name to the ')' replaced, on the lines they span.
    int l0 = toks[call.name_tok].line, l1 = toks[call.close_tok].line;
    e.text_edits.push_back(token_span_edit(rel, text, toks[call.name_tok], toks[call.close_tok],
                                           fmt::format("register_sysctl({}, {})", path, leaf)));
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
      e.description += " The target's register_sysctl() passes the table's size (ARRAY_SIZE), so the empty entry "
                       "that ended the table would be registered as a nameless entry: it goes.";
    }
    std::stable_sort(e.text_edits.begin(), e.text_edits.end(),
                     [](const TextEdit& a, const TextEdit& b) { return a.line > b.line; });
    e.symbols = {call.callee, "register_sysctl", leaf};
    for (const auto* d : dirs) e.symbols.push_back(d->name); // deleted whole (the integrity gate reads this)
    e.support = 1;
    util::log_debug("sysctl-path: {} -> register_sysctl({}, {})", call.callee, path, leaf);
    return e;
  }
};

} // namespace

std::unique_ptr<Proposer> make_sysctl_path() { return std::make_unique<SysctlPath>(); }

} // namespace autodriver::propose
