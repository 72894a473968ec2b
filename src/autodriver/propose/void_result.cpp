// Proposer "void-result": a function the kernel made void (ipmi_destroy_user(), 6.14: it cannot
// fail any more) whose value the driver still uses. gcc: "void value not ignored as it ought to
// be" on `rv = f(x);` or `return f(x);`. The call stays a statement of its own and the value it
// stood for becomes 0, the success the function now always has:
//     rv = f(x);        ->   f(x);            return f(x);   ->   f(x);
//                            rv = 0;                              return 0;
// Only when the target declares f() void and the old kernel declared it with a value (a change
// of the API, learned from the two trees' headers), and only for statements that occupy whole
// lines; other uses (`if (f(x))`, an initializer) are left to other proposers.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

/// The statement covering line `line`: token range [first, last] ending in ';', starting after
/// the previous ';', '{' or '}'. Nullopt when none ends on a later token.
std::optional<std::pair<std::size_t, std::size_t>> statement_at(const std::vector<Token>& toks, int line) {
  std::size_t at = 0;
  while (at < toks.size() && toks[at].line < line) ++at;
  if (at >= toks.size() || toks[at].line != line) return std::nullopt;
  std::size_t first = at;
  while (first > 0 && toks[first - 1].text != ";" && toks[first - 1].text != "{" && toks[first - 1].text != "}" &&
         toks[first - 1].kind != TokKind::pp_line)
    --first;
  std::size_t last = at;
  int depth = 0;
  for (; last < toks.size(); ++last) {
    const std::string& t = toks[last].text;
    if (t == "(" || t == "[") ++depth;
    if (t == ")" || t == "]") --depth;
    if (t == "{" || t == "}") return std::nullopt;
    if (depth == 0 && t == ";") break;
  }
  if (last >= toks.size()) return std::nullopt;
  // The body of an unbraced `if (...)`, `else` or loop (or a control statement itself): a second
  // statement would fall outside it.
  static const std::set<std::string> k_control = {"if", "else", "for", "while", "do", "switch", "case", "default"};
  if (k_control.count(toks[first].text)) return std::nullopt;
  return std::make_pair(first, last);
}

/// `if (T) S` on `line` where T tests the result of the call `callee(...)` for failure (`!f(x)`,
/// `f(x) == NULL`, `IS_ERR(f(x))`, `IS_ERR_OR_NULL(f(x))`, also inside unlikely()) and S, with no
/// `else`, handles a failure (it returns an error, jumps to a label or prints an error or warning):
/// the `if` token, the call's first and last tokens, and the last token of S.
struct FailureTest {
  std::size_t if_tok, call_first, call_last, body_last;
};
std::optional<FailureTest> failure_test_at(const std::vector<Token>& toks, int line) {
  for (std::size_t i = 0; i + 3 < toks.size(); ++i) {
    if (toks[i].line != line || toks[i].text != "if" || toks[i + 1].text != "(") continue;
    const std::size_t close = matching_close(toks, i + 1);
    if (close == std::string::npos || close + 1 >= toks.size()) return std::nullopt;
    std::size_t a = i + 2, b = close - 1; // the condition
    auto strip = [&](const char* name) {
      if (b > a + 2 && toks[a].text == name && toks[a + 1].text == "(" && matching_close(toks, a + 1) == b) a += 2, --b;
    };
    strip("unlikely");
    if (toks[a].text == "!") ++a;
    else if (b > a + 2 && toks[b].text == "NULL" && toks[b - 1].text == "==") b -= 2;
    else if (toks[a].text == "IS_ERR" || toks[a].text == "IS_ERR_OR_NULL") strip(toks[a].text.c_str());
    else return std::nullopt;
    if (toks[a].kind != TokKind::ident || a + 1 > b || toks[a + 1].text != "(" || matching_close(toks, a + 1) != b)
      return std::nullopt;
    // The branch: a block or one statement, and no else after it.
    std::size_t last = close + 1;
    if (toks[last].text == "{") last = matching_close(toks, last);
    else
      while (last < toks.size() && toks[last].text != ";") ++last;
    if (last == std::string::npos || last >= toks.size() || (last + 1 < toks.size() && toks[last + 1].text == "else"))
      return std::nullopt;
    bool fails = false;
    for (std::size_t k = close + 1; k <= last && !fails; ++k) {
      const std::string& t = toks[k].text;
      fails = t == "goto" || (t == "return" && k + 1 <= last && toks[k + 1].text == "-") ||
              (toks[k].kind == TokKind::ident && k + 1 <= last && toks[k + 1].text == "(" &&
               (t.find("err") != std::string::npos || t.find("warn") != std::string::npos));
    }
    if (!fails) return std::nullopt;
    return FailureTest{i, a, b, last};
  }
  return std::nullopt;
}

/// A use of a call's value on `line`: `lhs = f(args);`, `return f(args);` (the call ends the
/// statement), or a failure test of it (failure_test_at) that the call alone replaces.
struct ValueUse {
  std::size_t first, last; ///< the statement's tokens (the `if` through its branch)
  std::size_t call, call_close;
  std::string lhs;
  bool failure_test = false;
};
std::optional<ValueUse> value_use_at(const std::vector<Token>& toks, const std::string& text, int line) {
  if (auto ft = failure_test_at(toks, line)) return ValueUse{ft->if_tok, ft->body_last, ft->call_first, ft->call_last, "", true};
  auto st = statement_at(toks, line);
  if (!st) return std::nullopt;
  auto [first, last] = *st;
  std::size_t call = first;
  std::string lhs;
  if (toks[first].text == "return") {
    call = first + 1;
  } else {
    std::size_t eq = first;
    int depth = 0;
    for (; eq < last; ++eq) {
      const std::string& t = toks[eq].text;
      if (t == "(" || t == "[") ++depth;
      if (t == ")" || t == "]") --depth;
      if (depth == 0 && t == "=") break;
    }
    if (eq >= last || eq == first) return std::nullopt;
    // An assignment to an lvalue, not a declaration (`int rv = f(x);`: two words before '=').
    if (eq - first >= 2 && toks[eq - 1].kind == TokKind::ident && toks[eq - 2].kind == TokKind::ident) return std::nullopt;
    lhs = text.substr(toks[first].begin, toks[eq - 1].end - toks[first].begin);
    call = eq + 1;
  }
  if (call + 2 > last || toks[call].kind != TokKind::ident || toks[call + 1].text != "(" ||
      matching_close(toks, call + 1) != last - 1)
    return std::nullopt;
  return ValueUse{first, last, call, last - 1, lhs, false};
}

class VoidResult final : public Proposer {
public:
  std::string_view id() const override { return "void-result"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.new_src.empty() || !ctx.to) return out;
    const bool with_old = !ctx.old_src.empty() && ctx.from;
    std::optional<TargetIndex> target, old;
    std::map<std::string, Edit> by_callee;                           // one edit per function, all its uses
    std::map<std::string, std::map<std::string, std::string>> texts; // callee -> file -> new text
    std::set<std::pair<std::string, int>> seen;
    for (const auto& d : diags) {
      if (d.severity != core::Severity::error ||
          (d.message != "void value not ignored as it ought to be" && d.message != "invalid use of void expression"))
        continue;
      if (d.file.empty() || d.file.front() == '/' || d.line <= 0 || !seen.insert({d.file, d.line}).second) continue;
      auto text = util::read_file(ctx.tree / d.file);
      if (!text) continue;
      auto toks = tokenize(*text);
      auto use = value_use_at(toks, *text, d.line);
      if (!use) continue;
      const std::size_t first = use->first, last = use->last, call = use->call;
      const std::string& lhs = use->lhs;
      const std::string callee = toks[call].text;
      if (!target) target.emplace(ctx.new_src, ctx.to->build_dir);
      if (!old && with_old) old.emplace(ctx.old_src, ctx.from->build_dir);
      auto now = target->prototype(callee, &d);
      // Without an older kernel, the driver's own use of the value is the evidence that it had one.
      auto before = old ? old->prototype(callee, nullptr) : std::nullopt;
      if (!now || now->is_macro || util::trim(now->ret) != "void" ||
          (old && (!before || before->is_macro || util::trim(before->ret) == "void"))) {
        util::log_debug("void-result: {}() is not a function the target made void", callee);
        continue;
      }
      // Whole lines: nothing else before the statement on its first line or after it on its last.
      std::size_t ls = text->rfind('\n', toks[first].begin);
      ls = ls == std::string::npos ? 0 : ls + 1;
      std::size_t le = text->find('\n', toks[last].end);
      if (le == std::string::npos) le = text->size();
      if (text->find_first_not_of(" \t", ls) != toks[first].begin || text->find_first_not_of(" \t", toks[last].end) != le)
        continue;
      std::string indent = text->substr(ls, toks[first].begin - ls);
      std::string call_text = text->substr(toks[call].begin, toks[use->call_close].end - toks[call].begin) + ";";
      std::string replacement = use->failure_test
                                    ? indent + call_text + "\n"
                                    : indent + call_text + "\n" + indent + (lhs.empty() ? "return 0;" : lhs + " = 0;") + "\n";
      auto& files = texts[callee];
      if (!files.count(d.file)) files[d.file] = *text;
      // Applied to the text as already rewritten for this callee: find the same statement there.
      std::string& cur = files[d.file];
      std::string old_stmt = text->substr(ls, le - ls) + "\n";
      auto pos = cur.find(old_stmt);
      if (pos == std::string::npos) continue;
      cur.replace(pos, old_stmt.size(), replacement);
      auto [it, fresh] = by_callee.try_emplace(callee);
      Edit& e = it->second;
      if (fresh) {
        e.proposer = "void-result";
        e.change_id = "void-result:" + callee;
        e.label = "return-type-changed";
        e.title = fmt::format("{}() returns void", callee);
        e.description = fmt::format(
            "The target declares {}() void ({}): it cannot fail any more. Each use of its value becomes the call followed by "
            "the success value it now always has, 0; a test of it for failure becomes the call alone.",
            callee,
            before ? fmt::format("the old kernel: '{}'", std::string(util::trim(before->ret))) : "the driver uses its value");
        e.symbols = {callee};
        e.support = 1;
      }
    }
    for (auto& [callee, e] : by_callee) {
      for (const auto& [file, t] : texts[callee]) {
        auto orig = util::read_file(ctx.tree / file);
        if (!orig) continue;
        if (auto te = changed_lines_edit(file, *orig, t)) e.text_edits.push_back(std::move(*te));
      }
      if (!e.text_edits.empty()) out.push_back(std::move(e));
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_void_result() { return std::make_unique<VoidResult>(); }

} // namespace autodriver::propose
