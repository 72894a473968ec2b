// target-api strategy "prototype-sync": the driver's own prototypes and function-pointer
// declarations that disagree with its definitions.

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

namespace {

/// The lines [first, last] of the declaration statement that starts on `line` (whole lines, up
/// to its ';' outside parentheses, preprocessor lines inside it kept), when it declares `name`
/// and has no initializer.
std::optional<std::pair<int, int>> declaration_lines(const std::string& text, int line, const std::string& name) {
  auto toks = tokenize(text);
  std::size_t first = toks.size();
  int depth = 0;
  bool names_it = false;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].line < line || toks[i].kind == TokKind::pp_line) continue;
    if (first == toks.size()) {
      if (toks[i].line != line || (i > 0 && toks[i - 1].line == line && toks[i - 1].kind != TokKind::pp_line))
        return std::nullopt;
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

/// A declaration's return type: the tokens before `name` back to the previous statement,
/// directive or file start, without storage words. Its first token index, or npos.
std::size_t return_type_start(const std::vector<Token>& toks, std::size_t name) {
  std::size_t b = name;
  while (b > 0) {
    const Token& t = toks[b - 1];
    if (t.kind == TokKind::pp_line || (t.kind == TokKind::punct && (t.text == ";" || t.text == "}" || t.text == "{"))) break;
    --b;
  }
  static const std::set<std::string> k_storage = {"static",     "extern",          "inline",  "__inline",
                                                  "__inline__", "__always_inline", "noinline"};
  while (b < name && k_storage.contains(toks[b].text)) ++b;
  return b < name ? b : std::string::npos;
}

/// The signature of `name` declared or defined on `line` of `text`, read from the source (gcc
/// before 11 says only "conflicting types for 'f'", without the "; have '...'" of its type):
/// the return type's and the parameter list's text, and the return type's first token.
struct SourceSignature {
  std::string ret, params;
  std::size_t ret_first = 0, name_tok = 0;
};
std::optional<SourceSignature> signature_at(const std::string& text, const std::vector<Token>& toks, int line,
                                            const std::string& name) {
  // The source's own spelling, blanks and line breaks folded to one space.
  auto spelled = [&](std::size_t from, std::size_t to) {
    std::string out;
    for (char c : text.substr(from, to - from)) {
      bool blank = c == ' ' || c == '\t' || c == '\n' || c == '\r';
      if (blank && (out.empty() || out.back() == ' ')) continue;
      out += blank ? ' ' : c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    if (toks[i].line != line || toks[i].kind != TokKind::ident || toks[i].text != name || toks[i + 1].text != "(") continue;
    std::size_t close = matching_close(toks, i + 1);
    std::size_t b = return_type_start(toks, i);
    if (close == std::string::npos || b == std::string::npos) return std::nullopt;
    for (std::size_t k = i + 2; k < close; ++k)
      if (toks[k].kind == TokKind::pp_line) return std::nullopt; // a parameter list split by #if
    return SourceSignature{spelled(toks[b].begin, toks[i - 1].end), spelled(toks[i + 1].end, toks[close].begin), b, i};
  }
  return std::nullopt;
}

/// The other direction of prototype_sync, for a return type only: the definition of `name` at
/// d.file:d.line returns what the driver's own prototype says (a port retyped the prototype,
/// or a maintainer's block held only the definition). Parameters are left alone.
void definition_follows(const PortContext& ctx, const core::Diagnostic& d, const core::DiagNote& prev, const std::string& name,
                        std::vector<Edit>& out) {
  auto def_text = util::read_file(ctx.tree / d.file);
  auto decl_text = util::read_file(ctx.tree / prev.file);
  if (!def_text || !decl_text) return;
  auto dt = tokenize(*def_text), pt = tokenize(*decl_text);
  auto def = signature_at(*def_text, dt, d.line, name);
  auto decl = signature_at(*decl_text, pt, prev.line, name);
  if (!def || !decl || type_key(def->ret) == type_key(decl->ret)) return;
  const Token& first = dt[def->ret_first];
  const Token& at = dt[def->name_tok];
  std::size_t ls = def_text->rfind('\n', first.begin);
  ls = ls == std::string::npos ? 0 : ls + 1;
  std::size_t le = def_text->find('\n', at.begin);
  le = le == std::string::npos ? def_text->size() : le + 1;
  std::string lines = def_text->substr(ls, first.begin - ls) + decl->ret + (decl->ret.ends_with("*") ? "" : " ") +
                      def_text->substr(at.begin, le - at.begin);
  if (!lines.ends_with("\n")) lines += "\n";
  Edit e;
  e.proposer = "target-api";
  e.change_id = "proto:" + name;
  e.label = "other";
  e.title = fmt::format("the definition of {} returns {} as its prototype says", name, decl->ret);
  e.description = fmt::format("{}() is declared in {}:{} returning '{}' and defined in {}:{} returning '{}'; the "
                              "definition's return type is rewritten to the declaration's.",
                              name, prev.file, prev.line, decl->ret, d.file, d.line, def->ret);
  e.text_edits.push_back({d.file, first.line, at.line - first.line + 1, lines, std::nullopt});
  e.symbols = {name};
  e.support = 1;
  e.rank = 2;
  out.push_back(std::move(e));
}

} // namespace

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
  definition_follows(ctx, d, *prev, name, out);
  // The definition's type as gcc prints it: "have 'int(struct dm_target *, struct bio *)'" (read
  // from the message, since a definition whose header sits in its own #if has no plain text);
  // gcc before 11 does not print it: then the definition's own text on its line.
  static const std::regex k_have(R"(; have '([^'(]+)\(([^']*)\)')");
  std::smatch hm;
  std::string ret, params;
  const bool from_message = std::regex_search(d.message, hm, k_have);
  if (from_message) {
    ret = std::string(util::trim(hm[1].str()));
    params = hm[2].str();
  } else if (auto def_text = util::read_file(ctx.tree / d.file)) {
    auto sig = signature_at(*def_text, tokenize(*def_text), d.line, name);
    if (!sig) return;
    ret = sig->ret;
    params = sig->params;
  } else {
    return;
  }
  // Function-pointer parameters keep their parentheses; a function returning a function
  // pointer ("void (*(int))(int)") leaves them unbalanced and is not rewritten.
  params = std::regex_replace(params, std::regex(" {2,}"), " ");
  int depth = 0;
  for (char ch : params) {
    depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    if (depth < 0) return;
  }
  if (depth != 0) return;
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
  if (from_message) {
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
  e.text_edits.push_back(
      {prev->file, pt[first].line, pt[last].line - pt[first].line + 1, storage + header + ";\n", std::nullopt});
  e.symbols = {name};
  e.support = 1;
  e.rank = 1;
  out.push_back(std::move(e));
}

} // namespace autodriver::propose::target_api
