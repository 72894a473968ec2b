#include "autodriver/csrc/scan.hpp"

#include "autodriver/csrc/tokens.hpp"

#include <algorithm>
#include <cctype>

namespace autodriver::csrc {

namespace {

bool space(char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; }

const std::string k_empty;

/// The source with comments removed (their text collected per line) and string/char literal
/// contents blanked, every newline kept so that offsets and line numbers stay those of the source;
/// read from the one lexer (csrc/tokens.hpp).
void strip(std::string_view in, const Lexed& lexed, std::string& code, std::vector<std::string>& comments) {
  code.assign(in);
  comments.assign(static_cast<std::size_t>(std::count(in.begin(), in.end(), '\n')) + 1, std::string());
  for (const auto& c : lexed.comments) {
    auto line = static_cast<std::size_t>(c.line - 1);
    bool block = c.end - c.begin >= 2 && in[c.begin + 1] == '*';
    std::size_t text_end = block && c.end - c.begin >= 4 && in.substr(c.end - 2, 2) == "*/" ? c.end - 2 : c.end;
    for (std::size_t i = c.begin; i < c.end; ++i) {
      if (in[i] == '\n') {
        ++line;
        continue;
      }
      code[i] = ' ';
      if (i >= c.begin + 2 && i < text_end && line < comments.size()) comments[line] += in[i];
    }
  }
  for (const auto& t : lexed.tokens) {
    if (t.kind != TokKind::string && t.kind != TokKind::chr) continue;
    bool closed = t.end - t.begin >= 2 && in[t.end - 1] == in[t.begin];
    for (std::size_t i = t.begin + 1; i < (closed ? t.end - 1 : t.end); ++i)
      if (in[i] != '\n') code[i] = ' ';
  }
}

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    auto nl = s.find('\n', pos);
    std::string_view line = s.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(line);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return out;
}

bool is_type_word(std::string_view w) {
  static const std::vector<std::string_view> k_words = {
      "void",  "int",      "char",   "short",  "long",   "unsigned", "signed", "float",  "double", "struct", "union",  "enum",
      "const", "volatile", "static", "inline", "extern", "sizeof",   "typeof", "return", "if",     "while",  "for",    "switch",
      "bool",  "u8",       "u16",    "u32",    "u64",    "s8",       "s16",    "s32",    "s64",    "size_t", "ssize_t"};
  return std::find(k_words.begin(), k_words.end(), w) != k_words.end();
}

/// Identifier ending right before `pos` (skipping whitespace), or empty.
std::string ident_before(std::string_view s, std::size_t pos) {
  std::size_t e = pos;
  while (e > 0 && space(s[e - 1])) --e;
  std::size_t b = e;
  while (b > 0 && ident_char(s[b - 1])) --b;
  if (b == e || !ident_start(s[b])) return {};
  return std::string(s.substr(b, e - b));
}

/// The name of the function a definition header declares: the identifier before the last
/// top-level parenthesised group that is not an attribute (`__acquires(x)`, `__printf(1, 2)`).
std::string function_name(std::string_view header) {
  std::vector<std::size_t> opens;
  int depth = 0;
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == '(') {
      if (depth == 0) opens.push_back(i);
      ++depth;
    } else if (header[i] == ')' && depth > 0) {
      --depth;
    }
  }
  for (auto it = opens.rbegin(); it != opens.rend(); ++it) {
    std::string name = ident_before(header, *it);
    if (name.empty() || name.starts_with("__") || is_type_word(name)) continue;
    return name;
  }
  // No other group: a name starting with `__` is the function's own (`static int __ei_close(...)`).
  for (auto it = opens.rbegin(); it != opens.rend(); ++it) {
    std::string name = ident_before(header, *it);
    if (!name.empty() && !is_type_word(name)) return name;
  }
  return {};
}

bool looks_like_function(std::string_view header) {
  if (header.find('(') == std::string_view::npos) return false;
  int depth = 0;
  for (char ch : header) {
    if (ch == '(') ++depth;
    else if (ch == ')') --depth;
    else if (depth == 0 && ch == '=') return false;
  }
  std::size_t e = header.size();
  while (e > 0 && space(header[e - 1])) --e;
  return e > 0 && header[e - 1] == ')';
}

std::string declaration_name(std::string_view t) {
  int paren = 0, brace = 0, bracket = 0;
  std::size_t first_open = std::string_view::npos;
  std::string last;
  for (std::size_t i = 0; i < t.size(); ++i) {
    char ch = t[i];
    if (ch == '(') {
      if (paren == 0 && brace == 0 && first_open == std::string_view::npos) first_open = i;
      ++paren;
    } else if (ch == ')') {
      --paren;
    } else if (ch == '{') {
      ++brace;
    } else if (ch == '}') {
      --brace;
    } else if (ch == '[') {
      ++bracket;
    } else if (ch == ']') {
      --bracket;
    } else if (ch == '=' && paren == 0 && brace == 0 && bracket == 0) {
      return last;
    } else if (paren == 0 && brace == 0 && bracket == 0 && ident_start(ch) && (i == 0 || !ident_char(t[i - 1]))) {
      std::size_t j = i;
      while (j < t.size() && ident_char(t[j])) ++j;
      last = std::string(t.substr(i, j - i));
      i = j - 1;
    }
  }
  if (first_open != std::string_view::npos) {
    std::string n = ident_before(t, first_open);
    if (!n.empty()) return n;
  }
  return last;
}

std::vector<std::string> split_statements(std::string_view body) {
  std::vector<std::string> out;
  std::string cur;
  int paren = 0;
  auto flush = [&] {
    std::string n = normalize_space(cur);
    if (!n.empty()) out.push_back(std::move(n));
    cur.clear();
  };
  for (char ch : body) {
    if (ch == '(') ++paren;
    else if (ch == ')' && paren > 0) --paren;
    if (paren == 0 && (ch == ';' || ch == '{' || ch == '}')) {
      flush();
      continue;
    }
    cur += ch;
  }
  flush();
  return out;
}

} // namespace

bool ScannedFile::has_code(int line) const {
  if (line < 1 || line > line_count()) return false;
  const auto& c = code[static_cast<std::size_t>(line - 1)];
  return std::any_of(c.begin(), c.end(), [](char ch) { return !space(ch); });
}

bool ScannedFile::is_preproc(int line) const {
  return line >= 1 && line <= line_count() && preproc[static_cast<std::size_t>(line - 1)];
}

const std::string& ScannedFile::code_line(int line) const {
  return line >= 1 && line <= line_count() ? code[static_cast<std::size_t>(line - 1)] : k_empty;
}

const std::string& ScannedFile::comment_line(int line) const {
  return line >= 1 && line <= line_count() ? comment[static_cast<std::size_t>(line - 1)] : k_empty;
}

const TopItem* ScannedFile::item_at(int line) const {
  for (const auto& it : items)
    if (it.first_line <= line && line <= it.last_line) return &it;
  return nullptr;
}

int ScannedFile::line_of(std::size_t offset) const {
  auto it = std::upper_bound(line_start.begin(), line_start.end(), offset);
  return static_cast<int>(it - line_start.begin());
}

std::string normalize_space(std::string_view s) {
  std::string out;
  bool pending = false;
  for (char ch : s) {
    if (space(ch)) {
      pending = !out.empty();
      continue;
    }
    if (pending) out += ' ';
    pending = false;
    out += ch;
  }
  return out;
}

std::vector<std::string> identifiers(std::string_view code) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < code.size();) {
    if (ident_start(code[i]) && (i == 0 || !ident_char(code[i - 1]))) {
      std::size_t j = i;
      while (j < code.size() && ident_char(code[j])) ++j;
      out.emplace_back(code.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

ScannedFile scan(std::string_view text) {
  ScannedFile f;
  const Lexed lexed = lex(text);
  std::string code;
  std::vector<std::string> comments;
  strip(text, lexed, code, comments);
  f.raw = split(text);
  f.code = split(code);
  f.comment = std::move(comments);
  f.comment.resize(f.raw.size());
  f.code.resize(f.raw.size());
  f.preproc.assign(f.raw.size(), false);
  // Lines of later #elif/#else branches: their brackets repeat the first branch's (`#if A`
  // `if (x) {` `#else` `if (y) {` `#endif`) and are not counted, or every item after them would
  // be taken for part of one function.
  std::vector<bool> later(f.code.size(), false);
  for (const auto& t : lexed.tokens) {
    auto first = static_cast<std::size_t>(t.line - 1);
    if (t.kind == TokKind::pp_line) {
      auto last = first + static_cast<std::size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(t.begin),
                                                              text.begin() + static_cast<std::ptrdiff_t>(t.end), '\n'));
      for (std::size_t l = first; l <= last && l < f.preproc.size(); ++l) f.preproc[l] = true;
    } else if (t.later_branch && first < later.size()) {
      later[first] = true;
    }
  }
  for (std::size_t i = 0; i < f.code.size(); ++i) {
    f.line_start.push_back(f.text.size());
    f.text += f.preproc[i] ? std::string(f.code[i].size(), ' ') : f.code[i];
    if (i + 1 < f.code.size()) f.text += '\n';
  }
  auto counted = [&](std::size_t offset) {
    int line = f.line_of(offset);
    return line < 1 || static_cast<std::size_t>(line) > later.size() || !later[static_cast<std::size_t>(line) - 1];
  };

  const std::string& t = f.text;
  std::size_t start = std::string::npos;
  int paren = 0, brace = 0;
  auto close_item = [&](std::size_t end, ItemKind kind) {
    TopItem it;
    it.kind = kind;
    it.begin = start;
    it.end = end;
    it.first_line = f.line_of(start);
    it.last_line = f.line_of(end == 0 ? 0 : end - 1);
    it.name = declaration_name(std::string_view(t).substr(start, end - start));
    f.items.push_back(std::move(it));
    start = std::string::npos;
  };
  for (std::size_t i = 0; i < t.size(); ++i) {
    char ch = t[i];
    if (start == std::string::npos) {
      if (space(ch)) continue;
      if (ch == ';') continue;
      start = i;
    }
    if ((ch == '(' || ch == ')' || ch == '{' || ch == '}') && !counted(i)) continue;
    if (ch == '(') {
      ++paren;
    } else if (ch == ')') {
      if (paren > 0) --paren;
      else f.balanced = false;
    } else if (ch == '{') {
      if (brace == 0 && paren == 0 && looks_like_function(std::string_view(t).substr(start, i - start))) {
        int depth = 1;
        std::size_t j = i + 1;
        for (; j < t.size() && depth > 0; ++j) {
          if ((t[j] == '{' || t[j] == '}') && !counted(j)) continue;
          if (t[j] == '{') ++depth;
          else if (t[j] == '}') --depth;
        }
        if (depth != 0) f.balanced = false;
        TopItem it;
        it.kind = ItemKind::function;
        it.begin = start;
        it.end = j;
        it.first_line = f.line_of(start);
        it.last_line = f.line_of(j == 0 ? 0 : j - 1);
        it.body_line = f.line_of(i);
        it.name = function_name(std::string_view(t).substr(start, i - start));
        std::size_t body_end = depth == 0 ? j - 1 : j;
        it.statements = split_statements(std::string_view(t).substr(i + 1, body_end - (i + 1)));
        f.items.push_back(std::move(it));
        start = std::string::npos;
        i = j - 1;
        continue;
      }
      ++brace;
    } else if (ch == '}') {
      if (brace > 0) --brace;
      else f.balanced = false;
    } else if (ch == ';' && brace == 0 && paren == 0) {
      close_item(i + 1, ItemKind::declaration);
    }
  }
  if (brace != 0 || paren != 0) f.balanced = false;
  if (start != std::string::npos) {
    std::size_t e = t.size();
    while (e > start && space(t[e - 1])) --e;
    if (e > start) close_item(e, ItemKind::declaration);
  }
  return f;
}

std::vector<Assignment> member_assignments(const ScannedFile& f) {
  std::vector<Assignment> out;
  const std::string& t = f.text;
  for (const auto& item : f.items) {
    for (std::size_t i = item.begin; i < item.end && i < t.size(); ++i) {
      if (t[i] != '=') continue;
      char prev = i > 0 ? t[i - 1] : '\0';
      char next = i + 1 < t.size() ? t[i + 1] : '\0';
      if (next == '=' || std::string_view("=!<>+-*/%&|^").find(prev) != std::string_view::npos) continue;
      // member name before '=', then '.' or '->' before it
      std::size_t e = i;
      while (e > item.begin && space(t[e - 1])) --e;
      std::size_t b = e;
      while (b > item.begin && ident_char(t[b - 1])) --b;
      if (b == e || !ident_start(t[b])) continue;
      std::size_t p = b;
      while (p > item.begin && space(t[p - 1])) --p;
      bool dot =
          p > item.begin && t[p - 1] == '.' && !(p >= item.begin + 2 && std::isdigit(static_cast<unsigned char>(t[p - 2])));
      bool arrow = p >= item.begin + 2 && t[p - 1] == '>' && t[p - 2] == '-';
      if (!dot && !arrow) continue;
      // value: up to ',' ';' or an unmatched closer, at nesting depth 0
      int depth = 0;
      std::size_t v = i + 1;
      for (; v < item.end && v < t.size(); ++v) {
        char c = t[v];
        if (c == '(' || c == '{' || c == '[') ++depth;
        else if (c == ')' || c == '}' || c == ']') {
          if (depth == 0) break;
          --depth;
        } else if ((c == ',' || c == ';') && depth == 0) {
          break;
        }
      }
      Assignment a;
      a.scope = item.name;
      a.member = t.substr(b, e - b);
      a.value = normalize_space(std::string_view(t).substr(i + 1, v - (i + 1)));
      a.line = f.line_of(b);
      out.push_back(std::move(a));
    }
  }
  return out;
}

} // namespace autodriver::csrc
