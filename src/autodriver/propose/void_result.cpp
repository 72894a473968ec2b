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

class VoidResult final : public Proposer {
public:
  std::string_view id() const override { return "void-result"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.new_src.empty() || !ctx.to || ctx.old_src.empty() || !ctx.from) return out;
    std::optional<TargetIndex> target, old;
    std::map<std::string, Edit> by_callee;                           // one edit per function, all its uses
    std::map<std::string, std::map<std::string, std::string>> texts; // callee -> file -> new text
    std::set<std::pair<std::string, int>> seen;
    for (const auto& d : diags) {
      if (d.severity != core::Severity::error || d.message != "void value not ignored as it ought to be") continue;
      if (d.file.empty() || d.file.front() == '/' || d.line <= 0 || !seen.insert({d.file, d.line}).second) continue;
      auto text = util::read_file(ctx.tree / d.file);
      if (!text) continue;
      auto toks = tokenize(*text);
      auto st = statement_at(toks, d.line);
      if (!st) continue;
      auto [first, last] = *st;
      // `lhs = f(args);` or `return f(args);`, the call ending the statement.
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
        if (eq >= last || eq == first) continue;
        // An assignment to an lvalue, not a declaration (`int rv = f(x);`: two words before '=').
        bool declaration = eq - first >= 2 && toks[eq - 1].kind == TokKind::ident && toks[eq - 2].kind == TokKind::ident;
        if (declaration) continue;
        lhs = text->substr(toks[first].begin, toks[eq - 1].end - toks[first].begin);
        call = eq + 1;
      }
      if (call + 2 > last || toks[call].kind != TokKind::ident || toks[call + 1].text != "(" ||
          matching_close(toks, call + 1) != last - 1)
        continue;
      const std::string callee = toks[call].text;
      if (!target) target.emplace(ctx.new_src, ctx.to->build_dir);
      if (!old) old.emplace(ctx.old_src, ctx.from->build_dir);
      auto now = target->prototype(callee, &d);
      auto before = old->prototype(callee, nullptr);
      if (!now || now->is_macro || util::trim(now->ret) != "void" || !before || before->is_macro ||
          util::trim(before->ret) == "void") {
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
      std::string call_text = text->substr(toks[call].begin, toks[last].end - toks[call].begin);
      std::string replacement = indent + call_text + "\n" + indent + (lhs.empty() ? "return 0;" : lhs + " = 0;") + "\n";
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
        e.description =
            fmt::format("The target declares {}() void (the old kernel: '{}'): it cannot fail any more. Each use of its value "
                        "becomes the call followed by the success value it now always has, 0.",
                        callee, std::string(util::trim(before->ret)));
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
