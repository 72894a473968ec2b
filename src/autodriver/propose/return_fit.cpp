// Proposer "return-fit": a function declared void whose body still returns values. gcc: "'return'
// with a value, in function returning void". It happens when a signature changed to void (a
// callback the kernel made void: platform_driver.remove in 6.11) but its consequences inside the
// body were not followed: the prototype sits in one `#if LINUX_VERSION_CODE` branch and the
// `return 0;` in another, or a port retyped the declaration only. The function stays void (its
// type is what the kernel and the driver's declaration agree on); each return keeps the side
// effects of its value and returns nothing:
//     return 0;            (last statement)  ->   (line removed)
//     return f(x);         (last statement)  ->   f(x);
//     return -EINVAL;                        ->   return;
//     return f(x);                           ->   f(x);  return;   ({ f(x); return; } in place
//                                                                   where a statement must stay one)
// Nothing here names an API: the edit follows from the function's own declared type.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

constexpr std::string_view k_message = "'return' with a value, in function returning void";

/// The value has an effect beyond its result: a call, an assignment, an increment.
bool has_side_effects(const std::vector<Token>& toks, std::size_t first, std::size_t last) {
  static const std::set<std::string> k_assign = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"};
  for (std::size_t i = first; i <= last && i < toks.size(); ++i) {
    if (k_assign.count(toks[i].text)) return true;
    if (toks[i].text == "(" && i > first && (toks[i - 1].kind == TokKind::ident || toks[i - 1].text == ")")) return true;
  }
  return false;
}

/// One return statement to rewrite: bytes [begin, end) of the file and what replaces them.
struct Rewrite {
  std::size_t begin = 0, end = 0;
  std::string text;
};

/// The rewrite of the `return` at token `r` (its ';' at `semi`) in function `fn`.
std::optional<Rewrite> rewrite_return(const std::string& text, const std::vector<Token>& toks, const Unit& fn, std::size_t r,
                                      std::size_t semi) {
  const bool valued = semi > r + 1;
  if (!valued) return std::nullopt;
  const std::string value = text.substr(toks[r + 1].begin, toks[semi - 1].end - toks[r + 1].begin);
  const bool effects = has_side_effects(toks, r + 1, semi - 1);
  // Whole line: only blanks before the return on its line and after the ';'.
  std::size_t ls = text.rfind('\n', toks[r].begin);
  ls = ls == std::string::npos ? 0 : ls + 1;
  std::size_t le = text.find('\n', toks[semi].end);
  if (le == std::string::npos) le = text.size();
  const bool whole_line =
      text.find_first_not_of(" \t", ls) == toks[r].begin && text.find_first_not_of(" \t", toks[semi].end) >= le;
  // The body of an unbraced `if (...)`, `else` or loop: it must stay one statement.
  const std::string& prev = toks[r - 1].text;
  const bool unbraced = prev == ")" || prev == "else" || prev == "do";
  // The function's last statement, directly in its body.
  auto stmts = block_statements(toks, fn.body);
  const bool last = !stmts.empty() && stmts.back().first == r && stmts.back().second == semi;
  const std::string indent = text.substr(ls, toks[r].begin - ls);
  if (whole_line && !unbraced) {
    std::size_t end = le < text.size() ? le + 1 : le;
    if (last) return Rewrite{ls, end, effects ? indent + value + ";\n" : std::string()};
    return Rewrite{ls, end, effects ? indent + value + ";\n" + indent + "return;\n" : indent + "return;\n"};
  }
  return Rewrite{toks[r].begin, toks[semi].end, effects ? "{ " + value + "; return; }" : std::string("return;")};
}

class ReturnFit final : public Proposer {
public:
  std::string_view id() const override { return "return-fit"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::map<std::string, std::set<int>> wanted; // file -> lines gcc named
    for (const auto& d : diags)
      if (d.severity == core::Severity::error && d.message == k_message && !d.file.empty() && d.file.front() != '/' && d.line > 0)
        wanted[d.file].insert(d.line);
    std::vector<Edit> out;
    for (const auto& [file, lines] : wanted) {
      auto text = util::read_file(ctx.tree / file);
      if (!text) continue;
      auto toks = tokenize(*text);
      auto units = find_units(toks);
      std::map<std::string, std::vector<Rewrite>> rewrites; // function -> its rewrites
      for (int line : lines) {
        auto r = std::find_if(toks.begin(), toks.end(), [&](const Token& t) { return t.line == line && t.text == "return"; });
        if (r == toks.end() || r == toks.begin()) continue;
        const std::size_t ri = static_cast<std::size_t>(r - toks.begin());
        auto fn = std::find_if(units.begin(), units.end(),
                               [&](const Unit& u) { return u.kind == UnitKind::function && u.body < ri && ri < u.last; });
        if (fn == units.end()) continue;
        // gcc's message says the function returns void: its type as compiled. The unit's own type
        // text may be another branch's (`#if ... static int f(...) #else static void f(...)`).
        std::size_t semi = ri + 1;
        for (int depth = 0; semi < fn->last; ++semi) {
          const std::string& t = toks[semi].text;
          if (t == "(" || t == "[" || t == "{") ++depth;
          if (t == ")" || t == "]" || t == "}") --depth;
          if (depth == 0 && t == ";") break;
        }
        if (semi >= fn->last) continue;
        if (auto rw = rewrite_return(*text, toks, *fn, ri, semi)) rewrites[fn->name].push_back(std::move(*rw));
      }
      for (auto& [fn, rws] : rewrites) {
        std::sort(rws.begin(), rws.end(), [](const Rewrite& a, const Rewrite& b) { return a.begin > b.begin; });
        std::string now = *text;
        for (const auto& rw : rws) now.replace(rw.begin, rw.end - rw.begin, rw.text);
        auto te = changed_lines_edit(file, *text, now);
        if (!te) continue;
        Edit e;
        e.proposer = "return-fit";
        e.change_id = "return-fit:" + file + ":" + fn;
        e.label = "return-type-changed";
        e.title = fmt::format("{}() returns void: its returns lose their values", fn);
        e.description = fmt::format(
            "{}() is declared void (its callback type or prototype says so) but {} return statement(s) still return a "
            "value. Each keeps what its value did (a call stays) and returns nothing; a final `return <constant>;` goes.",
            fn, rws.size());
        e.symbols = {fn};
        e.support = 1;
        e.text_edits.push_back(std::move(*te));
        out.push_back(std::move(e));
      }
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_return_fit() { return std::make_unique<ReturnFit>(); }

} // namespace autodriver::propose
