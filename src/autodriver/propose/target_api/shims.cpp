// target-api strategies "shim", "type-shim", "alias-shim": the driver's own compat definitions
// (macros, functions, typedefs, types, `#define A B` aliases) of names the target now defines.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/shared/adapter_macro.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/target_api/strategies.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace autodriver::propose::target_api {

using namespace csrc; // the C reader shared with gate/
namespace fs = std::filesystem;
using core::DiagKind;

/// A shim's removal joins the one of the same name in another file (two files carrying the same
/// compat helper: removing one alone leaves the other's error, and the change counts as tried).
static void add_shim(std::vector<Edit>& out, Edit e) {
  for (auto& o : out)
    if (o.change_id == e.change_id && o.proposer == e.proposer) {
      for (auto& t : e.text_edits) o.text_edits.push_back(std::move(t));
      ++o.support;
      return;
    }
  out.push_back(std::move(e));
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
    if (!names.count(name) || has_word(m[3].str(), name) || !seen.insert("shim:" + name + "@" + d.file).second) return;
    int lines = 1 + static_cast<int>(std::count(dir.begin(), dir.end(), '\n'));
    add_shim(out, shim_edit(d.file, name, t.line, lines, "macro"));
    return;
  }
  static const std::regex k_redef(R"(^(redefinition of|conflicting types for|static declaration of) '([A-Za-z_]\w*)')");
  std::smatch m;
  if (!std::regex_search(d.message, m, k_redef)) return;
  std::string name = m[2].str();
  // The earlier definition is the target's: a gcc note in the kernel's headers (outside the tree).
  bool in_target = names.count(name) > 0;
  for (const auto& n : d.notes)
    if (n.message.starts_with("previous") && !n.file.empty() && n.file.front() == '/' && !n.file.starts_with(ctx.tree.string()))
      in_target = true;
  if (!in_target || !seen.insert("shim:" + name + "@" + d.file).second) return;
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
      add_shim(out, shim_edit(d.file, name, toks[i].line, toks[j].line - toks[i].line + 1, "typedef"));
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
    add_shim(out, shim_edit(d.file, name, first, last - first + 1, "function"));
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
    while (first > 0 && toks[first - 1].kind != TokKind::pp_line && toks[first - 1].text != ";" && toks[first - 1].text != "}" &&
           toks[first - 1].text != "{")
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
                       : tag.empty()         ? keyword + " at " + d.file + ":" + std::to_string(toks[k].line)
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

/// A driver alias `#define A B` that maps the target's name A onto an older kernel's B
/// (`#define xt_action_param xt_target_param`, `#define v4l2_file_operations file_operations`):
/// gcc names B where the driver wrote A (on the diagnostic's line or in the message), and the
/// target declares A itself (a function, macro or struct). The alias goes; A is the target's.
void alias_shim(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                std::vector<Edit>& out, DriverAliases& aliases) {
  if (d.file.empty() || d.file.front() == '/' || d.line <= 0) return;
  if (!aliases.loaded) {
    aliases.loaded = true;
    for (const auto& rel : c_files(ctx.tree)) {
      auto text = util::read_file(ctx.tree / rel);
      if (!text || text->find("define") == std::string::npos) continue;
      for (const auto& t : tokenize(*text)) {
        if (t.kind != TokKind::pp_line) continue;
        if (auto a = define_alias(t.text); a && a->first != a->second) aliases.list.push_back({a->first, a->second, rel, t.line});
      }
    }
  }
  if (aliases.list.empty()) return;
  auto src = diagnostic_line(ctx.tree, d);
  if (!src) return;
  for (const auto& a : aliases.list) {
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

} // namespace autodriver::propose::target_api
