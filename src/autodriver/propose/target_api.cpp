// Proposer "target-api": repairs from the target kernel alone, driven by the diagnostics (for
// out-of-tree drivers whose old kernel is unknown). Arguments are matched to the target
// prototype's parameters by type and name; missing ones get the value the target's own callers
// pass most often; vanished names are replaced by similar names the target declares (ranked by
// similarity and use); vanished members by similar members of the target's struct.

#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/shared/adapter_macro.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/c_tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;
using core::DiagKind;

namespace {

/// The driver itself declares `name` at file scope: a declarator (`static int name;`,
/// `struct x *name = ...`), a declaring macro at the start of a declaration
/// (`static DEFINE_SEMAPHORE(name);`, `LIST_HEAD(name);`) or a `#define name`. Such a name is
/// undeclared only because its declaration broke (a macro changed arity): renaming it to a
/// similar kernel name would hide the driver's own object behind the kernel's.
bool driver_declares(const fs::path& tree, const std::string& name) {
  static const std::set<std::string> k_decl_start = {";", "}", "static", "const", "extern"};
  const std::regex define(R"(^\s*#\s*define\s+)" + name + R"(\b)");
  for (const auto& [rel, text] : sources_mentioning(tree, name)) {
    auto toks = tokenize(text);
    auto first = first_branch_mask(toks);
    int depth = 0;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      const auto& t = toks[i];
      if (t.kind == TokKind::pp_line) {
        if (std::regex_search(t.text, define)) return true;
        continue;
      }
      if (t.kind == TokKind::punct && first[i]) {
        if (t.text == "{" || t.text == "(" || t.text == "[") ++depth;
        else if (t.text == "}" || t.text == ")" || t.text == "]") depth = std::max(0, depth - 1);
      }
      if (t.kind != TokKind::ident || t.text != name || i == 0) continue;
      const auto& p = toks[i - 1];
      if (depth == 0 && (p.kind == TokKind::ident || p.text == "*")) return true;
      // `MACRO(name` opening a file-scope declaration.
      if (depth == 1 && p.text == "(" && i >= 2 && toks[i - 2].kind == TokKind::ident) {
        bool starts = i == 2 || toks[i - 3].kind == TokKind::pp_line || k_decl_start.count(toks[i - 3].text);
        if (starts) return true;
      }
    }
  }
  return false;
}

/// Text edits that drop every use of `name` from the driver, where the use is a table entry
/// (`.llseek = no_llseek,`) or one term of an OR of flags (`FS_REQUIRES_DEV | FS_LITTER`); a
/// line left empty goes. Empty when some use is anything else (nothing is half dropped).
std::vector<TextEdit> drop_uses(const fs::path& tree, const std::string& name) {
  std::vector<TextEdit> out;
  for (const auto& [rel, text] : sources_mentioning(tree, name)) {
    auto toks = tokenize(text);
    std::vector<std::pair<std::size_t, std::size_t>> cuts; // byte ranges to remove
    auto at = [&](std::size_t k, const char* p) { return k < toks.size() && toks[k].text == p; };
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (toks[i].kind != TokKind::ident || toks[i].text != name) continue;
      if (i >= 3 && at(i - 1, "=") && toks[i - 2].kind == TokKind::ident && at(i - 3, ".") &&
          (at(i + 1, ",") || at(i + 1, "}"))) {
        std::size_t from = toks[i - 3].begin, to = at(i + 1, ",") ? toks[i + 1].end : toks[i].end;
        // The last entry loses the comma before it when that is on its line (`{ .a = x, .b = y }`);
        // on a line of its own the previous entry keeps its comma (valid C, fewer lines touched).
        if (at(i + 1, "}") && at(i - 4, ",") && toks[i - 4].line == toks[i].line) from = toks[i - 4].begin;
        cuts.push_back({from, to});
      } else if (i >= 1 && at(i - 1, "|") && toks[i - 1].line == toks[i].line) {
        cuts.push_back({toks[i - 1].begin, toks[i].end});
      } else if (at(i + 1, "|") && toks[i + 1].line == toks[i].line && i + 2 < toks.size()) {
        cuts.push_back({toks[i].begin, toks[i + 2].begin});
      } else {
        return {};
      }
    }
    if (cuts.empty()) continue;
    std::string now = text;
    std::sort(cuts.rbegin(), cuts.rend());
    for (const auto& [from, to] : cuts) {
      std::size_t f = from;
      // Spaces before a cut term go with it unless they start the line.
      while (f > 0 && (now[f - 1] == ' ' || now[f - 1] == '\t')) {
        std::size_t b = f - 1;
        while (b > 0 && (now[b - 1] == ' ' || now[b - 1] == '\t')) --b;
        if (b == 0 || now[b - 1] == '\n') break;
        f = b;
      }
      now.erase(f, to - f);
    }
    auto old_lines = util::split_lines(text), new_lines = util::split_lines(now);
    if (old_lines.size() != new_lines.size()) return {};
    for (std::size_t l = 0; l < old_lines.size(); ++l) {
      if (old_lines[l] == new_lines[l]) continue;
      TextEdit te;
      te.file = rel;
      te.line = static_cast<int>(l + 1);
      te.remove = 1;
      if (!util::trim(new_lines[l]).empty()) te.text = std::string(new_lines[l]) + "\n";
      out.push_back(std::move(te));
    }
  }
  return out;
}

/// The accessors the target declares for member `m` of `struct tag` (tag empty: any struct),
/// found by name and first parameter (`struct tag *`): inode.i_mtime -> inode_get_mtime(),
/// inode_set_mtime_to_ts(); vm_area_struct.vm_flags -> vm_flags_set() / vm_flags_clear() /
/// vm_flags_reset(). Among several, the one with the fewest extra name words, then the most
/// used by the target's own drivers.
struct Accessors {
  std::string tag;
  std::string get, set; ///< `x = p->m` and `p->m = v`
  std::string bits_on, bits_off; ///< `p->m |= v`, `p->m &= ~v` (a bit mask: set and clear both exist)
  std::string where;    ///< header of the first found
};

/// A type's text without its spaces ("struct a *" -> "structa*").
std::string no_spaces(std::string t) {
  t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
  return t;
}

Accessors find_accessors(TargetIndex& idx, std::string tag, const std::string& m) {
  Accessors a;
  auto mw = name_words(m);
  if (mw.empty()) return a;
  std::vector<std::vector<std::string>> stems = {mw};
  if (mw.size() >= 2 && mw[0].size() <= 3) stems.push_back({mw.begin() + 1, mw.end()});
  auto contains = [](const std::vector<std::string>& w, const std::vector<std::string>& st) {
    if (st.empty() || w.size() < st.size()) return false;
    for (std::size_t i = 0; i + st.size() <= w.size(); ++i)
      if (std::equal(st.begin(), st.end(), w.begin() + static_cast<std::ptrdiff_t>(i))) return true;
    return false;
  };
  auto squash = [](std::string t) {
    t = std::regex_replace(t, std::regex(R"(\bconst\b)"), "");
    t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
    return t;
  };
  static const std::set<std::string> k_verbs = {"get", "set", "clear", "reset", "init", "mod", "update", "to", "ts"};
  struct Cand { std::string name; std::size_t params; bool void_ret; std::set<std::string> verbs; int extra; int uses; };
  std::vector<Cand> cands;
  // Named after the member (vm_flags_set), or after the struct and the member's stem
  // (inode_get_mtime); with the struct unknown only the first.
  auto tag_words = name_words(tag);
  for (const auto& n : idx.names()) {
    if (n.find(mw.back()) == std::string::npos) continue; // every stem ends with the member's last word
    auto w = name_words(n);
    const std::vector<std::string>* stem = nullptr;
    if (contains(w, stems[0])) stem = &stems[0];
    else if (stems.size() > 1 && !tag.empty() && contains(w, stems[1]) && contains(w, tag_words)) stem = &stems[1];
    if (!stem) continue;
    auto p = idx.prototype(n, nullptr);
    if (!p || p->is_macro || p->variadic || p->params.empty() || p->params.size() > 2) continue;
    std::smatch sm;
    std::string t0 = squash(p->params[0].type);
    static const std::regex k_struct(R"(^struct(\w+)\*$)");
    if (!std::regex_match(t0, sm, k_struct)) continue;
    if (!tag.empty() && sm[1].str() != tag) continue;
    if (tag.empty()) {
      auto ms = idx.struct_members(sm[1].str());
      if (std::find(ms.begin(), ms.end(), m) == ms.end()) continue;
    }
    Cand c{n, p->params.size(), squash(p->ret) == "void", {}, 0, 0};
    auto tw = name_words(sm[1].str());
    for (const auto& x : w) {
      if (k_verbs.count(x)) c.verbs.insert(x);
      else if (std::find(stem->begin(), stem->end(), x) == stem->end() &&
               std::find(tw.begin(), tw.end(), x) == tw.end() && x != "vma")
        ++c.extra;
    }
    c.uses = idx.usage_count(n);
    if (a.tag.empty()) a.tag = sm[1].str(), a.where = p->header;
    if (sm[1].str() != a.tag) continue;
    cands.push_back(std::move(c));
  }
  auto pick = [&](auto ok) {
    const Cand* best = nullptr;
    for (const auto& c : cands)
      if (ok(c) && (!best || c.extra < best->extra || (c.extra == best->extra && c.uses > best->uses))) best = &c;
    return best ? best->name : std::string();
  };
  auto only = [](const Cand& c, std::initializer_list<const char*> verbs) {
    for (const auto& v : c.verbs)
      if (std::none_of(verbs.begin(), verbs.end(), [&](const char* x) { return v == x; })) return false;
    return true;
  };
  a.get = pick([&](const Cand& c) { return c.params == 1 && !c.void_ret && only(c, {"get"}); });
  std::string set = pick([&](const Cand& c) { return c.params == 2 && c.verbs.count("set") && only(c, {"set", "to", "ts"}); });
  std::string clear = pick([&](const Cand& c) { return c.params == 2 && c.verbs.count("clear") && only(c, {"clear"}); });
  if (!set.empty() && !clear.empty()) {
    // A bit mask: "set" turns bits on; plain assignment is a reset.
    a.bits_on = set;
    a.bits_off = clear;
    a.set = pick([&](const Cand& c) { return c.params == 2 && c.verbs.count("reset") && only(c, {"reset"}); });
  } else {
    a.set = set;
  }
  return a;
}

/// SmPL replacing accesses to `p->m` / `s.m` by the accessors; `reads` also rewrites reads.
std::string accessor_smpl(const Accessors& a, const std::string& m, bool reads) {
  std::string out;
  auto rule = [&](const std::string& minus, const std::string& plus, bool expr) {
    for (int form = 0; form < 2; ++form) {
      std::string var = form == 0 ? "p" : "s", ref = form == 0 ? "p" : "&s";
      std::string decl = fmt::format("struct {} {}{};\n", a.tag, form == 0 ? "*" : "", var);
      std::string acc = form == 0 ? "p->" + m : "s." + m;
      out += "@@\n" + decl + (expr ? "expression E;\n" : "") + "@@\n";
      out += "- " + fmt::format(fmt::runtime(minus), acc) + "\n+ " + fmt::format(fmt::runtime(plus), ref) + "\n\n";
    }
  };
  if (!a.set.empty()) rule("{} = E", a.set + "({}, E)", true);
  if (!a.bits_on.empty()) rule("{} |= E", a.bits_on + "({}, E)", true);
  if (!a.bits_off.empty()) rule("{} &= ~E", a.bits_off + "({}, E)", true);
  if (reads && !a.get.empty()) rule("{}", a.get + "({})", false);
  return out;
}

int compat(const std::string& arg, const Param& p) {
  const std::string& t = p.type;
  bool typed = !t.empty();
  bool ptr = t.find('*') != std::string::npos;
  bool charp = ptr && t.find("char") != std::string::npos;
  int s = 0;
  if (typed) {
    if (!arg.empty() && arg[0] == '"') s += charp ? 3 : ptr ? -1 : -3;
    else if (arg == "THIS_MODULE") s += t.find("module") != std::string::npos ? 3 : -3;
    else if (!arg.empty() && std::isdigit(static_cast<unsigned char>(arg[0]))) s += ptr ? (arg == "0" ? 0 : -2) : 1;
    else if (arg == "NULL") s += ptr ? 1 : -1;
    else if (arg.starts_with("GFP_") || arg.starts_with("__GFP_")) s += t.find("gfp") != std::string::npos ? 3 : -2;
    else if (arg.starts_with("&")) s += ptr ? 1 : -2;
  }
  // Name agreement: the argument's last identifier against the parameter's name.
  auto toks = tokenize(arg);
  for (auto it = toks.rbegin(); it != toks.rend(); ++it)
    if (it->kind == TokKind::ident) {
      if (!p.name.empty() && name_similarity(it->text, p.name) >= 0.6) s += 2;
      break;
    }
  return s;
}

/// Best order-preserving assignment of `slots` items out of `n` (combinations), by score.
std::vector<std::size_t> best_subset(std::size_t n, std::size_t k, const std::function<int(const std::vector<std::size_t>&)>& score) {
  std::vector<std::size_t> best, cur;
  int best_score = -1000000;
  std::function<void(std::size_t)> rec = [&](std::size_t start) {
    if (cur.size() == k) {
      int s = score(cur);
      if (s > best_score) best_score = s, best = cur;
      return;
    }
    for (std::size_t i = start; i < n && n - i >= k - cur.size(); ++i) {
      cur.push_back(i);
      rec(i + 1);
      cur.pop_back();
    }
  };
  if (n <= 12) rec(0);
  return best;
}

std::string default_value(const Param& p) {
  const std::string& t = p.type;
  if (t.find("gfp") != std::string::npos) return "GFP_KERNEL";
  if (t.find('*') != std::string::npos) return "NULL";
  if (t.find("bool") != std::string::npos) return "false";
  return "0";
}

const Call* call_at(const std::vector<Token>& toks, const std::vector<Call>& calls, const std::string& name, int line) {
  const Call* best = nullptr;
  for (const auto& c : calls)
    if (c.callee == name && (!best || std::abs(toks[c.name_tok].line - line) < std::abs(toks[best->name_tok].line - line)))
      best = &c;
  return best;
}

std::string smpl_call(const std::string& from, std::size_t arity, const std::string& to, const std::vector<std::string>& new_args) {
  std::string metas, olds, news;
  for (std::size_t i = 0; i < arity; ++i) {
    metas += (i ? ", " : "") + fmt::format("E{}", i);
    olds += (i ? ", " : "") + fmt::format("E{}", i);
  }
  for (std::size_t i = 0; i < new_args.size(); ++i) news += (i ? ", " : "") + new_args[i];
  std::string head = arity ? fmt::format("@@\nexpression {};\n@@\n", metas) : "@@\n@@\n";
  return head + fmt::format("- {}({})\n+ {}({})\n", from, olds, to, news);
}

class TargetApi final : public Proposer {
public:
  std::string_view id() const override { return "target-api"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    m_aliases_loaded = false; // the tree changes between iterations
    m_aliases.clear();
    std::vector<Edit> out;
    if (ctx.new_src.empty() || !ctx.to) return out;
    TargetIndex idx(ctx.new_src, ctx.to->build_dir);
    std::set<std::string> seen;
    for (const auto& d : diags) {
      if (d.kind == DiagKind::modpost_other) import_namespace(idx, ctx, d, seen, out);
      if (d.kind == DiagKind::syntax_error) obsolete_annotation(idx, ctx, d, seen, out);
      if (d.symbols.empty() || d.severity == core::Severity::note) continue;
      const std::string& sym = d.symbols[0];
      switch (d.kind) {
      case DiagKind::too_many_arguments:
      case DiagKind::too_few_arguments:
        if (seen.insert("args:" + sym).second) arguments(idx, ctx, d, out);
        break;
      case DiagKind::implicit_function_declaration:
      case DiagKind::undeclared_identifier:
      case DiagKind::modpost_undefined_symbol:
        if (seen.insert("name:" + sym).second) renamed(idx, ctx, d, out);
        if (d.kind == DiagKind::modpost_undefined_symbol && seen.insert("array:" + sym).second)
          unexported_array(idx, ctx, d, out);
        break;
      case DiagKind::conflicting_types:
        if (seen.insert("proto:" + sym).second) prototype_sync(ctx, d, out);
        break;
      case DiagKind::read_only_member:
        if (!d.symbols.empty() && seen.insert("readonly:" + sym).second) accessor(idx, "", sym, false, out);
        break;
      case DiagKind::incompatible_pointer_type:
        if (d.symbols.size() >= 2 && d.symbols[0].find("(*)") == std::string::npos &&
            seen.insert("adapter:" + d.file + ":" + std::to_string(d.line)).second)
          adapter(idx, ctx, d, out);
        break;
      case DiagKind::no_member:
        // "'const struct file_operations' has no member named 'iterate'" is the same struct.
        if (d.symbols.size() >= 2 &&
            (d.symbols[0].starts_with("struct ") || d.symbols[0].starts_with("const struct ")) &&
            seen.insert("member:" + sym + d.symbols[1]).second)
          member(idx, ctx, d, out);
        break;
      default:
        break;
      }
      // Old-kernel compat shims (a `#define` or static inline the driver carries for kernels that
      // lacked the name) collide with the target's own definition once the target has it.
      if (d.severity == core::Severity::error || d.severity == core::Severity::fatal) {
        shim(idx, ctx, d, seen, out);
        type_shim(ctx, d, seen, out);
        alias_shim(idx, ctx, d, seen, out);
      }
    }
    return out;
  }

private:
  /// "expected '=', ',', ';', 'asm' or '__attribute__' before 'X'": a declaration carries an
  /// annotation macro the target no longer defines (`static int __devinit probe(...)`,
  /// `ids[] __devinitdata = {`; the hotplug section markers went in 3.8). An `__identifier` the
  /// target declares nowhere, right before X or X itself, is dropped.
  void obsolete_annotation(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d,
                           std::set<std::string>& seen, std::vector<Edit>& out) {
    static const std::regex k_msg(R"(^expected '=', ',', ';', 'asm' or '__attribute__' before '([A-Za-z_]\w*)')");
    std::smatch m;
    if (d.file.empty() || d.file.front() == '/' || !std::regex_search(d.message, m, k_msg)) return;
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return;
    auto toks = tokenize(*text);
    const std::string x = m[1].str();
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (toks[i].line != d.line || toks[i].text != x) continue;
      std::size_t a = x.starts_with("__") ? i : (i > 0 ? i - 1 : i);
      const Token& t = toks[a];
      if (t.kind != TokKind::ident || !t.text.starts_with("__") || idx.names().count(t.text)) return;
      if (!seen.insert("annotation:" + t.text + ":" + d.file).second) return;
      Edit e;
      e.proposer = "target-api";
      e.change_id = "annotation:" + t.text + ":" + d.file; // one edit per file: each file reports its own
      e.label = "removed-with-replacement";
      e.title = fmt::format("{} is gone: an obsolete annotation, dropped", t.text);
      e.description = fmt::format("The target kernel defines no {} and gcc cannot parse the declaration that carries "
                                  "it: an annotation macro of older kernels, removed from the declarations.",
                                  t.text);
      // Every declaration of the file with it, as a whole-word removal (with the space before it).
      auto lines = util::split_lines(*text);
      for (const auto& u : toks) {
        if (u.kind != TokKind::ident || u.text != t.text) continue;
        std::string line(lines[static_cast<std::size_t>(u.line) - 1]);
        std::string fixed = std::regex_replace(line, std::regex(R"([ \t]*\b)" + t.text + R"(\b)"), "");
        if (fixed != line && (e.text_edits.empty() || e.text_edits.back().line != u.line))
          e.text_edits.push_back({d.file, u.line, 1, fixed + "\n"});
      }
      if (e.text_edits.empty()) return;
      e.symbols = {t.text};
      e.support = 1;
      out.push_back(std::move(e));
      return;
    }
  }

  /// The driver's own definition of a name the target now declares: a `#define NAME ...` on the
  /// diagnostic's line (its expansion fails: `#define SB_RDONLY MS_RDONLY`), or a function
  /// definition gcc calls a "redefinition of 'NAME'" or a "static declaration of 'NAME' follows
  /// non-static declaration", or a typedef of "conflicting types" with one in the kernel's headers.
  /// The definition goes; the target's is used.
  void shim(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
            std::vector<Edit>& out) {
    if (d.file.empty() || d.file.front() == '/' || d.line <= 0) return;
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return;
    auto toks = tokenize(*text);
    const auto& names = idx.names();
    static const std::regex k_define(R"(^\s*#\s*define\s+([A-Za-z_]\w*)(\(?)([^\n]*))");
    for (const auto& t : toks) {
      if (t.kind != TokKind::pp_line || t.line != d.line) continue;
      std::smatch m;
      std::string dir = t.text;
      if (!std::regex_search(dir, m, k_define)) return;
      std::string name = m[1].str();
      // `#define foo foo` or a macro naming itself keeps the target's meaning; nothing to remove.
      if (!names.count(name) || has_word(m[3].str(), name) || !seen.insert("shim:" + name).second) return;
      int lines = 1 + static_cast<int>(std::count(dir.begin(), dir.end(), '\n'));
      Edit e = shim_edit(d.file, name, t.line, lines, "macro");
      out.push_back(std::move(e));
      return;
    }
    static const std::regex k_redef(R"(^(redefinition of|conflicting types for|static declaration of) '([A-Za-z_]\w*)')");
    std::smatch m;
    if (!std::regex_search(d.message, m, k_redef)) return;
    std::string name = m[2].str();
    // The earlier definition is the target's: a gcc note in the kernel's headers (outside the tree).
    bool in_target = names.count(name) > 0;
    for (const auto& n : d.notes)
      if (n.message.starts_with("previous") && !n.file.empty() && n.file.front() == '/' &&
          !n.file.starts_with(ctx.tree.string()))
        in_target = true;
    if (!in_target || !seen.insert("shim:" + name).second) return;
    bool static_inline_only = false;
    if (m[1].str() == "conflicting types for") {
      // Only a typedef (`typedef int vm_fault_t;`) or a static inline definition is surely a
      // shim; any other function of the driver's that shares a name with a kernel one is not.
      static_inline_only = true;
      for (std::size_t i = 0; i < toks.size(); ++i) {
        if (toks[i].line != d.line || toks[i].text != "typedef") continue;
        if (i > 0 && toks[i - 1].line == d.line) return;
        std::size_t j = i;
        while (j < toks.size() && toks[j].text != ";") ++j;
        if (j == toks.size() || toks[j - 1].text != name || (j + 1 < toks.size() && toks[j + 1].line == toks[j].line)) return;
        out.push_back(shim_edit(d.file, name, toks[i].line, toks[j].line - toks[i].line + 1, "typedef"));
        return;
      }
    }
    for (const auto& u : find_units(toks)) {
      if (u.kind != UnitKind::function || u.name != name) continue;
      int first = toks[u.first].line, last = toks[u.last].line;
      if (d.line < first || d.line > last) continue;
      if (static_inline_only) {
        bool st = false, in = false;
        for (std::size_t i = u.first; i < u.body; ++i) {
          st = st || toks[i].text == "static";
          in = in || toks[i].text == "inline" || toks[i].text == "__inline__" || toks[i].text == "__always_inline";
        }
        if (!st || !in) return;
      }
      // Whole lines only: nothing else may share the first or last line.
      if (u.first > 0 && toks[u.first - 1].line == first) return;
      if (u.last + 1 < toks.size() && toks[u.last + 1].line == last) return;
      out.push_back(shim_edit(d.file, name, first, last - first + 1, "function"));
      return;
    }
  }

  /// The driver's own definition of a struct, union or enum the target's headers now define:
  /// "redefinition of 'struct X'" or "redeclaration of enumerator 'E'" with gcc's note on the
  /// earlier definition in a kernel header (a private header the driver carries whose types the
  /// kernel made public, or a compat copy). The whole definition statement goes (a `typedef`
  /// around it too); whole lines only. Whether the kernel's definition serves the driver is the
  /// build's to say: an enum with members the kernel lacks leaves new errors and is not kept.
  void type_shim(const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen, std::vector<Edit>& out) {
    if (d.file.empty() || d.file.front() == '/' || d.line <= 0) return;
    static const std::regex k_type(R"(^redefinition of '(struct|union|enum) ([A-Za-z_]\w*)')");
    static const std::regex k_enumerator(R"(^redeclaration of enumerator '([A-Za-z_]\w*)')");
    static const std::regex k_typedef(R"(^conflicting types for '([A-Za-z_]\w*)')");
    std::smatch m;
    std::string keyword, tag, typedef_name;
    if (std::regex_search(d.message, m, k_type)) keyword = m[1].str(), tag = m[2].str();
    else if (std::regex_search(d.message, m, k_enumerator)) keyword = "enum";
    else if (std::regex_search(d.message, m, k_typedef)) typedef_name = m[1].str();
    else return;
    bool in_kernel = std::any_of(d.notes.begin(), d.notes.end(), [&](const core::DiagNote& n) {
      return !n.file.empty() && n.file.front() == '/' && !n.file.starts_with(ctx.tree.string());
    });
    if (!in_kernel) return;
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return;
    auto toks = tokenize(*text);
    // The definition: `keyword [tag] {` ... `}` holding the diagnostic's line (the tag's line for
    // a type, an enumerator's line inside the braces for an enumerator).
    for (std::size_t k = 0; k + 1 < toks.size(); ++k) {
      bool kw = toks[k].text == "struct" || toks[k].text == "union" || toks[k].text == "enum";
      if (toks[k].kind != TokKind::ident || (typedef_name.empty() ? toks[k].text != keyword : !kw)) continue;
      std::size_t brace = k + 1;
      if (toks[brace].kind == TokKind::ident) ++brace;
      if (brace >= toks.size() || toks[brace].text != "{") continue;
      if (!tag.empty() && (brace != k + 2 || toks[k + 1].text != tag)) continue;
      std::size_t close = matching_close(toks, brace);
      if (close >= toks.size()) return;
      int lo = toks[k].line, hi = toks[close].line;
      if (d.line < lo || d.line > hi) continue;
      // The statement around it: back to the previous top-level boundary, on to its ';'.
      std::size_t first = k;
      while (first > 0 && toks[first - 1].kind != TokKind::pp_line && toks[first - 1].text != ";" &&
             toks[first - 1].text != "}" && toks[first - 1].text != "{")
        --first;
      std::size_t last = close;
      while (last + 1 < toks.size() && toks[last].text != ";") ++last;
      if (toks[last].text != ";") return;
      // Only a plain type definition (optionally typedef'd): no variable defined with it. A
      // "conflicting types" typedef must name the type gcc named.
      if (!typedef_name.empty() && (toks[first].text != "typedef" || toks[last - 1].text != typedef_name)) continue;
      for (std::size_t i = first; i < k; ++i)
        if (toks[i].text != "typedef") return;
      for (std::size_t i = close + 1; i < last; ++i)
        if (toks[first].text != "typedef" && toks[i].kind == TokKind::ident && toks[i].text.rfind("__", 0) != 0) return;
      // Whole lines: nothing else shares the first or the last line.
      if (first > 0 && toks[first - 1].line == toks[first].line) return;
      if (last + 1 < toks.size() && toks[last + 1].line == toks[last].line) return;
      std::string name = !typedef_name.empty() ? typedef_name
                         : tag.empty()            ? keyword + " at " + d.file + ":" + std::to_string(toks[k].line)
                                                  : keyword + " " + tag;
      if (!seen.insert("type-shim:" + name).second) return;
      Edit e = shim_edit(d.file, name, toks[first].line, toks[last].line - toks[first].line + 1, "definition of");
      e.description = fmt::format("The driver's own definition of {} clashes with the target kernel's definition in "
                                  "its headers (gcc: {}); it is removed and the kernel's is used.",
                                  name, d.message);
      out.push_back(std::move(e));
      return;
    }
  }

  /// The lines [first, last] of the declaration statement that starts on `line` (whole lines, up
  /// to its ';' outside parentheses, preprocessor lines inside it kept), when it declares `name`
  /// and has no initializer.
  static std::optional<std::pair<int, int>> declaration_lines(const std::string& text, int line, const std::string& name) {
    auto toks = tokenize(text);
    std::size_t first = toks.size();
    int depth = 0;
    bool names_it = false;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (toks[i].line < line || toks[i].kind == TokKind::pp_line) continue;
      if (first == toks.size()) {
        if (toks[i].line != line || (i > 0 && toks[i - 1].line == line && toks[i - 1].kind != TokKind::pp_line)) return std::nullopt;
        first = i;
      }
      const auto& t = toks[i].text;
      names_it = names_it || (toks[i].kind == TokKind::ident && t == name);
      if (t == "(") ++depth;
      if (t == ")") --depth;
      if (depth == 0 && (t == "{" || t == "=")) return std::nullopt;
      if (depth == 0 && t == ";") {
        if (!names_it || (i + 1 < toks.size() && toks[i + 1].line == toks[i].line)) return std::nullopt;
        return std::make_pair(line, toks[i].line);
      }
    }
    return std::nullopt;
  }

  /// "conflicting types for 'hook'" between two of the driver's own declarations of a function
  /// pointer (`extern unsigned int (*hook)(...)` in a header, its definition in a .c): one of
  /// them lost or gained a parameter. Both repairs are proposed, each copying the other's text
  /// (its own `#if` lines included): the definition follows the declaration first, then the
  /// declaration follows the definition; the build tells which one the callers agree with.
  void pointer_sync(const PortContext& ctx, const core::Diagnostic& d, const core::DiagNote& prev, const std::string& name,
                    std::vector<Edit>& out) {
    auto def_text = util::read_file(ctx.tree / d.file);
    auto decl_text = util::read_file(ctx.tree / prev.file);
    if (!def_text || !decl_text) return;
    auto def = declaration_lines(*def_text, d.line, name);
    auto decl = declaration_lines(*decl_text, prev.line, name);
    if (!def || !decl) return;
    auto cut = [](const std::string& text, std::pair<int, int> r) {
      std::string piece;
      int n = 0;
      for (auto l : util::split_lines(text)) {
        ++n;
        if (n >= r.first && n <= r.second) piece += std::string(l) + "\n";
      }
      return piece;
    };
    std::string def_src = cut(*def_text, *def), decl_src = cut(*decl_text, *decl);
    static const std::regex k_extern(R"(^(\s*)extern\s+)");
    bool has_extern = std::regex_search(decl_src, k_extern);
    std::string as_def = std::regex_replace(decl_src, k_extern, "$1", std::regex_constants::format_first_only);
    std::string as_decl = has_extern ? "extern " + def_src : def_src;
    if (as_def == def_src) return;
    int rank = 0;
    for (int dir = 0; dir < 2; ++dir) {
      Edit e;
      e.proposer = "target-api";
      e.change_id = "proto:" + name;
      e.label = "other";
      e.symbols = {name};
      e.support = 1;
      e.rank = rank++;
      if (dir == 0) {
        e.title = fmt::format("the definition of {} follows its declaration", name);
        e.description = fmt::format("{} is declared in {}:{} with another function-pointer type than its definition in "
                                    "{}:{}; the definition is rewritten to the declaration's type.",
                                    name, prev.file, prev.line, d.file, d.line);
        e.text_edits.push_back({d.file, def->first, def->second - def->first + 1, as_def, std::nullopt});
      } else {
        e.title = fmt::format("the declaration of {} follows its definition", name);
        e.description = fmt::format("{} is defined in {}:{} with another function-pointer type than its declaration in "
                                    "{}:{}; the declaration is rewritten to the definition's type.",
                                    name, d.file, d.line, prev.file, prev.line);
        e.text_edits.push_back({prev.file, decl->first, decl->second - decl->first + 1, as_decl, std::nullopt});
      }
      out.push_back(std::move(e));
    }
  }

  /// A driver alias `#define A B` that maps the target's name A onto an older kernel's B
  /// (`#define xt_action_param xt_target_param`, `#define v4l2_file_operations file_operations`):
  /// gcc names B where the driver wrote A (on the diagnostic's line or in the message), and the
  /// target declares A itself (a function, macro or struct). The alias goes; A is the target's.
  void alias_shim(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                  std::vector<Edit>& out) {
    if (d.file.empty() || d.file.front() == '/' || d.line <= 0) return;
    if (!m_aliases_loaded) {
      m_aliases_loaded = true;
      for (const auto& rel : c_files(ctx.tree)) {
        auto text = util::read_file(ctx.tree / rel);
        if (!text || text->find("define") == std::string::npos) continue;
        for (const auto& t : tokenize(*text)) {
          if (t.kind != TokKind::pp_line) continue;
          if (auto a = define_alias(t.text); a && a->first != a->second) m_aliases.push_back({a->first, a->second, rel, t.line});
        }
      }
    }
    if (m_aliases.empty()) return;
    auto src = diagnostic_line(ctx.tree, d);
    if (!src) return;
    for (const auto& a : m_aliases) {
      if (!has_word(d.message, a.old_name) || (!has_word(*src, a.name) && !has_word(d.message, a.name))) continue;
      if (!idx.names().count(a.name) && idx.struct_members(a.name).empty() && !idx.in_headers(a.name)) continue;
      if (!seen.insert("shim:" + a.name).second) continue;
      Edit e = shim_edit(a.file, a.name, a.line, 1, "alias macro");
      e.description = fmt::format("The driver maps {} onto {} with `#define {} {}` (for kernels that named it {}); gcc "
                                  "reports {} where the driver wrote {}, and the target declares {} itself: the alias is removed.",
                                  a.name, a.old_name, a.name, a.old_name, a.old_name, a.old_name, a.name, a.name);
      e.symbols = {a.name, a.old_name};
      out.push_back(std::move(e));
    }
  }

  struct Alias {
    std::string name, old_name, file;
    int line = 0;
  };
  bool m_aliases_loaded = false;
  std::vector<Alias> m_aliases;

  /// "conflicting types for 'f'" where both the definition and the earlier prototype are the
  /// driver's own: a port changed one side (or a maintainer's block held only the prototype), so
  /// the prototype is rewritten to the definition's signature.
  void prototype_sync(const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
    const std::string& name = d.symbols[0];
    if (d.file.empty() || d.file.front() == '/') return;
    const core::DiagNote* prev = nullptr;
    for (const auto& n : d.notes)
      if (n.message.find("previous declaration") != std::string::npos && !n.file.empty() && n.file.front() != '/' &&
          fs::exists(ctx.tree / n.file))
        prev = &n;
    if (!prev) return;
    static const std::regex k_have_fp(R"(; have '[^'(]+\(\*\)\()");
    if (std::regex_search(d.message, k_have_fp)) {
      pointer_sync(ctx, d, *prev, name, out);
      return;
    }
    // The definition's type as gcc prints it: "have 'int(struct dm_target *, struct bio *)'" (read
    // from the message, since a definition whose header sits in its own #if has no plain text).
    static const std::regex k_have(R"(; have '([^'(]+)\(([^']*)\)')");
    std::smatch hm;
    if (!std::regex_search(d.message, hm, k_have)) return;
    // Function-pointer parameters keep their parentheses; a function returning a function
    // pointer ("void (*(int))(int)") leaves them unbalanced and is not rewritten.
    std::string params = std::regex_replace(hm[2].str(), std::regex(" {2,}"), " ");
    int depth = 0;
    for (char ch : params) {
      depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
      if (depth < 0) return;
    }
    if (depth != 0) return;
    std::string ret(util::trim(hm[1].str()));
    auto decl_text = util::read_file(ctx.tree / prev->file);
    if (!decl_text) return;
    // The prototype: the tokens of the statement that starts on the note's line, up to its ';'.
    auto pt = tokenize(*decl_text);
    std::size_t first = pt.size(), last = pt.size();
    for (std::size_t i = 0; i < pt.size(); ++i) {
      if (pt[i].line < prev->line) continue;
      if (first == pt.size()) {
        if (pt[i].line != prev->line || pt[i].kind == TokKind::pp_line) return;
        if (i > 0 && pt[i - 1].line == pt[i].line) return; // whole lines only
        first = i;
      }
      if (pt[i].kind == TokKind::punct && (pt[i].text == "{" || pt[i].text == "=")) return; // not a prototype
      if (pt[i].kind == TokKind::punct && pt[i].text == ";") {
        last = i;
        break;
      }
    }
    if (last == pt.size() || (last + 1 < pt.size() && pt[last + 1].line == pt[last].line)) return;
    bool names_it = false;
    for (std::size_t i = first; i < last; ++i) names_it = names_it || (pt[i].kind == TokKind::ident && pt[i].text == name);
    if (!names_it) return;
    // A parameter the prototype spells with a typedef where gcc prints the function-pointer type
    // it stands for (`io_notify_fn` vs `void (*)(long unsigned int, void *)`) keeps the typedef.
    auto split_top = [](const std::vector<std::string>& toks) {
      std::vector<std::string> parts(1);
      int nest = 0;
      for (const auto& t : toks) {
        if (t == "(" || t == "[") ++nest;
        if (t == ")" || t == "]") --nest;
        if (t == "," && nest == 0) {
          parts.emplace_back();
          continue;
        }
        parts.back() += (parts.back().empty() ? "" : " ") + t;
      }
      return parts;
    };
    std::vector<std::string> proto_params;
    for (std::size_t i = first; i < last; ++i)
      if (pt[i].text == name && i + 1 < last && pt[i + 1].text == "(") {
        std::vector<std::string> inner;
        int nest = 0;
        for (std::size_t k = i + 1; k < last; ++k) {
          if (pt[k].text == "(" && nest++ == 0) continue;
          if (pt[k].text == ")" && --nest == 0) break;
          inner.push_back(pt[k].text);
        }
        proto_params = split_top(inner);
        break;
      }
    {
      std::vector<std::string> gtoks;
      for (const auto& t : tokenize(params)) gtoks.push_back(t.text);
      auto gparams = split_top(gtoks);
      if (!proto_params.empty() && gparams.size() == proto_params.size()) {
        std::string joined;
        for (std::size_t i = 0; i < gparams.size(); ++i) {
          bool keep = gparams[i].find("( *") != std::string::npos && proto_params[i].find('(') == std::string::npos;
          std::vector<std::string> ptoks;
          for (const auto& t : tokenize(keep ? proto_params[i] : gparams[i])) ptoks.push_back(t.text);
          joined += (i ? ", " : "") + join_c_tokens(ptoks);
        }
        params = joined;
      }
    }
    std::string header = ret + (ret.ends_with("*") ? "" : " ") + name + "(" + params + ")";
    // Keep `extern` / `static` of the prototype when the definition does not say it.
    std::string storage;
    if (pt[first].text == "extern" || pt[first].text == "static") storage = pt[first].text + " ";
    Edit e;
    e.proposer = "target-api";
    e.change_id = "proto:" + name;
    e.label = "other";
    e.title = fmt::format("the prototype of {} follows its definition", name);
    e.description = fmt::format("{}() is declared in {}:{} with other parameter types than its definition in {}:{}; "
                                "the declaration is rewritten to match the definition.",
                                name, prev->file, prev->line, d.file, d.line);
    e.text_edits.push_back({prev->file, pt[first].line, pt[last].line - pt[first].line + 1, storage + header + ";\n", std::nullopt});
    e.symbols = {name};
    e.support = 1;
    e.rank = 1;
    out.push_back(std::move(e));
  }

  /// The driver passes `p<in>` where the target wants the type an adapter macro of the header
  /// defining that type makes from it (`.default_groups = foo_attrs` wants `const struct
  /// attribute_group **`; sysfs.h's ATTRIBUTE_GROUPS(foo) defines foo_groups from foo_attrs).
  void adapter(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
    static const std::regex k_tag(R"(struct\s+([A-Za-z_]\w*))");
    std::smatch tm;
    if (!std::regex_search(d.symbols[0], tm, k_tag)) return;
    auto header = idx.header_defining(tm[1].str());
    if (header.empty()) return;
    auto htext = util::read_file(header);
    if (!htext) return;
    auto text = util::read_file(ctx.tree / d.file);
    auto line = diagnostic_line(ctx.tree, d);
    if (!text || !line) return;
    auto toks = tokenize(*text);
    for (const auto& a : adapter_macros(*htext)) {
      if (no_spaces(a.out_type) != no_spaces(d.symbols[0])) continue;
      // The one identifier on the line named `p<in>`.
      std::vector<const Token*> vals;
      for (const auto& t : toks)
        if (t.line == d.line && t.kind == TokKind::ident && t.text.size() > a.in_suffix.size() &&
            t.text.ends_with(a.in_suffix))
          vals.push_back(&t);
      if (vals.size() != 1) continue;
      const std::string v = vals.front()->text;
      const std::string base = v.substr(0, v.size() - a.in_suffix.size());
      // Its definition in this file, after which the macro goes (unless the driver has it).
      const Unit* def = nullptr;
      auto units = find_units(toks);
      for (const auto& u : units)
        if (u.kind == UnitKind::initializer && u.name == v) def = &u;
      if (!def) continue;
      bool has = false;
      for (std::size_t i = 0; i + 3 < toks.size(); ++i)
        if (toks[i].text == a.macro && toks[i + 1].text == "(" && toks[i + 2].text == base) has = true;
      Edit e;
      e.proposer = "target-api";
      e.change_id = "adapter:" + v;
      e.label = "member-changed";
      e.title = fmt::format("pass {}{} made by {}({}) instead of {}", base, a.out_suffix, a.macro, base, v);
      e.description = fmt::format("The target wants '{}' where the driver passes {} ('{}'); {} of {} makes "
                                  "{}{} of that type from {}.",
                                  d.symbols[0], v, d.symbols[1], a.macro,
                                  fs::relative(header, ctx.new_src).string(), base, a.out_suffix, v);
      std::string l = *line;
      std::size_t nl = vals.front()->begin == 0 ? std::string::npos : text->rfind('\n', vals.front()->begin - 1);
      std::size_t col = vals.front()->begin - (nl == std::string::npos ? 0 : nl + 1);
      l.replace(col, v.size(), base + a.out_suffix);
      e.text_edits.push_back({d.file, d.line, 1, l + "\n"});
      if (!has) e.text_edits.push_back({d.file, toks[def->last].line + 1, 0, a.macro + "(" + base + ");\n"});
      e.symbols = {a.macro, base + a.out_suffix, v};
      e.support = 1;
      out.push_back(std::move(e));
      return;
    }
  }

  /// modpost: "module m uses symbol s from namespace NS, but does not import it": the target
  /// moved the symbol into a namespace; the module imports it next to its MODULE_LICENSE, written
  /// the way the target's own modules write the import.
  void import_namespace(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                        std::vector<Edit>& out) {
    // Up to 6.12: "module m uses symbol s from namespace NS, ..."; since 6.13 the names are
    // quoted and the module comes first: "m.ko: module uses symbol 's' from namespace 'NS', ...".
    static const std::regex k_ns(R"((?:module (\S+)|(\S+?)(?:\.ko)?: module) uses symbol '?([^\s']+)'? from namespace '?([A-Za-z_]\w*)'?, but does not import it)");
    std::smatch m;
    if (!std::regex_search(d.message, m, k_ns)) return;
    std::string module = m[1].matched ? m[1].str() : m[2].str(), symbol = m[3].str(), ns = m[4].str();
    if (!seen.insert("ns:" + module + ":" + ns).second) return;
    // The file with the module's MODULE_LICENSE: named like the module, else one using the symbol.
    std::string file;
    int line = 0, score = -1;
    static const std::regex k_license(R"(^\s*MODULE_LICENSE\s*\()");
    for (const auto& rel : util::list_files(ctx.tree)) {
      if (rel.extension() != ".c") continue;
      auto t = util::read_file(ctx.tree / rel);
      if (!t || t->find("MODULE_LICENSE") == std::string::npos) continue;
      int n = 0, at = 0;
      for (auto l : util::split_lines(*t)) {
        ++n;
        if (std::regex_search(std::string(l), k_license)) at = n;
      }
      if (!at) continue;
      int sc = (rel.stem().string() == module ? 2 : 0) + (has_word(*t, symbol) ? 1 : 0);
      if (sc > score) score = sc, file = rel.string(), line = at;
    }
    if (file.empty()) return;
    // 6.13 made the argument a string literal; follow the target's own callers.
    int quoted = 0, bare = 0;
    const auto callers = idx.caller_args("MODULE_IMPORT_NS", 1); // kept: the loop reads into it
    if (!callers.empty())
      for (const auto& [arg, n] : callers[0]) (arg.starts_with("\"") ? quoted : bare) += n;
    std::string arg = quoted > bare ? "\"" + ns + "\"" : ns;
    Edit e;
    e.proposer = "target-api";
    e.change_id = "import-ns:" + ns;
    e.label = "other";
    e.title = fmt::format("{} imports namespace {}", module, ns);
    e.description = fmt::format("The target exports {} in symbol namespace {}; modpost refuses a module that uses it "
                                "without MODULE_IMPORT_NS.", symbol, ns);
    e.text_edits.push_back({file, line + 1, 0, fmt::format("MODULE_IMPORT_NS({});\n", arg), std::nullopt});
    e.symbols = {symbol, ns};
    e.support = 1;
    e.rank = 1;
    out.push_back(std::move(e));
  }

  /// modpost: "X" undefined, where the target keeps the array X private and exports the
  /// function that indexes it (`led_get_color_name(u8 color_id) { ... return led_colors[color_id]; }`):
  /// each `X[E]` of the driver becomes `F(E)`. Found in the target's own source: an exported
  /// function of one parameter whose body returns X indexed by that parameter.
  void unexported_array(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
    const std::string& sym = d.symbols[0];
    static const std::regex k_name(R"(^[A-Za-z_]\w*$)");
    if (!std::regex_match(sym, k_name)) return;
    bool indexed = false;
    for (const auto& [rel, text] : sources_mentioning(ctx.tree, sym))
      if (std::regex_search(text, std::regex("\\b" + sym + "\\s*\\[")) ) indexed = true;
    if (!indexed) return;
    kernel::SourceGrep q;
    q.options = {"-lE"};
    q.includes = {"*.c"};
    q.pattern = "return[[:space:]]+" + sym + "[[:space:]]*\\[";
    q.dirs = kernel::k_code_dirs;
    q.all_of = {sym};
    for (const auto& line : kernel::grep_source(ctx.new_src, q)) {
      auto text = util::read_file(ctx.new_src / line);
      if (!text) continue;
      auto toks = tokenize(*text);
      for (const auto& u : find_units(toks)) {
        if (u.kind != UnitKind::function) continue;
        // One named parameter, and `return sym [ param ] ;` in the body.
        std::size_t open = u.first;
        while (open < u.body && !(toks[open].text == u.name && open + 1 < u.body && toks[open + 1].text == "(")) ++open;
        if (open >= u.body) continue;
        std::size_t close = matching_close(toks, open + 1);
        if (close == std::string::npos || close > u.body) continue;
        std::string param;
        int commas = 0;
        for (std::size_t k = open + 2; k < close; ++k) commas += toks[k].text == ",";
        if (commas != 0 || close < open + 3 || toks[close - 1].kind != TokKind::ident) continue;
        param = toks[close - 1].text;
        bool returns = false;
        for (std::size_t k = u.body; k + 5 <= u.last && k + 5 < toks.size(); ++k)
          if (toks[k].text == "return" && toks[k + 1].text == sym && toks[k + 2].text == "[" && toks[k + 3].text == param &&
              toks[k + 4].text == "]" && toks[k + 5].text == ";")
            returns = true;
        if (!returns) continue;
        static const std::regex k_export(R"(EXPORT_SYMBOL(_GPL)?\s*\(\s*([A-Za-z_]\w*)\s*\))");
        bool exported = false;
        for (std::sregex_iterator it(text->begin(), text->end(), k_export), end; it != end; ++it)
          if ((*it)[2].str() == u.name) exported = true;
        if (!exported || !idx.names().count(u.name)) continue;
        Edit e;
        e.proposer = "target-api";
        e.change_id = "array:" + sym;
        e.label = "removed-with-replacement";
        e.title = fmt::format("{}[] is not exported: use {}()", sym, u.name);
        e.description = fmt::format("The target keeps {}[] to itself and exports {}() ({}), which returns {}[{}]: "
                                    "each {}[E] becomes {}(E).",
                                    sym, u.name, std::string(line), sym, param, sym, u.name);
        e.smpl = fmt::format("@@\nexpression E;\n@@\n- {}[E]\n+ {}(E)\n", sym, u.name);
        e.symbols = {sym, u.name};
        e.evidence = {std::string(line)};
        e.support = 1;
        out.push_back(std::move(e));
        return;
      }
    }
  }

  static Edit shim_edit(const std::string& file, const std::string& name, int line, int lines, const char* what) {
    Edit e;
    e.proposer = "target-api";
    e.change_id = "shim:" + name;
    e.label = "other";
    e.title = fmt::format("the target defines {} itself", name);
    e.description = fmt::format("The driver's own {} {} (a compat definition for kernels that lacked it) clashes with "
                                "the target kernel's definition of the same name; it is removed.",
                                what, name);
    e.text_edits.push_back({file, line, lines, "", std::nullopt});
    e.symbols = {name};
    e.support = 1;
    e.rank = 1;
    return e;
  }

  void arguments(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
    const std::string& name = d.symbols[0];
    auto proto = idx.prototype(name, &d);
    if (!proto || proto->variadic) return;
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return;
    auto toks = tokenize(*text);
    auto calls = find_calls(toks, 0, toks.empty() ? 0 : toks.size() - 1);
    const Call* c = call_at(toks, calls, name, d.line);
    if (!c) return;
    std::size_t n = c->args.size(), m = proto->params.size();
    std::vector<std::string> new_args;
    std::string what;
    if (n > m) {
      auto keep = best_subset(n, m, [&](const std::vector<std::size_t>& ks) {
        int s = 0;
        for (std::size_t j = 0; j < ks.size(); ++j) s += compat(c->args[ks[j]], proto->params[j]);
        return s;
      });
      if (keep.size() != m) return;
      for (auto i : keep) new_args.push_back(fmt::format("E{}", i));
      what = fmt::format("{}() takes {} argument(s) instead of {}", name, m, n);
    } else if (n < m) {
      int ncalls = 0;
      auto callers = idx.caller_args(name, m, &ncalls);
      auto slots = best_subset(m, n, [&](const std::vector<std::size_t>& ps) {
        int s = 0;
        for (std::size_t j = 0; j < ps.size(); ++j) s += compat(c->args[j], proto->params[ps[j]]);
        // Prefer keeping the existing arguments first (new parameters are usually appended).
        for (std::size_t j = 0; j < ps.size(); ++j) s -= static_cast<int>(ps[j] - j);
        return s;
      });
      if (slots.size() != n) return;
      std::size_t next = 0;
      for (std::size_t p = 0; p < m; ++p) {
        if (next < slots.size() && slots[next] == p) {
          new_args.push_back(fmt::format("E{}", next++));
          continue;
        }
        std::string value = default_value(proto->params[p]);
        int best = 0;
        for (const auto& [v, cnt] : callers[p])
          if (cnt > best && ncalls > 0 && cnt * 10 >= ncalls * 3) best = cnt, value = v;
        new_args.push_back(value);
      }
      what = fmt::format("{}() takes {} argument(s) instead of {}", name, m, n);
    } else {
      return;
    }
    Edit e;
    e.proposer = "target-api";
    e.change_id = "call:" + name;
    e.label = "arguments-changed";
    e.title = what;
    e.description = fmt::format("{}; the target declares it as `{}` ({}). Arguments were matched to the parameters by "
                                "type and name; new ones take the value the target's own callers pass most often.",
                                what, util::trim(proto->text), proto->header);
    e.smpl = smpl_call(name, n, name, new_args);
    CallRewrite cr{name, n, name, {}};
    for (const auto& a : new_args) cr.args.push_back(std::regex_replace(a, std::regex(R"(\bE(\d+)\b)"), "$$$1"));
    e.call = cr;
    e.symbols = {name};
    e.support = 1;
    e.rank = 1; // learned rules, when available, go first
    out.push_back(std::move(e));
  }

  void renamed(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
    const std::string& name = d.symbols[0];
    const auto& names = idx.names();
    if (names.count(name)) return; // declared: a missing #include (header-fix), not a rename
    // Declared in a header outside the indexed dirs (include/crypto/internal/...): still an include.
    if (idx.prototype(name, nullptr)) return;
    if (driver_declares(ctx.tree, name)) return;
    // The kernel's own porting notes say what became of it: no guessing by similarity.
    if (auto note = idx.porting_notes().find(name); note != idx.porting_notes().end()) {
      const auto& pn = note->second;
      Edit e;
      e.proposer = "target-api";
      e.change_id = "ident:" + name;
      e.symbols = {name};
      e.evidence = {pn.where};
      e.support = 1;
      if (pn.drop) {
        e.label = "removed-with-replacement";
        e.title = fmt::format("{} is gone: its uses are dropped", name);
        e.description = fmt::format("The target kernel's porting notes ({}): \"{}\"", pn.where, pn.sentence);
        e.text_edits = drop_uses(ctx.tree, name);
        if (!e.text_edits.empty()) out.push_back(std::move(e));
        return;
      }
      if (idx.names().count(pn.use) || idx.in_headers(pn.use)) {
        e.label = "rename";
        e.title = fmt::format("{} was replaced by {}", name, pn.use);
        e.description = fmt::format("The target kernel's porting notes ({}): \"{}\"", pn.where, pn.sentence);
        e.renames = {{name, pn.use}};
        e.symbols.push_back(pn.use);
        out.push_back(std::move(e));
        return;
      }
    }
    // A constant renamed to a merely similar constant compiles and means something else
    // (I2C_CLASS_DDC is not I2C_CLASS_HWMON): constants need a much closer name than functions.
    bool constant = std::none_of(name.begin(), name.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
    double threshold = constant ? 0.85 : 0.6;
    std::vector<std::pair<double, std::string>> cands;
    for (const auto& n : names) {
      if (n.size() < 3 || n == name) continue;
      double s = name_similarity(name, n);
      if (s >= threshold) cands.push_back({s, n});
    }
    std::sort(cands.begin(), cands.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (cands.size() > 8) cands.resize(8);
    // Re-rank the most similar by how much the target's own drivers use them.
    // Re-rank by how much the target's own drivers use each candidate (log scale) and drop what
    // the target documents as deprecated (Documentation/process/deprecated.rst).
    const auto& deprecated = idx.deprecated();
    std::vector<std::tuple<double, int, std::string>> ranked;
    // An undeclared lowercase name not called is a variable or parameter: a function of the
    // target with a similar name would compile (as a pointer) and mean nothing.
    // An ops-table value (`.llseek = no_llseek,`) is a function designator: functions stay.
    bool value_use = d.kind == DiagKind::undeclared_identifier &&
                     std::any_of(name.begin(), name.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
    if (value_use)
      if (auto text = util::read_file(ctx.tree / d.file); text) {
        auto lines = util::split_lines(*text);
        if (d.line >= 1 && static_cast<std::size_t>(d.line) <= lines.size() &&
            std::regex_search(std::string(lines[static_cast<std::size_t>(d.line) - 1]),
                              std::regex(R"(\.\s*\w+\s*=\s*&?\s*)" + name + R"(\s*(,|\}|$))")))
          value_use = false;
      }
    // A call's replacement must take the call's arguments: same count, none of an
    // incompatible kind (prandom_u32_max(10) is not prandom_u32_state(struct rnd_state *)).
    std::optional<std::vector<std::string>> args;
    if (d.kind == DiagKind::implicit_function_declaration)
      if (auto text = util::read_file(ctx.tree / d.file); text) {
        auto toks = tokenize(*text);
        for (const auto& c : find_calls(toks, 0, toks.empty() ? 0 : toks.size() - 1))
          if (c.callee == name && toks[c.name_tok].line == d.line) {
            args = c.args;
            break;
          }
      }
    auto takes = [&](const std::string& n) {
      if (!args) return true;
      auto p = idx.prototype(n, nullptr);
      if (!p) return true;
      if (p->variadic) return p->params.size() <= args->size();
      if (p->params.size() != args->size()) return false;
      for (std::size_t i = 0; i < args->size(); ++i)
        if (!p->is_macro && compat((*args)[i], p->params[i]) < -1) return false;
      return true;
    };
    // With an older kernel's source at hand (--from, or the reference), the renamed function's
    // old prototype is known: a successor takes the same parameter types (a similar name that
    // takes a bool where the old one took a count compiles and means something else:
    // blk_queue_max_hw_sectors(q, unsigned int) is not blk_mq_run_hw_queues(q, bool)).
    std::optional<Prototype> old_proto;
    if (d.kind == DiagKind::implicit_function_declaration && !ctx.old_src.empty()) {
      TargetIndex old_idx(ctx.old_src, ctx.from ? ctx.from->build_dir : fs::path());
      old_proto = old_idx.prototype(name, nullptr);
      if (old_proto && (old_proto->is_macro || old_proto->variadic)) old_proto.reset();
    }
    auto same_shape = [&](const std::string& n) {
      if (!old_proto) return true;
      auto p = idx.prototype(n, nullptr);
      if (!p || p->is_macro) return true;
      if (p->variadic || p->params.size() != old_proto->params.size()) return false;
      auto plain = [](const std::string& t) {
        std::string o;
        for (const auto& tk : tokenize(t))
          if (tk.text != "const" && tk.text != "__user" && tk.text != "__iomem") o += tk.text;
        return o;
      };
      for (std::size_t i = 0; i < p->params.size(); ++i) {
        const auto &a = old_proto->params[i].type, &b = p->params[i].type;
        if (plain(a) != plain(b) && !(integer_type(a) && integer_type(b))) return false;
      }
      // and returns what it returned (spi_controller_is_slave's bool is not
      // spi_controller_resume's int status)
      const auto &ra = old_proto->ret, &rb = p->ret;
      if (ra.empty() || rb.empty()) return true;
      return plain(ra) == plain(rb) || (integer_type(ra) && integer_type(rb));
    };
    // A macro that compiles its arguments away (`no_printk`: `if (0) _printk(...)`) is a
    // stub, never the successor of something that did work (snd_printk).
    auto stub = [&](const std::string& n) {
      std::string body = idx.macro_body(n);
      std::string sq;
      for (char ch : body)
        if (!std::isspace(static_cast<unsigned char>(ch))) sq += ch;
      return sq.find("if(0)") != std::string::npos || sq == "do{}while(0)" || sq == "({0;})" || sq == "((void)0)";
    };
    // With an older kernel's source, its drivers that called `name` and still exist in the
    // target show whether a candidate took its place: their calls of it grew by about as many
    // calls as `name` had (devlink_info_driver_name_put's callers kept their
    // devlink_info_serial_number_put calls as they were: the kernel dropped the former).
    std::vector<std::string> old_callers;
    if (!ctx.old_src.empty() && d.kind == DiagKind::implicit_function_declaration) {
      kernel::SourceGrep q;
      q.options = {"-lw"};
      q.includes = {"*.c"};
      q.pattern = name;
      q.dirs = kernel::k_user_dirs;
      q.all_of = {name};
      q.timeout = std::chrono::seconds(60);
      for (const auto& l : kernel::grep_source(ctx.old_src, q))
        if (old_callers.size() < 30 && fs::exists(ctx.new_src / l) &&
            !std::any_of(ctx.leave_out.begin(), ctx.leave_out.end(), [&](const std::string& lo) { return l.starts_with(lo); }))
          old_callers.push_back(l);
    }
    // Identifier counts of those files, old and new, read once for all candidates.
    std::map<std::string, int> old_uses, new_uses;
    bool counted = false;
    auto absorbs = [&](const std::string& n) {
      if (!counted) {
        counted = true;
        for (const auto& rel : old_callers) {
          auto o = util::read_file(ctx.old_src / rel);
          auto t = util::read_file(ctx.new_src / rel);
          if (!o || !t) continue;
          for (const auto& tk : tokenize(*o))
            if (tk.kind == TokKind::ident) ++old_uses[tk.text];
          for (const auto& tk : tokenize(*t))
            if (tk.kind == TokKind::ident) ++new_uses[tk.text];
        }
      }
      int had = old_uses[name];
      return had == 0 || 2 * (new_uses[n] - old_uses[n]) >= had;
    };
    for (const auto& [s, n] : cands) {
      if (deprecated.count(n)) continue;
      if (!takes(n) || !same_shape(n) || stub(n) || !absorbs(n)) continue;
      if (value_use) {
        auto p = idx.prototype(n, nullptr);
        if (p && !p->is_macro) continue;
      }
      ranked.push_back({s, idx.usage_count(n), n});
    }
    std::sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) {
      double sa = std::get<0>(a) + 0.03 * std::log2(1.0 + std::get<1>(a));
      double sb = std::get<0>(b) + 0.03 * std::log2(1.0 + std::get<1>(b));
      return sa > sb;
    });
    int rank = 1;
    for (const auto& [s, uses, n] : ranked) {
      if (rank > 3) break;
      if (uses == 0) continue;
      Edit e;
      e.proposer = "target-api";
      e.change_id = "ident:" + name;
      e.label = "rename";
      e.title = fmt::format("{} was replaced by {}", name, n);
      e.description = fmt::format("{} does not exist in the target kernel; {} is the most similar name it declares "
                                  "(similarity {:.2f}, used by {} of its driver files).",
                                  name, n, s, uses);
      e.renames = {{name, n}};
      e.symbols = {name, n};
      e.support = uses;
      e.rank = rank++;
      out.push_back(std::move(e));
    }
  }

  /// An edit through the target's accessors for `tag.m`; false when the target has none.
  bool accessor(TargetIndex& idx, const std::string& tag, const std::string& m, bool reads,
                std::vector<Edit>& out) {
    auto a = find_accessors(idx, tag, m);
    util::log_debug("target-api: accessors of {}.{}: struct {} get={} set={} on={} off={}", tag, m, a.tag, a.get, a.set,
                    a.bits_on, a.bits_off);
    if (a.tag.empty() || (a.set.empty() && a.bits_on.empty() && (!reads || a.get.empty()))) return false;
    std::vector<std::string> names;
    std::string listed;
    for (const auto* n : {&a.get, &a.set, &a.bits_on, &a.bits_off})
      if (!n->empty()) {
        names.push_back(*n);
        listed += (listed.empty() ? "" : ", ") + *n + "()";
      }
    Edit e;
    e.proposer = "target-api";
    e.change_id = "member:struct " + a.tag + "." + m;
    e.label = "member-changed";
    e.title = fmt::format("struct {}.{} is accessed through {}", a.tag, m, listed);
    e.description = fmt::format("The target kernel {} struct {}.{} directly; its accessors taking a struct {} * "
                                "({}) are used instead, as the target's own drivers do.",
                                reads ? "has no" : "does not let drivers write", a.tag, m, a.tag, a.where);
    e.smpl = accessor_smpl(a, m, reads);
    if (e.smpl.empty()) return false;
    e.symbols = {"struct " + a.tag, m};
    for (const auto& n : names) e.symbols.push_back(n);
    e.support = 1;
    e.rank = 1;
    out.push_back(std::move(e));
    return true;
  }

  /// A member moved into a struct the struct now points to or embeds (net_device.wol_enabled ->
  /// net_device.ethtool->wol_enabled, 6.11): exactly one struct-typed member of the target's
  /// struct has a member of that name.
  bool moved_into_member(TargetIndex& idx, const std::string& type, const std::string& tag, const std::string& m,
                         int rank, std::vector<Edit>& out) {
    static const std::regex k_struct(R"(^(?:const\s+)?struct\s+(\w+)\s*(\*?)$)");
    // Candidates: (member, its struct, pointer?); a struct declared under #ifdef/#else lists
    // its members twice.
    // The member keeps its name, or drops a prefix word the sub-struct's name now carries
    // (cpuinfo_x86.cpu_core_id -> .topo.core_id, 6.7), as long as two words remain.
    std::vector<std::string> names = {m};
    if (auto u = m.find('_'); u != std::string::npos && m.find('_', u + 1) != std::string::npos) names.push_back(m.substr(u + 1));
    std::set<std::tuple<std::string, std::string, bool, std::string>> cands;
    for (const auto& p : idx.struct_member_types(tag)) {
      std::smatch sm;
      std::string t(util::trim(p.type));
      if (!std::regex_match(t, sm, k_struct) || sm[1].str() == tag) continue;
      auto sub = idx.struct_members(sm[1].str());
      for (const auto& n : names)
        if (std::find(sub.begin(), sub.end(), n) != sub.end()) {
          cands.insert({p.name, sm[1].str(), !sm[2].str().empty(), n});
          break;
        }
    }
    // Several (net_device.ethtool and .phydev both have wol_enabled): the one the target's own
    // drivers write, if only one of them is used.
    std::string via, via_tag, sub_name;
    bool pointer = false;
    int best = -1, second = -1;
    for (const auto& [name, stag, ptr, n] : cands) {
      int uses = cands.size() == 1 ? 1 : idx.usage_count(name + (ptr ? "->" : ".") + n);
      if (uses > best) {
        second = best;
        best = uses;
        via = name, via_tag = stag, pointer = ptr, sub_name = n;
      } else if (uses > second) {
        second = uses;
      }
    }
    util::log_debug("target-api: {}.{}: {} candidate path(s), best {} uses ({})", type, m, cands.size(), via, best);
    if (cands.empty() || best <= 0 || best == second) return false;
    std::string path = via + (pointer ? "->" : ".") + sub_name;
    Edit e;
    e.proposer = "target-api";
    e.change_id = "member:" + type + "." + m;
    e.label = "member-changed";
    e.title = fmt::format("{}.{} moved to .{}", type, m, path);
    e.description = fmt::format("{} has no member {} in the target kernel; its member {} (struct {}{}) has one.", type, m,
                                via, via_tag, pointer ? " *" : "");
    // Typed first; then any `E.m` / `E->m` spatch cannot type (`cpu_data(cpu).cpu_core_id`: a
    // per-cpu macro). A use on another struct with that member would now fail to build, and
    // the loop keeps no edit that adds errors.
    e.smpl = fmt::format("@@\n{0} *p;\n@@\n- p->{1}\n+ p->{2}\n\n@@\n{0} s;\n@@\n- s.{1}\n+ s.{2}\n\n"
                         "@@\nexpression E;\n@@\n(\n- E->{1}\n+ E->{2}\n|\n- E.{1}\n+ E.{2}\n)\n", type, m, path);
    e.symbols = {type, m, via};
    e.support = 1;
    e.rank = rank;
    out.push_back(std::move(e));
    return true;
  }

  void member(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
    std::string type = d.symbols[0], m = d.symbols[1];
    std::string tag = type.substr(type.rfind(' ') + 1);
    auto members = idx.struct_members(tag);
    if (members.empty() || std::find(members.begin(), members.end(), m) != members.end()) return;
    // What the driver assigns to the member: a function of its own, or something else
    // (THIS_MODULE, a constant). A successor member must be of the same kind.
    std::string value;
    if (auto text = util::read_file(ctx.tree / d.file); text) {
      auto lines = util::split_lines(*text);
      if (d.line >= 1 && static_cast<std::size_t>(d.line) <= lines.size()) {
        std::smatch mm;
        std::string l(lines[static_cast<std::size_t>(d.line) - 1]);
        if (std::regex_search(l, mm, std::regex("\\." + m + "\\s*=\\s*&?\\s*([A-Za-z_]\\w*)"))) value = mm[1].str();
      }
    }
    bool value_is_function = false;
    std::optional<std::vector<std::string>> value_params; // the driver function's parameter types
    if (!value.empty())
      for (const auto& [rel, text] : sources_mentioning(ctx.tree, value)) {
        const auto* t = &text;
        auto toks = tokenize(*t);
        for (const auto& u : find_units(toks)) {
          if (u.kind != UnitKind::function || u.name != value) continue;
          value_is_function = true;
          for (std::size_t k = u.first; k + 1 < u.body; ++k)
            if (toks[k].text == value && toks[k + 1].text == "(") {
              std::size_t c = matching_close(toks, k + 1);
              if (c == std::string::npos || c >= u.body) break;
              value_params = param_types(t->substr(toks[k + 1].end, toks[c].begin - toks[k + 1].end));
              break;
            }
        }
      }
    auto fn_members = idx.function_pointer_members(tag);
    // With the old kernel at hand, a successor has the type the member had: a similar name of
    // another type (block_device.bd_inode -> bd_holder, a void *) compiles and is wrong.
    std::string old_type;
    std::map<std::string, std::string> new_types;
    if (!ctx.old_src.empty() && ctx.from) {
      TargetIndex old_idx(ctx.old_src, ctx.from->build_dir);
      for (const auto& p : old_idx.struct_member_types(tag))
        if (p.name == m) old_type = no_spaces(p.type);
      for (const auto& p : idx.struct_member_types(tag)) new_types[p.name] = no_spaces(p.type);
    }
    std::vector<std::pair<double, std::string>> cands;
    for (const auto& x : members) {
      double s = name_similarity(m, x);
      if (s < 0.5) continue;
      if (!value.empty() && value_is_function != (fn_members.count(x) > 0)) continue;
      if (auto it = new_types.find(x); !old_type.empty() && it != new_types.end() && it->second != old_type) continue;
      // A function's successor member takes as many parameters as the function (iterate ->
      // iterate_shared, not read_iter); one taking exactly its types comes first.
      if (value_is_function && value_params)
        if (auto mp = idx.function_member_params(tag, x)) {
          if (mp->size() != value_params->size()) continue;
          bool same = true;
          for (std::size_t i = 0; i < mp->size(); ++i) same = same && no_spaces((*mp)[i]) == no_spaces((*value_params)[i]);
          if (same) s += 1.0;
        }
      cands.push_back({s, x});
    }
    std::sort(cands.begin(), cands.end(), [](auto& a, auto& b) { return a.first > b.first; });
    int rank = 1;
    // The accessors the target's own code uses for the member go before similar names.
    if (value.empty() && accessor(idx, tag, m, true, out)) ++rank;
    if (value.empty() && moved_into_member(idx, type, tag, m, rank, out)) ++rank;
    if (cands.empty() && rank > 1) return;
    if (cands.empty()) {
      // No successor member: when the driver only sets it to a constant in an initializer, the
      // setting has no meaning on the target any more and goes (the diagnostic names it).
      Edit e;
      e.proposer = "target-api";
      e.change_id = "member:" + type + "." + m;
      e.label = "member-changed";
      e.title = fmt::format("{} lost the member .{}", type, m);
      e.description = fmt::format("{} has no member {} in the target kernel and no similar one; the driver's "
                                  "constant setting of it is dropped.", type, m);
      e.smpl = fmt::format("@@\nidentifier x;\nconstant C;\n@@\n{0} x = {{\n-\t.{1} = C,\n}};\n\n"
                           "@@\nidentifier x;\n@@\n{0} x = {{\n-\t.{1} = \\(true\\|false\\|NULL\\),\n}};\n",
                           type, m);
      e.symbols = {type, m};
      e.support = 1;
      e.rank = 2;
      out.push_back(std::move(e));
      return;
    }
    for (const auto& [s, x] : cands) {
      if (rank > 2) break;
      Edit e;
      e.proposer = "target-api";
      e.change_id = "member:" + type + "." + m;
      e.label = "member-changed";
      e.title = fmt::format("{}.{} was renamed to .{}", type, m, x);
      e.description = fmt::format("{} has no member {} in the target kernel; .{} is its most similar member "
                                  "(similarity {:.2f}).", type, m, x, s);
      e.smpl = fmt::format("@@\nidentifier x;\nexpression E;\n@@\n{0} x = {{\n-\t.{1} = E,\n+\t.{2} = E,\n}};\n\n"
                           "@@\n{0} *p;\n{0} s;\n@@\n(\n- p->{1}\n+ p->{2}\n|\n- s.{1}\n+ s.{2}\n)\n",
                           type, m, x);
      e.symbols = {type, m, x};
      e.support = 1;
      e.rank = rank++;
      out.push_back(std::move(e));
    }
  }
};

} // namespace

std::unique_ptr<Proposer> make_target_api() { return std::make_unique<TargetApi>(); }

} // namespace autodriver::propose
