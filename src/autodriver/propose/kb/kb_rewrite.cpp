#include "autodriver/propose/kb/kb_rewrite.hpp"

#include "autodriver/csrc/tokens.hpp"

#include <algorithm>
#include <regex>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

struct Repl {
  std::size_t begin = 0, end = 0;
  std::string text;
};

/// Token index ranges [first, last] of the arguments of the call whose '(' is at `open`.
std::vector<std::pair<std::size_t, std::size_t>> arg_ranges(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (close == open + 1) return out;
  int depth = 0;
  std::size_t start = open + 1;
  for (std::size_t i = open + 1; i <= close; ++i) {
    const auto& x = t[i].text;
    bool p = t[i].kind == TokKind::punct;
    if (p && (x == "(" || x == "[" || x == "{")) ++depth;
    else if (p && (x == ")" || x == "]" || x == "}") && i != close) --depth;
    if (i == close || (depth == 0 && p && x == ",")) {
      out.push_back({start, i - 1});
      start = i + 1;
    }
  }
  return out;
}

/// Tokens rendered the way kernel code spells them ("&x->dev", "f(a, b)"); `$N` is argument N.
std::string render(const std::vector<Token>& t, const std::vector<std::string>& args = {}) {
  std::string out;
  bool prev_operand = false; // previous token ends an operand (ident, number, literal, ')' or ']')
  bool glue_next = true;     // no space before the next token
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string x = t[i].text;
    bool operand = t[i].kind != TokKind::punct;
    if (x == "$" && i + 1 < t.size() && t[i + 1].kind == TokKind::number) {
      auto k = static_cast<std::size_t>(std::stoul(t[i + 1].text));
      x = k < args.size() ? args[k] : "";
      operand = true;
      ++i;
    }
    bool glue_before = x == ")" || x == "]" || x == "," || x == ";" || x == "." || x == "->" || x == "++" || x == "--" ||
                       ((x == "(" || x == "[") && prev_operand);
    if (!out.empty() && !glue_next && !glue_before) out += ' ';
    out += x;
    bool unary = !prev_operand && (x == "&" || x == "*" || x == "-" || x == "!" || x == "~");
    glue_next = x == "(" || x == "[" || x == "." || x == "->" || unary;
    prev_operand = operand || x == ")" || x == "]";
  }
  return out;
}

std::vector<std::vector<Token>> split_top_commas(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  std::vector<std::vector<Token>> out;
  if (first > last) return out;
  out.emplace_back();
  int depth = 0;
  for (std::size_t i = first; i <= last; ++i) {
    const auto& x = t[i].text;
    if (x == "(" || x == "[" || x == "{") ++depth;
    else if (x == ")" || x == "]" || x == "}") --depth;
    if (depth == 0 && x == ",") {
      out.emplace_back();
      continue;
    }
    out.back().push_back(t[i]);
  }
  return out;
}

bool after_member_op(const std::vector<Token>& t, std::size_t i) {
  return i > 0 && (t[i - 1].text == "." || t[i - 1].text == "->");
}

void calls(const std::string_view text, const std::vector<Token>& t, const KbChange& c, std::vector<Repl>& out) {
  auto ot = tokenize(c.old_form), nt = tokenize(c.new_form);
  if (ot.size() < 3 || nt.size() < 3 || ot[1].text != "(" || nt[1].text != "(") return;
  std::size_t arity = 0;
  for (const auto& x : ot)
    if (x.text == "$") ++arity;
  auto templates = split_top_commas(nt, 2, nt.size() - 2);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokKind::ident || t[i].text != ot[0].text || t[i + 1].text != "(" || after_member_op(t, i)) continue;
    auto close = matching_close(t, i + 1);
    if (close == std::string::npos) continue;
    auto ranges = arg_ranges(t, i + 1, close);
    if (ranges.size() != arity) continue;
    std::vector<std::string> args;
    for (auto [a, b] : ranges) args.push_back(a <= b ? std::string(text.substr(t[a].begin, t[b].end - t[a].begin)) : "");
    std::string r = nt[0].text + "(";
    for (std::size_t k = 0; k < templates.size(); ++k) r += (k ? ", " : "") + render(templates[k], args);
    r += ")";
    out.push_back({t[i].begin, t[close].end, r});
    i = close;
  }
}

void sequence(std::string_view text, const std::vector<Token>& t, const KbChange& c, std::vector<Repl>& out) {
  auto ot = tokenize(c.old_form);
  if (ot.empty()) return;
  std::string replacement = render(tokenize(c.new_form));
  for (std::size_t i = 0; i + ot.size() <= t.size(); ++i) {
    bool same = true;
    for (std::size_t k = 0; k < ot.size() && same; ++k) same = t[i + k].text == ot[k].text && t[i + k].kind != TokKind::pp_line;
    if (!same) continue;
    std::size_t b = t[i].begin, e = t[i + ot.size() - 1].end;
    if (replacement.empty()) {
      // Remove whole lines when nothing else is on them.
      std::size_t ls = text.rfind('\n', b == 0 ? 0 : b - 1);
      ls = (ls == std::string_view::npos || b == 0) ? 0 : ls + 1;
      std::size_t le = text.find('\n', e);
      auto blank = [](std::string_view s) { return s.find_first_not_of(" \t") == std::string_view::npos; };
      if (blank(text.substr(ls, b - ls)) && blank(text.substr(e, (le == std::string_view::npos ? text.size() : le) - e))) {
        b = ls;
        e = le == std::string_view::npos ? text.size() : le + 1;
      }
    }
    out.push_back({b, e, replacement});
    i += ot.size() - 1;
  }
}

void includes(const std::vector<Token>& t, const KbChange& c, std::string_view text, std::vector<Repl>& out) {
  if (c.old_form.empty()) return;
  static const std::regex k_inc(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  for (const auto& x : t) {
    if (x.kind != TokKind::pp_line) continue;
    std::smatch m;
    if (!std::regex_search(x.text, m, k_inc) || m[1].str() != c.old_form) continue;
    if (c.new_form.empty()) {
      std::size_t e = x.end < text.size() && text[x.end] == '\n' ? x.end + 1 : x.end;
      out.push_back({x.begin, e, ""});
    } else {
      std::string line = x.text;
      line.replace(static_cast<std::size_t>(m.position(1)), static_cast<std::size_t>(m.length(1)), c.new_form);
      out.push_back({x.begin, x.end, line});
    }
  }
}

} // namespace

RewriteResult rewrite_text(std::string_view text, const KbChange& c) {
  auto t = tokenize(text);
  std::vector<Repl> repls;
  if (c.kind == "call-args" || c.kind == "call-replace") {
    calls(text, t, c, repls);
  } else if (c.kind == "call-rename" || c.kind == "member-rename" || c.kind == "ident-rename") {
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind != TokKind::ident || t[i].text != c.old_form) continue;
      bool member = after_member_op(t, i);
      if (c.kind == "member-rename" && !member) continue;
      if (c.kind != "member-rename" && member) continue;
      if (c.kind == "call-rename" && (i + 1 >= t.size() || t[i + 1].text != "(")) continue;
      repls.push_back({t[i].begin, t[i].end, c.new_form});
    }
  } else if (c.kind == "include") {
    includes(t, c, text, repls);
  } else if (c.kind == "statement" || c.kind == "delete") {
    sequence(text, t, c, repls);
  }
  RewriteResult r{std::string(text), 0};
  std::sort(repls.begin(), repls.end(), [](const Repl& a, const Repl& b) { return a.begin > b.begin; });
  std::size_t limit = std::string::npos;
  for (const auto& x : repls) {
    if (x.end > limit) continue; // overlapping: keep the later one
    r.text.replace(x.begin, x.end - x.begin, x.text);
    limit = x.begin;
    ++r.sites;
  }
  return r;
}

} // namespace autodriver::propose
