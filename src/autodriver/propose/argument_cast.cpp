// Proposer "argument-cast": the driver casts an argument to the type a kernel function's
// parameter had, and the parameter's type changed. gcc: "passing argument 2 of 'kernel_bind'
// from incompatible pointer type", noting "expected 'struct sockaddr_unsized *' but argument is
// of type 'struct sockaddr *'" where the argument is `(struct sockaddr *)&addr`. The cast was
// there to meet the parameter's type; it follows it (7.x's sockaddr_unsized is the kernel's own
// change of exactly this kind: its callers' casts changed with it). Only an explicit cast to the
// old type is rewritten, never an uncast argument. Likewise an array of the driver's that a
// member now wants with more const (attribute_group.bin_attrs) gains the qualifiers.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

class ArgumentCast final : public Proposer {
public:
  std::string_view id() const override { return "argument-cast"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    static const std::regex k_msg(R"(^passing argument (\d+) of '([A-Za-z_]\w*)' from incompatible pointer type)");
    static const std::regex k_note(R"(^expected '([^']+)'(?: \{aka '[^']+'\})? but argument is of type '([^']+)')");
    std::map<std::string, Edit> by_change;                           // callee|argument -> one edit for all its casts
    std::map<std::string, std::map<std::string, std::string>> texts; // change -> file -> new text
    for (const auto& d : diags) {
      std::smatch m, n;
      if (d.kind != core::DiagKind::incompatible_pointer_type || d.file.empty() || d.file.front() == '/' ||
          !std::regex_search(d.message, m, k_msg))
        continue;
      std::string want, have;
      for (const auto& note : d.notes)
        if (std::regex_search(note.message, n, k_note)) want = n[1].str(), have = n[2].str();
      // Object pointers only: a function pointer's type is the callback proposer's business.
      if (want.empty() || want.find("(*)") != std::string::npos || have.find("(*)") != std::string::npos || want.back() != '*' ||
          have.back() != '*')
        continue;
      const std::size_t argn = std::stoul(m[1].str());
      const std::string callee = m[2].str();
      const std::string change = callee + "|" + m[1].str();
      auto& files = texts[change];
      if (!files.count(d.file)) {
        auto t = util::read_file(ctx.tree / d.file);
        if (!t) continue;
        files[d.file] = *t;
      }
      std::string& text = files[d.file];
      auto toks = tokenize(text);
      if (toks.empty()) continue;
      bool done = false;
      for (const auto& c : find_calls(toks, 0, toks.size() - 1)) {
        if (done || c.callee != callee || toks[c.name_tok].line > d.line || toks[c.close_tok].line < d.line || argn == 0 ||
            c.arg_toks.size() < argn)
          continue;
        auto [first, last] = c.arg_toks[argn - 1];
        // `( TYPE ) operand`: the cast's closing parenthesis is followed by the operand.
        if (toks[first].text != "(") continue;
        std::size_t close = matching_close(toks, first);
        if (close == std::string::npos || close >= last || close == first + 1) continue;
        if (type_key(toks, first + 1, close - 1) != type_key(have)) continue;
        std::string cast_type = text.substr(toks[first + 1].begin, toks[close - 1].end - toks[first + 1].begin);
        // `struct sockaddr *` as the driver wrote it, with the new tag and pointer depth.
        text.replace(toks[first + 1].begin, toks[close - 1].end - toks[first + 1].begin, want);
        auto [it, fresh] = by_change.try_emplace(change);
        Edit& e = it->second;
        if (fresh) {
          e.proposer = "argument-cast";
          e.change_id = "cast:" + callee + ":" + m[1].str();
          e.label = "arguments-changed";
          e.title = fmt::format("{}() takes '{}' as argument {}", callee, want, argn);
          e.description = fmt::format("The target's {}() takes '{}' where it took '{}'; the driver's cast to the old "
                                      "type ('({})') becomes a cast to the new one.",
                                      callee, want, have, cast_type);
          e.symbols = {callee};
          e.support = 1;
        }
        done = true;
      }
    }
    std::vector<Edit> out;
    m_seen.clear();
    for (const auto& d : diags) qualified_array(d, ctx, out);
    for (auto& [change, e] : by_change) {
      for (const auto& [file, t] : texts[change]) {
        auto orig = util::read_file(ctx.tree / file);
        if (!orig) continue;
        if (auto te = changed_lines_edit(file, *orig, t)) e.text_edits.push_back(std::move(*te));
      }
      if (!e.text_edits.empty()) out.push_back(std::move(e));
    }
    return out;
  }

private:
  /// "initialization of 'const struct bin_attribute * const*' from incompatible pointer type
  /// 'struct bin_attribute **'" where the value is the driver's own array: the kernel's member
  /// now points at const elements (6.15's attribute_group.bin_attrs), so the array's declaration
  /// takes the same qualifiers. Only qualifiers: the types must be the same without const.
  void qualified_array(const core::Diagnostic& d, const PortContext& ctx, std::vector<Edit>& out) {
    if (d.kind != core::DiagKind::incompatible_pointer_type || d.symbols.size() < 2 || d.file.empty() || d.file.front() == '/' ||
        d.line <= 0)
      return;
    const std::string& want = d.symbols[0];
    const std::string& have = d.symbols[1];
    if (want.find("(*)") != std::string::npos || want.back() != '*' || type_key(want) != type_key(have) || want == have) return;
    std::string elem(util::trim(std::string_view(want).substr(0, want.size() - 1)));
    // "* const" as the kernel writes it: "*const".
    for (auto p = elem.find("* const"); p != std::string::npos; p = elem.find("* const")) elem.replace(p, 7, "*const");
    auto line = diagnostic_line(ctx.tree, d);
    if (!line) return;
    static const std::regex k_value(R"(=\s*&?\s*([A-Za-z_]\w*)\s*,?\s*$)");
    std::smatch m;
    if (!std::regex_search(*line, m, k_value)) return;
    const std::string name = m[1].str();
    if (!m_seen.insert(name).second) return;
    for (const auto& [rel, t] : sources_mentioning(ctx.tree, name)) {
      auto toks = tokenize(t);
      for (std::size_t i = 1; i + 2 < toks.size(); ++i) {
        // `[static] TYPE NAME [ ] =` at file scope, the declaration on one line.
        if (toks[i].text != name || toks[i + 1].text != "[" || toks[i + 2].text != "]") continue;
        std::size_t first = i;
        while (first > 0 && toks[first - 1].line == toks[i].line && toks[first - 1].text != ";" && toks[first - 1].text != "}" &&
               toks[first - 1].text != "{")
          --first;
        std::string storage;
        std::size_t type_first = first;
        while (type_first < i && (toks[type_first].text == "static" || toks[type_first].text == "extern"))
          storage += toks[type_first++].text + " ";
        if (type_first >= i || type_key(toks, type_first, i - 1) + "*" != type_key(want)) continue;
        std::size_t ls = t.rfind('\n', toks[first].begin);
        ls = ls == std::string::npos ? 0 : ls + 1;
        std::size_t le = t.find('\n', toks[i].end);
        if (le == std::string::npos) le = t.size();
        std::string text = t.substr(ls, toks[first].begin - ls) + storage + elem + (elem.back() == '*' ? "" : " ") +
                           t.substr(toks[i].begin, le - toks[i].begin) + "\n";
        Edit e;
        e.proposer = "argument-cast";
        e.change_id = "qualifiers:" + name;
        e.label = "other";
        e.title = fmt::format("{}[] holds '{}' elements", name, elem);
        e.description = fmt::format("The kernel now takes '{}' where the driver passes its array {} of '{}': the "
                                    "array's declaration gains the qualifiers.",
                                    want, name, have);
        e.text_edits.push_back({rel, toks[first].line, 1, text});
        e.symbols = {name};
        e.support = 1;
        out.push_back(std::move(e));
        return;
      }
    }
  }

  std::set<std::string> m_seen;
};

} // namespace

std::unique_ptr<Proposer> make_argument_cast() { return std::make_unique<ArgumentCast>(); }

} // namespace autodriver::propose
