#include "autodriver/propose/shared/stmt_template.hpp"

#include "autodriver/propose/shared/target_decls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace autodriver::propose {

namespace {

const std::set<std::string>& control_words() {
  static const std::set<std::string> k = {"if",      "else", "while", "for",      "do", "switch", "case",
                                          "default", "goto", "break", "continue", "{",  "}"};
  return k;
}

bool is_assign_op(const std::string& t) {
  static const std::set<std::string> k = {"=", "|=", "&=", "+=", "-=", "^=", "*=", "/=", "<<=", ">>=", "%="};
  return k.count(t) > 0;
}

bool word_like(const std::string& t) {
  return !t.empty() && (std::isalnum(static_cast<unsigned char>(t[0])) || t[0] == '_' || t[0] == '"' || t[0] == '\'');
}

/// Index of the bracket matching the one at `i` in a plain token-text vector, or npos.
std::size_t match_forward(const std::vector<std::string>& t, std::size_t i) {
  int d = 0;
  for (std::size_t k = i; k < t.size(); ++k) {
    if (t[k] == "(" || t[k] == "[") ++d;
    if ((t[k] == ")" || t[k] == "]") && --d == 0) return k;
  }
  return std::string::npos;
}

/// Whether t[a..b] is balanced.
bool balanced(const std::vector<std::string>& t, std::size_t a, std::size_t b) {
  int d = 0;
  for (std::size_t k = a; k <= b; ++k) {
    if (t[k] == "(" || t[k] == "[") ++d;
    if (t[k] == ")" || t[k] == "]") --d;
    if (d < 0) return false;
  }
  return d == 0;
}

/// Candidate sub-expression spans of a statement, longest first.
std::vector<std::pair<std::size_t, std::size_t>> candidate_spans(const std::vector<std::string>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t n = t.size();
  // Sides of top-level assignments and return values.
  int depth = 0;
  std::size_t stmt_start = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (t[k] == "(" || t[k] == "[") ++depth;
    if (t[k] == ")" || t[k] == "]") --depth;
    if (depth != 0) continue;
    if (t[k] == ";") {
      stmt_start = k + 1;
      continue;
    }
    if (t[k] == "return" && k + 1 < n) {
      std::size_t e = k + 1;
      while (e < n && t[e] != ";") ++e;
      if (e > k + 1) out.push_back({k + 1, e - 1});
    }
    if (is_assign_op(t[k])) {
      if (k > stmt_start) out.push_back({stmt_start, k - 1});
      std::size_t e = k + 1;
      int d = 0;
      while (e < n && !(d == 0 && t[e] == ";")) {
        if (t[e] == "(" || t[e] == "[") ++d;
        if (t[e] == ")" || t[e] == "]") --d;
        ++e;
      }
      if (e > k + 1) out.push_back({k + 1, e - 1});
    }
  }
  // Call arguments.
  for (std::size_t k = 0; k + 1 < n; ++k) {
    if (t[k + 1] != "(" || !word_like(t[k])) continue;
    std::size_t close = match_forward(t, k + 1);
    if (close == std::string::npos) continue;
    std::size_t a = k + 2;
    int d = 0;
    for (std::size_t q = k + 2; q <= close; ++q) {
      if (q < close && (t[q] == "(" || t[q] == "[")) ++d;
      if (q < close && (t[q] == ")" || t[q] == "]")) --d;
      if (q == close || (d == 0 && t[q] == ",")) {
        if (q > a) out.push_back({a, q - 1});
        a = q + 1;
      }
    }
  }
  // Postfix chains: x, x->y, x.y, x[i], f(a), and every prefix of them; "&x->y" with its '&'.
  for (std::size_t k = 0; k < n; ++k) {
    if (!word_like(t[k]) || (k > 0 && (t[k - 1] == "->" || t[k - 1] == "."))) continue;
    std::size_t e = k;
    out.push_back({k, e});
    while (e + 1 < n) {
      if ((t[e + 1] == "->" || t[e + 1] == ".") && e + 2 < n && word_like(t[e + 2])) e += 2;
      else if (t[e + 1] == "(" || t[e + 1] == "[") {
        std::size_t c = match_forward(t, e + 1);
        if (c == std::string::npos) break;
        e = c;
      } else break;
      out.push_back({k, e});
      if (k > 0 && t[k - 1] == "&") out.push_back({k - 1, e});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second - a.first > b.second - b.first; });
  return out;
}

/// Positions where `needle` occurs in `hay` as a whole token sequence.
std::vector<std::size_t> occurrences(const std::vector<std::string>& hay, const std::vector<std::string>& needle) {
  std::vector<std::size_t> out;
  if (needle.empty() || needle.size() > hay.size()) return out;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (std::equal(needle.begin(), needle.end(), hay.begin() + static_cast<long>(i))) out.push_back(i);
  return out;
}

} // namespace

std::string StmtTemplate::key() const {
  std::string k;
  for (const auto& t : before) k += t + " ";
  k += "=>";
  for (const auto& t : after) k += " " + t;
  return k;
}

std::optional<std::pair<std::size_t, std::size_t>> enclosing_statements(const std::vector<Token>& toks, std::size_t first,
                                                                        std::size_t last, std::size_t lo, std::size_t hi) {
  // Backwards to a statement boundary, skipping parenthesised groups that are not control headers.
  std::size_t a = first;
  while (a > lo) {
    const std::string& p = toks[a - 1].text;
    if (p == ";" || p == "{" || p == "}" || p == "else") break;
    if (p == ")") {
      int d = 0;
      std::size_t k = a - 1;
      for (; k > lo; --k) {
        if (toks[k].text == ")") ++d;
        if (toks[k].text == "(" && --d == 0) break;
      }
      if (k > lo &&
          (toks[k - 1].text == "if" || toks[k - 1].text == "while" || toks[k - 1].text == "for" || toks[k - 1].text == "switch"))
        break;
      a = k;
      continue;
    }
    --a;
  }
  // Forwards to the ';' closing the statement at depth 0.
  std::size_t b = std::max(first, last);
  int d = 0;
  for (std::size_t k = a; k <= hi; ++k) {
    const std::string& t = toks[k].text;
    if (t == "(" || t == "[") ++d;
    if (t == ")" || t == "]") --d;
    if (t == "{" || t == "}") return std::nullopt;
    if (k >= b && d == 0 && t == ";") {
      b = k;
      if (b - a > 80) return std::nullopt;
      return std::make_pair(a, b);
    }
  }
  return std::nullopt;
}

std::optional<StmtTemplate> anti_unify(const std::vector<std::string>& before, const std::vector<std::string>& after,
                                       const std::string& api) {
  for (const auto* side : {&before, &after})
    for (const auto& t : *side)
      if (control_words().count(t)) return std::nullopt;
  if (before.empty()) return std::nullopt;
  std::vector<int> hole_of(before.size(), -1);
  std::vector<bool> hole_start(before.size(), false);
  std::map<std::string, int> hole_ids;
  std::vector<std::vector<std::string>> hole_text;
  for (auto [a, b] : candidate_spans(before)) {
    if (!balanced(before, a, b)) continue;
    bool free = true, has_api = false, has_word = false;
    for (std::size_t k = a; k <= b; ++k) {
      if (hole_of[k] >= 0) free = false;
      if (before[k] == "return") free = false; // a keyword is no expression
      if (before[k] == api) has_api = true;
      if (word_like(before[k])) has_word = true;
    }
    if (!free || has_api || !has_word) continue;
    // A deleted call keeps its constant arguments: "f(x, NULL)" being dropped says nothing about
    // "f(x, page)".
    if (after.empty() && a == b &&
        (before[a] == "NULL" || before[a] == "true" || before[a] == "false" ||
         std::isdigit(static_cast<unsigned char>(before[a][0]))))
      continue;
    std::vector<std::string> text(before.begin() + static_cast<long>(a), before.begin() + static_cast<long>(b) + 1);
    // A deleted statement keeps its operands as holes; otherwise a hole is what both sides share.
    if (!after.empty() && occurrences(after, text).empty()) continue;
    std::string key;
    for (const auto& t : text) key += t + " ";
    auto [it, fresh] = hole_ids.emplace(key, static_cast<int>(hole_text.size()));
    if (fresh) hole_text.push_back(text);
    for (std::size_t k = a; k <= b; ++k) hole_of[k] = it->second;
    hole_start[a] = true;
  }
  if (hole_text.empty()) return std::nullopt;
  StmtTemplate t;
  t.holes = static_cast<int>(hole_text.size());
  for (std::size_t k = 0; k < before.size(); ++k) {
    if (hole_of[k] < 0) t.before.push_back(before[k]);
    else if (hole_start[k]) t.before.push_back("$" + std::to_string(hole_of[k]));
  }
  // The new side: occurrences of each hole's text, longest holes first.
  std::vector<int> new_hole(after.size(), -1);
  std::vector<bool> starts(after.size(), false);
  std::vector<int> order(hole_text.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return hole_text[x].size() > hole_text[y].size(); });
  for (int h : order)
    for (auto pos : occurrences(after, hole_text[h])) {
      bool free = true;
      for (std::size_t k = pos; k < pos + hole_text[h].size(); ++k)
        if (new_hole[k] >= 0) free = false;
      if (!free) continue;
      for (std::size_t k = pos; k < pos + hole_text[h].size(); ++k) new_hole[k] = h;
      starts[pos] = true;
    }
  for (std::size_t k = 0; k < after.size(); ++k) {
    if (new_hole[k] < 0) t.after.push_back(after[k]);
    else if (starts[k]) t.after.push_back("$" + std::to_string(new_hole[k]));
  }
  if (t.before == t.after) return std::nullopt;
  // Two operands side by side (`$0 f(...)`, `x $0`) are no C: a hole swallowed a keyword or a
  // declaration's type.
  auto operand = [](const std::string& x) {
    return x[0] == '$' || word_like(x) || std::isdigit(static_cast<unsigned char>(x[0]));
  };
  for (const auto* side : {&t.before, &t.after})
    for (std::size_t k = 0; k + 1 < side->size(); ++k)
      if (((*side)[k][0] == '$' || (*side)[k + 1][0] == '$') && operand((*side)[k]) && operand((*side)[k + 1]))
        return std::nullopt;
  // `$0 :` outside a conditional expression is a label.
  for (const auto* side : {&t.before, &t.after})
    if (std::find(side->begin(), side->end(), "?") == side->end())
      for (std::size_t k = 0; k + 1 < side->size(); ++k)
        if ((*side)[k][0] == '$' && (*side)[k + 1] == ":") return std::nullopt;
  // Holes numbered by first appearance in the old form, so equal rewrites have equal keys.
  std::map<std::string, std::string> renumber;
  for (const auto& x : t.before)
    if (x[0] == '$' && !renumber.count(x)) renumber[x] = "$" + std::to_string(renumber.size());
  for (auto* side : {&t.before, &t.after})
    for (auto& x : *side)
      if (x[0] == '$') x = renumber[x];
  return t;
}

std::optional<StmtTemplate> narrow_to_expression(const StmtTemplate& t, const std::string& api) {
  std::size_t pre = 0;
  while (pre < t.before.size() && pre < t.after.size() && t.before[pre] == t.after[pre]) ++pre;
  std::size_t suf = 0;
  while (suf < t.before.size() - pre && suf < t.after.size() - pre &&
         t.before[t.before.size() - 1 - suf] == t.after[t.after.size() - 1 - suf])
    ++suf;
  if (pre == 0 && suf == 0) return std::nullopt;
  StmtTemplate e;
  e.expression = true;
  e.before.assign(t.before.begin() + static_cast<long>(pre), t.before.end() - static_cast<long>(suf));
  e.after.assign(t.after.begin() + static_cast<long>(pre), t.after.end() - static_cast<long>(suf));
  if (e.before.empty() || e.after.empty()) return std::nullopt;
  if (std::find(e.before.begin(), e.before.end(), api) == e.before.end()) return std::nullopt;
  for (const auto* side : {&e.before, &e.after}) {
    if (!balanced(*side, 0, side->size() - 1)) return std::nullopt;
    for (const auto& x : *side)
      if (x == ";" || x == "," || is_assign_op(x)) return std::nullopt;
  }
  // Every hole the new side uses must be bound by the old side.
  std::set<std::string> bound(e.before.begin(), e.before.end());
  for (const auto& x : e.after)
    if (x[0] == '$' && !bound.count(x)) return std::nullopt;
  for (const auto& x : e.before)
    if (x[0] == '$') e.holes = std::max(e.holes, std::stoi(x.substr(1)) + 1);
  return e;
}

std::string template_smpl(const StmtTemplate& t) {
  auto render = [](const std::vector<std::string>& side) {
    std::vector<std::string> toks;
    for (const auto& x : side) toks.push_back(x[0] == '$' ? "E" + x.substr(1) : x);
    // One line per statement.
    std::vector<std::string> lines;
    std::vector<std::string> cur;
    for (const auto& x : toks) {
      cur.push_back(x);
      if (x == ";") {
        lines.push_back(join_c_tokens(cur));
        cur.clear();
      }
    }
    if (!cur.empty()) lines.push_back(join_c_tokens(cur));
    return lines;
  };
  std::set<int> used;
  for (const auto& x : t.before)
    if (x[0] == '$') used.insert(std::stoi(x.substr(1)));
  std::string metas;
  for (int h : used) metas += (metas.empty() ? "" : ", ") + fmt::format("E{}", h);
  std::string out = "@@\n";
  if (!metas.empty()) out += "expression " + metas + ";\n";
  out += "@@\n";
  for (const auto& l : render(t.before)) out += "- " + l + "\n";
  for (const auto& l : render(t.after)) out += "+ " + l + "\n";
  return out;
}

std::string flag_variants_smpl(const StmtTemplate& t, const std::string& flag) {
  const auto& b = t.before;
  if (t.expression || t.after.empty() || b.size() != 6 || b[0] != "$0" || b[1] != "->" || b[3] != "|=" || b[4] != flag ||
      b[5] != ";")
    return {};
  StmtTemplate ored;
  ored.before = {"$0", "->", b[2], "|=", "$1", "|", flag, ";"};
  ored.after = {"$0", "->", b[2], "|=", "$1", ";"};
  ored.after.insert(ored.after.end(), t.after.begin(), t.after.end());
  ored.holes = 2;
  std::string out = template_smpl(ored);
  for (const auto& x : t.after)
    if (x[0] == '$' && x != "$0") return out;
  std::vector<std::string> after;
  for (const auto& x : t.after) after.push_back(x == "$0" ? "E0" : x);
  const std::string add = join_c_tokens(after);
  const std::string rule = "chain_" + flag;
  // Two rules: the first drops the flag from any OR chain of a function, the second (only in
  // functions the first changed) adds the replacement after the member's assignment.
  out += fmt::format("\n@{0}@\nidentifier fn;\nexpression E;\n@@\nfn(...) {{\n<...\n(\n- E | {1}\n+ E\n|\n- {1} | E\n"
                     "+ E\n)\n...>\n}}\n\n@depends on {0}@\nidentifier {0}.fn;\nexpression E0, X;\n@@\nfn(...) {{\n"
                     "<...\n(\nE0->{2} |= X;\n+ {3}\n|\nE0->{2} = X;\n+ {3}\n)\n...>\n}}\n",
                     rule, flag, b[2], add);
  return out;
}

} // namespace autodriver::propose
