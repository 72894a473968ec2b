#include "autodriver/csrc/tokens.hpp"

#include <cctype>
#include <map>
#include <regex>
#include <set>

namespace autodriver::csrc {

namespace {

/// End of the comment starting at `i` ("//" or "/*"), recorded in `comments`; `line` is advanced
/// over its newlines. Returns the offset after it (a line comment stops before its newline).
std::size_t skip_comment(std::string_view s, std::size_t i, int& line, std::vector<Comment>& comments) {
  const std::size_t n = s.size();
  Comment c;
  c.begin = i;
  c.line = line;
  std::size_t j = i + 2;
  if (s[i + 1] == '/') {
    while (j < n && s[j] != '\n') ++j;
  } else {
    while (j + 1 < n && !(s[j] == '*' && s[j + 1] == '/')) {
      if (s[j] == '\n') ++line;
      ++j;
    }
    if (j + 1 >= n && j < n && s[j] == '\n') ++line; // unterminated: the last byte counts too
    j = std::min(n, j + 2);
  }
  c.end = j;
  comments.push_back(c);
  return j;
}

/// End of the string or character literal starting at `i` (its closing quote included); stops at an
/// unescaped newline. A backslash escapes the next byte (a newline too: a line splice).
std::size_t skip_literal(std::string_view s, std::size_t i, int& line) {
  const std::size_t n = s.size();
  const char q = s[i];
  std::size_t j = i + 1;
  while (j < n && s[j] != q && s[j] != '\n') {
    if (s[j] == '\\' && j + 1 < n) {
      ++j;
      if (s[j] == '\n') ++line;
    }
    ++j;
  }
  return std::min(n, j + 1);
}

/// A backslash ending a line (trailing blanks allowed, as gcc allows them with a warning):
/// the offset of the newline it continues over, or npos.
std::size_t continuation(std::string_view s, std::size_t i) {
  std::size_t j = i + 1;
  while (j < s.size() && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r')) ++j;
  return j < s.size() && s[j] == '\n' ? j : std::string_view::npos;
}

} // namespace

Lexed lex(std::string_view s) {
  Lexed out;
  std::size_t i = 0, n = s.size();
  int line = 1;
  bool at_line_start = true;
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
      at_line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '*')) {
      int before = line;
      i = skip_comment(s, i, line, out.comments);
      if (line != before) at_line_start = true; // `/* ... \n */ #define` is a directive
      continue;
    }
    Token t;
    t.line = line;
    t.begin = i;
    if (c == '#' && at_line_start) {
      // The whole directive, with backslash continuations, is one token; its comments are
      // recorded like any other, its literals skipped (a quote or "//" in them is no comment).
      std::size_t j = i + 1;
      while (j < n && s[j] != '\n') {
        if (s[j] == '\\') {
          std::size_t nl = continuation(s, j);
          if (nl != std::string_view::npos) {
            ++line;
            j = nl + 1;
            continue;
          }
        }
        if (s[j] == '/' && j + 1 < n && (s[j + 1] == '/' || s[j + 1] == '*')) {
          j = skip_comment(s, j, line, out.comments);
          continue;
        }
        if (s[j] == '"' || s[j] == '\'') {
          j = skip_literal(s, j, line);
          continue;
        }
        ++j;
      }
      t.kind = TokKind::pp_line;
      t.text = std::string(s.substr(i, j - i));
      t.end = j;
      i = j;
      out.tokens.push_back(std::move(t));
      continue;
    }
    at_line_start = false;
    if (ident_start(c)) {
      std::size_t j = i;
      while (j < n && ident_char(s[j])) ++j;
      t.kind = TokKind::ident;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      std::size_t j = i;
      while (j < n &&
             (ident_char(s[j]) || s[j] == '.' ||
              ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E' || s[j - 1] == 'p' || s[j - 1] == 'P'))))
        ++j;
      t.kind = TokKind::number;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else if (c == '"' || c == '\'') {
      std::size_t j = skip_literal(s, i, line);
      t.kind = c == '"' ? TokKind::string : TokKind::chr;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else {
      static const char* k_three[] = {"<<=", ">>=", "...", nullptr};
      static const char* k_two[] = {"->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",   "||",
                                    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", nullptr};
      std::size_t len = 1;
      for (const char** p = k_three; *p; ++p)
        if (s.substr(i, 3) == *p) len = 3;
      if (len == 1)
        for (const char** p = k_two; *p; ++p)
          if (s.substr(i, 2) == *p) len = 2;
      t.kind = TokKind::punct;
      t.text = std::string(s.substr(i, len));
      i += len;
    }
    t.end = i;
    out.tokens.push_back(std::move(t));
  }
  // Mark the tokens of later branches (#elif / #else) of preprocessor conditionals.
  auto mask = first_branch_mask(out.tokens);
  for (std::size_t k = 0; k < out.tokens.size(); ++k) out.tokens[k].later_branch = !mask[k];
  return out;
}

std::vector<Token> tokenize(std::string_view src) { return lex(src).tokens; }

std::string join_tokens(const std::vector<Token>& toks, std::size_t first, std::size_t last) {
  std::string out;
  for (std::size_t i = first; i <= last && i < toks.size(); ++i) {
    if (!out.empty()) out += ' ';
    out += toks[i].text;
  }
  return out;
}

std::size_t matching_close(const std::vector<Token>& toks, std::size_t open) {
  const std::string& o = toks[open].text;
  std::string c = o == "(" ? ")" : o == "[" ? "]" : "}";
  int depth = 0;
  for (std::size_t i = open; i < toks.size(); ++i) {
    // Brackets of a later #else branch repeat those of the first (`#if A` `if (x) {` `#else`
    // `if (y) {` `#endif`): counting both would unbalance everything after.
    // (A bracket opened inside a later branch closes there: count everything then.)
    if (toks[i].kind != TokKind::punct || (toks[i].later_branch && !toks[open].later_branch)) continue;
    if (toks[i].text == o) ++depth;
    else if (toks[i].text == c && --depth == 0) return i;
  }
  return std::string::npos;
}

std::vector<std::pair<std::size_t, std::size_t>> block_statements(const std::vector<Token>& toks, std::size_t open) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t close = matching_close(toks, open);
  if (close == std::string::npos) return out;
  auto is = [&](std::size_t i, const char* text) { return i < close && toks[i].text == text; };
  std::size_t i = open + 1;
  while (i < close) {
    if (toks[i].kind == TokKind::pp_line) {
      ++i;
      continue;
    }
    const std::size_t first = i;
    std::size_t end = std::string::npos;
    if (toks[i].kind == TokKind::ident && is(i + 1, ":") && toks[i].text != "default") end = i + 1; // a label
    while (end == std::string::npos && i < close) {
      const Token& t = toks[i];
      if (t.kind == TokKind::punct && (t.text == "(" || t.text == "[")) {
        std::size_t c = matching_close(toks, i);
        if (c == std::string::npos || c >= close) return {};
        i = c + 1;
        continue;
      }
      if (t.kind == TokKind::punct && (t.text == ";" || t.text == "{")) {
        std::size_t e = i;
        if (t.text == "{") {
          e = matching_close(toks, i);
          if (e == std::string::npos || e >= close) return {};
          if (is(e + 1, ";")) ++e; // `x = (struct s){...};`, `do {} while`: the ';' ends it
        }
        // `if (...) a; else b;` / `do ... while (...);`: the statement goes on.
        std::size_t n = e + 1;
        while (n < close && toks[n].kind == TokKind::pp_line) ++n;
        if (is(n, "else") || (is(n, "while") && toks[first].text == "do")) {
          i = n + 1;
          continue;
        }
        end = e;
        break;
      }
      ++i;
    }
    if (end == std::string::npos) break;
    out.emplace_back(first, end);
    i = end + 1;
  }
  return out;
}

std::vector<VarAssignment> assignments_of(const std::vector<Token>& t, std::size_t first, std::size_t last,
                                          const std::string& x) {
  std::vector<VarAssignment> out;
  for (std::size_t i = first; i + 2 <= last && i + 1 < t.size(); ++i) {
    if (t[i].text != x || t[i + 1].text != "=") continue;
    if (i > 0 && (t[i - 1].text == "->" || t[i - 1].text == ".")) continue;
    if (i > 0 && t[i - 1].text == "*") {
      const std::string before = i >= 2 ? t[i - 2].text : ";";
      if (before == ";" || before == "{" || before == "}" || before == ")" || before == ":" || before == "else") continue;
    }
    std::size_t e = i + 2;
    int depth = 0;
    for (; e <= last && e < t.size(); ++e) {
      if (t[e].text == "(" || t[e].text == "[" || t[e].text == "{") ++depth;
      else if (t[e].text == ")" || t[e].text == "]" || t[e].text == "}") --depth;
      if (depth == 0 && (t[e].text == ";" || t[e].text == ",")) break;
      if (depth < 0) break;
    }
    if (e > last || e >= t.size() || depth != 0) continue;
    out.push_back({i, e});
  }
  return out;
}

/// Unit and call scanning treat an unbalanced bracket as running to the end of the file.
static std::size_t match_close(const std::vector<Token>& toks, std::size_t open) {
  std::size_t c = matching_close(toks, open);
  return c == std::string::npos ? toks.size() - 1 : c;
}

std::vector<bool> first_branch_mask(const std::vector<Token>& toks) {
  std::vector<bool> mask(toks.size(), true);
  std::vector<bool> later; // per open conditional: are we past its first branch?
  auto directive = [](const std::string& text) {
    std::size_t i = 1;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
    return text.substr(i, j - i);
  };
  for (std::size_t k = 0; k < toks.size(); ++k) {
    if (toks[k].kind == TokKind::pp_line) {
      std::string d = directive(toks[k].text);
      if (d == "if" || d == "ifdef" || d == "ifndef") later.push_back(false);
      else if ((d == "elif" || d == "else") && !later.empty()) later.back() = true;
      else if (d == "endif" && !later.empty()) later.pop_back();
      continue;
    }
    for (bool b : later)
      if (b) mask[k] = false;
  }
  return mask;
}

std::vector<Unit> find_units(const std::vector<Token>& toks) {
  std::vector<Unit> units;
  std::size_t i = 0, start = 0;
  static const std::set<std::string> k_not_names = {
      "if",       "while",      "for",        "switch",      "return", "sizeof", "__attribute__", "__section",     "__aligned",
      "__printf", "__releases", "__acquires", "__must_hold", "__init", "__exit", "__cold",        "__maybe_unused"};
  while (i < toks.size()) {
    const Token& t = toks[i];
    if (t.kind == TokKind::pp_line) {
      // A conditional inside a declaration (`#if V` `static void f(x)` `#else` `static int f(x)`
      // `#endif` `{`) keeps the declaration's start; any other directive ends what came before.
      static const std::regex k_cond(R"(^#\s*(if|ifdef|ifndef|elif|else|endif)\b)");
      if (start == i || !std::regex_search(t.text, k_cond)) start = i + 1;
      ++i;
      continue;
    }
    if (t.kind == TokKind::punct && t.text == ";") {
      ++i;
      start = i;
      continue;
    }
    if (t.kind == TokKind::punct && t.text == "=") {
      // Initialized declaration: name is the last identifier before '=' (skipping [..] suffixes).
      std::size_t j = i;
      std::string name;
      while (j > start) {
        --j;
        if (toks[j].kind == TokKind::punct && toks[j].text == "]") {
          int d = 0;
          for (; j > start; --j) {
            if (toks[j].text == "]") ++d;
            if (toks[j].text == "[" && --d == 0) break;
          }
          continue;
        }
        if (toks[j].kind == TokKind::ident && !k_not_names.count(toks[j].text)) {
          name = toks[j].text;
          break;
        }
      }
      std::string type;
      for (std::size_t k = start; k < j; ++k) {
        if (toks[k].text == "static" || toks[k].text == "const") continue;
        if (!type.empty()) type += ' ';
        type += toks[k].text;
      }
      // Extent: up to the ';' at depth 0.
      std::size_t k = i + 1;
      int depth = 0;
      for (; k < toks.size(); ++k) {
        const std::string& x = toks[k].text;
        if (toks[k].kind != TokKind::punct) continue;
        if (x == "{" || x == "(" || x == "[") ++depth;
        else if (x == "}" || x == ")" || x == "]") --depth;
        else if (x == ";" && depth <= 0) break;
      }
      if (!name.empty()) units.push_back({UnitKind::initializer, name, type, start, std::min(k, toks.size() - 1), i});
      i = k + 1;
      start = i;
      continue;
    }
    if (t.kind == TokKind::punct && t.text == "{") {
      std::size_t close = match_close(toks, i);
      // Function definition: "... name ( params ) [attrs] {"
      std::string name, type;
      std::size_t j = i;
      while (j > start) {
        --j;
        if (toks[j].text == ")") {
          int d = 0;
          std::size_t k = j;
          for (; k > start; --k) {
            if (toks[k].text == ")") ++d;
            if (toks[k].text == "(" && --d == 0) break;
          }
          if (k > start && toks[k - 1].kind == TokKind::ident && !k_not_names.count(toks[k - 1].text)) {
            name = toks[k - 1].text;
            for (std::size_t m = start; m + 1 < k; ++m) {
              if (!type.empty()) type += ' ';
              type += toks[m].text;
            }
            break;
          }
          j = k;
        }
      }
      if (!name.empty()) units.push_back({UnitKind::function, name, type, start, close, i});
      i = close + 1;
      // A struct/union/enum definition ends with ';' which resets start.
      if (name.empty()) continue;
      start = i;
      continue;
    }
    ++i;
  }
  return units;
}

std::vector<Call> find_calls(const std::vector<Token>& toks, std::size_t first, std::size_t last) {
  std::vector<Call> out;
  for (std::size_t i = first; i + 1 <= last && i + 1 < toks.size(); ++i) {
    if (toks[i].kind != TokKind::ident || toks[i + 1].text != "(") continue;
    if (i > 0 && (toks[i - 1].text == "." || toks[i - 1].text == "->")) continue;
    std::size_t close = match_close(toks, i + 1);
    Call c;
    c.callee = toks[i].text;
    c.name_tok = i;
    c.close_tok = close;
    std::size_t arg_start = i + 2;
    int depth = 0;
    for (std::size_t k = i + 2; k <= close; ++k) {
      const std::string& x = toks[k].text;
      if (toks[k].kind == TokKind::punct && (x == "(" || x == "[" || x == "{")) ++depth;
      if (toks[k].kind == TokKind::punct && (x == ")" || x == "]" || x == "}")) {
        if (k == close) {
          if (k > arg_start) {
            c.args.push_back(join_tokens(toks, arg_start, k - 1));
            c.arg_toks.emplace_back(arg_start, k - 1);
          }
          break;
        }
        --depth;
      }
      if (depth == 0 && x == "," && toks[k].kind == TokKind::punct) {
        c.args.push_back(join_tokens(toks, arg_start, k - 1));
        c.arg_toks.emplace_back(arg_start, k - 1);
        arg_start = k + 1;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Designated> designated_members(const std::vector<Token>& toks, const Unit& init) {
  std::vector<Designated> out;
  if (init.kind != UnitKind::initializer) return out;
  std::size_t open = init.body + 1;
  if (open >= toks.size() || toks[open].text != "{") return out;
  std::size_t close = match_close(toks, open);
  int depth = 0;
  for (std::size_t i = open + 1; i < close; ++i) {
    const std::string& x = toks[i].text;
    if (toks[i].kind == TokKind::punct && (x == "{" || x == "(" || x == "[")) ++depth;
    if (toks[i].kind == TokKind::punct && (x == "}" || x == ")" || x == "]")) --depth;
    if (depth != 0 || x != "." || i + 2 >= close || toks[i + 1].kind != TokKind::ident || toks[i + 2].text != "=") continue;
    std::size_t v = i + 3, k = v;
    int d = 0;
    for (; k < close; ++k) {
      const std::string& y = toks[k].text;
      if (toks[k].kind == TokKind::punct && (y == "{" || y == "(" || y == "[")) ++d;
      if (toks[k].kind == TokKind::punct && (y == "}" || y == ")" || y == "]")) --d;
      if (d == 0 && y == ",") break;
    }
    Designated dm;
    dm.member = toks[i + 1].text;
    dm.value = k > v ? join_tokens(toks, v, k - 1) : "";
    dm.dot_tok = i;
    dm.end_tok = k;
    out.push_back(std::move(dm));
    i = k;
  }
  return out;
}

std::vector<std::string> includes_of(const std::vector<Token>& toks) {
  static const std::regex k_inc(R"(^#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<std::string> out;
  for (const auto& t : toks) {
    if (t.kind != TokKind::pp_line) continue;
    std::smatch m;
    if (std::regex_search(t.text, m, k_inc)) out.push_back(m[1].str());
  }
  return out;
}

bool has_word(std::string_view text, std::string_view word) {
  std::size_t pos = 0;
  while ((pos = text.find(word, pos)) != std::string_view::npos) {
    bool left = pos == 0 || !ident_char(text[pos - 1]);
    bool right = pos + word.size() >= text.size() || !ident_char(text[pos + word.size()]);
    if (left && right) return true;
    pos += word.size();
  }
  return false;
}

std::set<std::string> changed_functions(std::string_view before, std::string_view after) {
  auto bt = tokenize(before), at = tokenize(after);
  auto body = [](const std::vector<Token>& toks, const Unit& u) {
    std::string out;
    for (std::size_t k = u.first; k <= u.last && k < toks.size(); ++k) out += toks[k].text + ' ';
    return out;
  };
  // Tokens outside functions, joined, and each function's tokens by name.
  auto split = [&](const std::vector<Token>& toks, std::map<std::string, std::string>& fns) {
    std::vector<bool> inside(toks.size(), false);
    for (const auto& u : find_units(toks)) {
      if (u.kind != UnitKind::function) continue;
      fns[u.name] = body(toks, u);
      for (std::size_t k = u.first; k <= u.last && k < toks.size(); ++k) inside[k] = true;
    }
    std::string rest;
    for (std::size_t k = 0; k < toks.size(); ++k)
      if (!inside[k]) rest += toks[k].text + ' ';
    return rest;
  };
  std::map<std::string, std::string> old_fns, new_fns;
  std::string old_rest = split(bt, old_fns), new_rest = split(at, new_fns);
  std::set<std::string> out;
  for (const auto& [name, text] : new_fns)
    if (auto it = old_fns.find(name); it == old_fns.end() || it->second != text) out.insert(name);
  if (out.empty() || old_rest != new_rest) out.insert("");
  return out;
}

/// A type's tokens without const, its integer keywords in one order: gcc spells `unsigned long`
/// as `long unsigned int`, the source as written.
std::string type_key(const std::vector<Token>& toks, std::size_t first, std::size_t last) {
  std::string out;
  int longs = 0;
  bool is_unsigned = false, is_signed = false, is_short = false, is_char = false, integer = false;
  auto flush = [&] {
    if (!integer) return;
    if (is_unsigned) out += "unsigned";
    if (is_signed && is_char) out += "signed";
    out += is_char ? "char" : is_short ? "short" : longs == 1 ? "long" : longs > 1 ? "longlong" : "int";
    integer = is_unsigned = is_signed = is_short = is_char = false;
    longs = 0;
  };
  for (std::size_t k = first; k <= last && k < toks.size(); ++k) {
    const std::string& t = toks[k].text;
    if (t == "const") continue;
    if (t == "unsigned" || t == "signed" || t == "short" || t == "long" || t == "int" || t == "char") {
      integer = true;
      is_unsigned |= t == "unsigned";
      is_signed |= t == "signed";
      is_short |= t == "short";
      is_char |= t == "char";
      longs += t == "long";
      continue;
    }
    flush();
    out += t;
  }
  flush();
  return out;
}

std::string type_key(std::string_view type) {
  auto toks = tokenize(type);
  return toks.empty() ? std::string() : type_key(toks, 0, toks.size() - 1);
}

namespace {
bool c_ident(const std::string& s) { return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'); }
} // namespace

std::string c_text(const std::vector<std::string>& toks) {
  std::string out;
  static const std::set<std::string> k_tight_after = {"(", "[", "->", ".", "!", "~", "$"};
  static const std::set<std::string> k_tight_before = {")", "]", ",", ";", "->", ".", "(", "["};
  static const std::set<std::string> k_operand_end = {")", "]"};
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const std::string& t = toks[i];
    if (i > 0) {
      const std::string& p = toks[i - 1];
      bool space = true;
      if (k_tight_after.count(p) || k_tight_before.count(t)) space = false;
      if (t == "(" && (p == "if" || p == "while" || p == "for" || p == "switch" || p == "return" || p == "=" || p == "," ||
                       p == "&&" || p == "||" || p == "*"))
        space = true;
      if (t == "[") space = false;
      // A unary & or * (after an operator or an opening bracket) binds to what follows.
      if ((p == "&" || p == "*") && i >= 2) {
        const std::string& pp = toks[i - 2];
        bool unary = !(c_ident(pp) || std::isdigit(static_cast<unsigned char>(pp[0])) || k_operand_end.count(pp));
        if (unary) space = false;
        if (p == "*" && c_ident(pp) && c_ident(t) && pp != "return") space = false; // `struct x *name`
      }
      if ((p == "&" || p == "*") && i == 1) space = false;
      if (space) out += ' ';
    }
    out += t;
  }
  return out;
}

std::optional<std::pair<std::string, std::string>> define_alias(std::string_view line) {
  static const std::regex k_comment(R"(/\*.*?\*/|//.*$)");
  static const std::regex k_def(R"(^\s*#\s*define\s+([A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*$)");
  std::string l = std::regex_replace(std::string(line), k_comment, "");
  std::smatch m;
  if (!std::regex_match(l, m, k_def)) return std::nullopt;
  return std::make_pair(m[1].str(), m[2].str());
}

std::optional<MacroDefinition> macro_definition(std::string_view line) {
  std::size_t i = 0;
  auto skip_blank = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  auto ident = [&] {
    const std::size_t from = i;
    while (i < line.size() && ident_char(line[i])) ++i;
    return line.substr(from, i - from);
  };
  skip_blank();
  if (i >= line.size() || line[i] != '#') return std::nullopt;
  ++i;
  skip_blank();
  if (line.substr(i, 6) != "define") return std::nullopt;
  i += 6;
  skip_blank();
  const auto name = ident();
  if (name.empty()) return std::nullopt;
  MacroDefinition d;
  d.name = std::string(name);
  if (i < line.size() && line[i] == '(') {
    const std::size_t close = line.find(')', i);
    if (close == std::string_view::npos) return std::nullopt;
    for (++i; i < close; ++i)
      if (auto p = ident(); !p.empty()) d.params.emplace(p);
    i = close + 1;
  }
  d.body_offset = i;
  return d;
}

std::pair<std::string, std::size_t> object_path(const std::vector<Token>& toks, std::size_t i) {
  auto member = [](const std::string& s) { return s == "->" || s == "."; };
  if (i >= toks.size() || toks[i].kind != TokKind::ident || (i > 0 && member(toks[i - 1].text))) return {"", i};
  std::string path = toks[i].text;
  std::size_t end = i;
  while (end + 2 < toks.size() && member(toks[end + 1].text) && toks[end + 2].kind == TokKind::ident) {
    path += toks[end + 1].text + toks[end + 2].text;
    end += 2;
  }
  return {path, end};
}

std::string path_ending_at(const std::vector<Token>& toks, std::size_t i) {
  if (i >= toks.size() || toks[i].kind != TokKind::ident) return "";
  std::string path = toks[i].text;
  while (i >= 2 && (toks[i - 1].text == "->" || toks[i - 1].text == ".") && toks[i - 2].kind == TokKind::ident) {
    path = toks[i - 2].text + toks[i - 1].text + path;
    i -= 2;
  }
  return path;
}

std::string declared_type(const std::vector<Token>& t, const Unit& fn, const std::string& name) {
  for (std::size_t i = fn.first + 1; i < fn.last; ++i) {
    if (t[i].text != name || t[i - 1].text != "*") continue;
    std::size_t b = i;
    while (b > fn.first && t[b - 1].text != "(" && t[b - 1].text != "," && t[b - 1].text != ";" && t[b - 1].text != "{") --b;
    if (b + 1 >= i) continue;
    std::string type;
    for (std::size_t k = b; k < i; ++k)
      if (t[k].text != "const") type += (type.empty() ? "" : " ") + t[k].text;
    return type;
  }
  return {};
}

std::string last_member(std::string_view expr) {
  std::string a;
  for (char ch : expr)
    if (ch != ' ') a += ch;
  if (a.find_first_of("([+") != std::string::npos) return {};
  std::size_t cut = 0;
  if (auto p = a.rfind("->"); p != std::string::npos) cut = p + 2;
  if (auto p = a.rfind('.'); p != std::string::npos && p + 1 > cut) cut = p + 1;
  std::string m = a.substr(cut);
  while (!m.empty() && (m[0] == '&' || m[0] == '*')) m.erase(0, 1);
  return starts_ident(m) ? m : std::string();
}

} // namespace autodriver::csrc
