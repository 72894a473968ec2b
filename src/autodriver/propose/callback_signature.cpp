// Proposer "callback-signature": an ops/driver struct member's callback type changed (the
// incompatible-pointer-type error names both function types). When only the return type
// changed from int to void, the callback's definition is rewritten and its return statements
// fixed; the rule comes from the two types gcc prints, not from a table.

#include "autodriver/propose/c_tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <regex>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;

namespace {

struct FnType {
  std::string ret;
  std::string params;
};

bool parse_fn_type(const std::string& s, FnType& out) {
  static const std::regex k_fn(R"(^(.*?)\s*\(\*\)\((.*)\)$)");
  std::smatch m;
  if (!std::regex_match(s, m, k_fn)) return false;
  out.ret = std::string(util::trim(m[1].str()));
  out.params = std::string(util::trim(m[2].str()));
  return true;
}

/// The identifier assigned on a line like "\t.remove = foo_remove," or "x->remove = foo;".
std::string assigned_identifier(const std::string& line) {
  // ".remove = foo_remove," and wrapped forms such as ".remove = __exit_p(foo_remove),".
  static const std::regex k_assign(R"(=\s*&?\s*(?:[A-Za-z_]\w*\s*\(\s*)?([A-Za-z_]\w*)\s*\)?\s*[,;]?\s*$)");
  std::smatch m;
  if (std::regex_search(line, m, k_assign)) return m[1].str();
  return {};
}

std::string void_return_smpl(const std::string& fn, const std::string& old_ret) {
  // 1) "return f(x);" keeps the call; 2) other "return E;" become "return;";
  // 3) a trailing "return;" is dropped; 4) the return type becomes void.
  return fmt::format(R"(@@
identifier f;
expression list es;
@@
{0}(...) {{
<...
- return f(es);
+ f(es);
+ return;
...>
}}

@@
expression E;
@@
{0}(...) {{
<...
- return E;
+ return;
...>
}}

@@
@@
{0}(...) {{
...
- return;
}}

@@
@@
- {1}
+ void
{0}(...) {{ ... }}
)",
                     fn, old_ret);
}

std::string squash(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ') out += c;
  return out;
}

/// Line edits that retype the parameters of every declaration and the definition of `fn` in
/// one file: parameter i becomes `to[i]` (keeping its name) where `from[i]` differs.
std::vector<TextEdit> retype_params(const std::string& file, const std::string& text, const std::string& fn,
                                    const std::vector<std::string>& to, const std::vector<std::string>& from) {
  std::vector<TextEdit> edits;
  auto toks = tokenize(text);
  int depth = 0;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    if (toks[i].text == "{") ++depth;
    if (toks[i].text == "}") --depth;
    if (depth != 0 || toks[i].text != fn || toks[i + 1].text != "(") continue;
    if (i == 0 || (toks[i - 1].kind != TokKind::ident && toks[i - 1].text != "*")) continue;
    // Parameter token ranges.
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    std::size_t start = i + 2, k = i + 2;
    int d = 1;
    for (; k < toks.size(); ++k) {
      if (toks[k].text == "(") ++d;
      if (toks[k].text == ")" && --d == 0) break;
      if (d == 1 && toks[k].text == ",") {
        ranges.push_back({start, k - 1});
        start = k + 1;
      }
    }
    if (k > start) ranges.push_back({start, k - 1});
    if (ranges.size() != to.size()) continue;
    std::string out;
    std::size_t pos = toks[i].begin;
    bool changed = false;
    for (std::size_t p = 0; p < ranges.size(); ++p) {
      if (squash(to[p]) == squash(from[p])) continue;
      auto [a, b] = ranges[p];
      std::string name = toks[b].kind == TokKind::ident ? toks[b].text : "";
      std::string type = to[p];
      std::string param = name.empty() ? type : type + (type.back() == '*' ? "" : " ") + name;
      out.append(text, pos, toks[a].begin - pos);
      out += param;
      pos = toks[b].end;
      changed = true;
    }
    if (!changed) continue;
    // Whole lines from the name's line to the closing parenthesis' line.
    std::size_t line_start = text.rfind('\n', toks[i].begin);
    line_start = line_start == std::string::npos ? 0 : line_start + 1;
    std::size_t line_end = text.find('\n', toks[k].end);
    if (line_end == std::string::npos) line_end = text.size();
    std::string replaced = text.substr(line_start, toks[i].begin - line_start) + out +
                           text.substr(pos, line_end - pos) + "\n";
    edits.push_back({file, toks[i].line, toks[k].line - toks[i].line + 1, replaced});
  }
  return edits;
}

/// Line edits that change the return type `from_ret` -> `to_ret` of the declarations of `fn` in
/// the tree's .c/.h files (only prototypes when `prototypes_only`: SmPL rewrites definitions).
std::vector<TextEdit> retype_return_edits(const PortContext& ctx, const std::string& fn, const std::string& from_ret,
                                          const std::string& to_ret, bool prototypes_only) {
  std::vector<TextEdit> edits;
  auto old_ret = tokenize(from_ret);
  for (const auto& rel : util::list_files(ctx.tree)) {
    auto ext = rel.extension().string();
    if (ext != ".c" && ext != ".h") continue;
    auto t = util::read_file(ctx.tree / rel);
    if (!t || t->find(fn) == std::string::npos) continue;
    auto toks = tokenize(*t);
    int depth = 0;
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
      if (toks[i].text == "{") ++depth;
      if (toks[i].text == "}") --depth;
      if (depth != 0 || toks[i].text != fn || toks[i + 1].text != "(" || i < old_ret.size()) continue;
      bool match = true;
      for (std::size_t k = 0; k < old_ret.size(); ++k)
        if (toks[i - old_ret.size() + k].text != old_ret[k].text) match = false;
      if (!match) continue;
      if (prototypes_only) {
        // A prototype: the parameter list is followed by ';' (attributes aside), not '{'.
        int pd = 0;
        std::size_t k = i + 1;
        for (; k < toks.size(); ++k) {
          if (toks[k].text == "(") ++pd;
          if (toks[k].text == ")" && --pd == 0) break;
        }
        while (k + 1 < toks.size() && toks[k + 1].text != ";" && toks[k + 1].text != "{") ++k;
        if (k + 1 >= toks.size() || toks[k + 1].text != ";") continue;
      }
      const Token& first = toks[i - old_ret.size()];
      if (first.line != toks[i].line) continue; // type on its own line: not rewritten here
      std::size_t ls = t->rfind('\n', first.begin);
      ls = ls == std::string::npos ? 0 : ls + 1;
      std::size_t le = t->find('\n', toks[i].begin);
      if (le == std::string::npos) le = t->size();
      std::string line = t->substr(ls, first.begin - ls) + to_ret + (to_ret.back() == '*' ? "" : " ") +
                         t->substr(toks[i].begin, le - toks[i].begin) + "\n";
      edits.push_back({rel.string(), first.line, 1, line});
    }
  }
  return edits;
}

/// The callback a diagnostic's line assigns, once per callback (`done`), or empty.
std::string callback_at(const core::Diagnostic& d, const PortContext& ctx, std::set<std::string>& done) {
  auto text = util::read_file(ctx.tree / d.file);
  if (!text) return {};
  auto lines = util::split_lines(*text);
  if (d.line < 1 || static_cast<std::size_t>(d.line) > lines.size()) return {};
  std::string fn = assigned_identifier(std::string(lines[static_cast<std::size_t>(d.line) - 1]));
  if (fn.empty() || !done.insert(fn).second) return {};
  return fn;
}

Edit callback_edit(const std::string& fn) {
  Edit e;
  e.proposer = "callback-signature";
  e.change_id = "callback:" + fn;
  e.label = "callback-type-changed";
  return e;
}

class CallbackSignature final : public Proposer {
public:
  std::string_view id() const override { return "callback-signature"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    std::set<std::string> done;
    for (const auto& d : diags) {
      if (d.kind != core::DiagKind::incompatible_pointer_type || d.symbols.size() < 2) continue;
      FnType to, from;
      if (!parse_fn_type(d.symbols[0], to) || !parse_fn_type(d.symbols[1], from)) continue;
      if (to.params != from.params && squash(to.ret) == squash(from.ret)) {
        params_changed(d, to, from, ctx, done, out);
        continue;
      }
      if (to.params == from.params && to.ret != "void" && squash(to.ret) != squash(from.ret)) {
        ret_changed(d, to, from, ctx, done, out);
        continue;
      }
      if (to.params != from.params || to.ret != "void" || from.ret == "void") continue;
      std::string fn = callback_at(d, ctx, done);
      if (fn.empty()) continue;
      Edit e = callback_edit(fn);
      e.title = fmt::format("callback returns void instead of {}", from.ret);
      e.description = fmt::format(
          "The kernel now expects '{}' where {}() is '{}': {}() returns void and its return statements "
          "no longer carry a value.",
          d.symbols[0], fn, d.symbols[1], fn);
      e.smpl = void_return_smpl(fn, from.ret);
      // Prototypes (often in a header) must follow the definition, or the types conflict.
      e.text_edits = retype_return_edits(ctx, fn, from.ret, "void", true);
      e.symbols = {fn, d.symbols[0]};
      e.support = 1;
      out.push_back(std::move(e));
    }
    return out;
  }

private:
  /// The return type changed (e.g. gained const): retype it in every declaration of the callback.
  void ret_changed(const core::Diagnostic& d, const FnType& to, const FnType& from, const PortContext& ctx,
                   std::set<std::string>& done, std::vector<Edit>& out) {
    std::string fn = callback_at(d, ctx, done);
    if (fn.empty()) return;
    Edit e = callback_edit(fn);
    e.title = fmt::format("callback returns {}", to.ret);
    e.description = fmt::format("The kernel now expects '{}' where {}() is '{}': its return type becomes {}.",
                                d.symbols[0], fn, d.symbols[1], to.ret);
    e.text_edits = retype_return_edits(ctx, fn, from.ret, to.ret, false);
    if (e.text_edits.empty()) return;
    e.symbols = {fn, d.symbols[0]};
    e.support = 1;
    out.push_back(std::move(e));
  }

  void params_changed(const core::Diagnostic& d, const FnType& to, const FnType& from, const PortContext& ctx,
                      std::set<std::string>& done, std::vector<Edit>& out) {
    auto tp = split_top_level(to.params), fp = split_top_level(from.params);
    if (tp.size() != fp.size()) return;
    std::string fn = callback_at(d, ctx, done);
    if (fn.empty()) return;
    Edit e = callback_edit(fn);
    e.title = fmt::format("callback takes ({})", to.params);
    e.description = fmt::format("The kernel now expects '{}' where {}() is '{}': its parameters are retyped to match.",
                                d.symbols[0], fn, d.symbols[1]);
    for (const auto& rel : util::list_files(ctx.tree)) {
      auto ext = rel.extension().string();
      if (ext != ".c" && ext != ".h") continue;
      auto t = util::read_file(ctx.tree / rel);
      if (!t || t->find(fn) == std::string::npos) continue;
      for (auto& te : retype_params(rel.string(), *t, fn, tp, fp)) e.text_edits.push_back(std::move(te));
    }
    if (e.text_edits.empty()) return;
    e.symbols = {fn, d.symbols[0]};
    e.support = 1;
    out.push_back(std::move(e));
  }
};

} // namespace

std::unique_ptr<Proposer> make_callback_signature() { return std::make_unique<CallbackSignature>(); }

} // namespace autodriver::propose
