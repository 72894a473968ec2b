#include "autodriver/crash/bounds.hpp"

#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/memo.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

constexpr int k_max_depth = 8;

/// `#define NAME body` (object-like) of one directive token: {NAME, body}, or nullopt.
std::optional<std::pair<std::string, std::string>> object_macro(std::string_view d) {
  std::size_t i = d.find_first_not_of(" \t", 1);
  if (i == std::string_view::npos || d.substr(i, 6) != "define") return std::nullopt;
  i = d.find_first_not_of(" \t", i + 6);
  if (i == std::string_view::npos || !csrc::ident_start(d[i])) return std::nullopt;
  std::size_t e = i;
  while (e < d.size() && csrc::ident_char(d[e])) ++e;
  if (e < d.size() && d[e] == '(') return std::nullopt; // function-like
  std::string body(d.substr(e));
  for (std::size_t p; (p = body.find("\\\n")) != std::string::npos;) body.replace(p, 2, " ");
  return std::make_pair(std::string(d.substr(i, e - i)), body);
}

std::optional<long long> literal(const std::string& s) {
  if (s.empty() || !(s[0] >= '0' && s[0] <= '9')) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0);
  for (; end && *end; ++end)
    if (*end != 'u' && *end != 'U' && *end != 'l' && *end != 'L') return std::nullopt;
  return v;
}

/// A recursive-descent reader of the constant expression t[i..last].
class Expr {
public:
  Expr(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last,
       const std::function<std::optional<long long>(const std::string&)>& macro, int depth)
      : m_t(t), m_i(first), m_last(last), m_macro(macro), m_depth(depth) {}

  std::optional<long long> whole() {
    auto v = shift();
    return v && m_i == m_last + 1 ? v : std::nullopt;
  }

private:
  bool at(const char* s) const { return m_i <= m_last && m_t[m_i].text == s; }

  std::optional<long long> shift() {
    auto v = sum();
    while (v && (at("<<") || at(">>"))) {
      const bool left = at("<<");
      ++m_i;
      auto r = sum();
      if (!r || *r < 0 || *r > 62) return std::nullopt;
      v = left ? *v << *r : *v >> *r;
    }
    return v;
  }
  std::optional<long long> sum() {
    auto v = product();
    while (v && (at("+") || at("-"))) {
      const bool plus = at("+");
      ++m_i;
      auto r = product();
      if (!r) return std::nullopt;
      v = plus ? *v + *r : *v - *r;
    }
    return v;
  }
  std::optional<long long> product() {
    auto v = unary();
    while (v && (at("*") || at("/") || at("%"))) {
      const std::string op = m_t[m_i++].text;
      auto r = unary();
      if (!r || (op != "*" && *r == 0)) return std::nullopt;
      v = op == "*" ? *v * *r : op == "/" ? *v / *r : *v % *r;
    }
    return v;
  }
  std::optional<long long> unary() {
    if (m_i > m_last) return std::nullopt;
    if (at("-")) {
      ++m_i;
      auto v = unary();
      return v ? std::optional<long long>(-*v) : std::nullopt;
    }
    if (at("(")) {
      const std::size_t close = csrc::matching_close(m_t, m_i);
      if (close == std::string::npos || close > m_last) return std::nullopt;
      auto v = Expr(m_t, m_i + 1, close - 1, m_macro, m_depth).whole();
      m_i = close + 1;
      return v;
    }
    const auto& tok = m_t[m_i++];
    if (tok.kind == csrc::TokKind::number) return literal(tok.text);
    if (tok.kind == csrc::TokKind::ident && m_depth < k_max_depth && m_macro) return m_macro(tok.text);
    return std::nullopt;
  }

  const std::vector<csrc::Token>& m_t;
  std::size_t m_i, m_last;
  const std::function<std::optional<long long>(const std::string&)>& m_macro;
  int m_depth;
};

/// The value of a macro body's text.
std::optional<long long> evaluate_text(const std::string& body,
                                       const std::function<std::optional<long long>(const std::string&)>& macro, int depth) {
  auto t = csrc::tokenize(body);
  if (t.empty()) return std::nullopt;
  return evaluate(t, 0, t.size() - 1, macro, depth + 1);
}

/// The index of the statement's end after token `from` (its `;`, or a braced block's `}`).
std::size_t statement_end(const std::vector<csrc::Token>& t, std::size_t from, std::size_t limit) {
  if (from < limit && t[from].text == "{") return csrc::matching_close(t, from);
  int depth = 0;
  for (std::size_t i = from; i < limit; ++i) {
    if (t[i].text == "(" || t[i].text == "[" || t[i].text == "{") ++depth;
    else if (t[i].text == ")" || t[i].text == "]" || t[i].text == "}") --depth;
    else if (t[i].text == ";" && depth == 0) return i;
  }
  return limit;
}

/// The object-like macros of a file's own text, then the kernel's (through `kernel`), as
/// evaluate() asks for them.
class FileMacros {
public:
  FileMacros(const std::string& file_text, const ValueOracle& kernel) : m_kernel(kernel) {
    for (const auto& tok : csrc::tokenize(file_text))
      if (tok.kind == csrc::TokKind::pp_line)
        if (auto m = object_macro(tok.text)) m_own.emplace(m->first, m->second);
    m_lookup = [this](const std::string& name) -> std::optional<long long> {
      if (auto it = m_own.find(name); it != m_own.end()) return evaluate_text(it->second, m_lookup, 0);
      return m_kernel ? m_kernel(name) : std::nullopt;
    };
  }
  FileMacros(const FileMacros&) = delete;
  FileMacros& operator=(const FileMacros&) = delete;
  const std::function<std::optional<long long>(const std::string&)>& lookup() const { return m_lookup; }

private:
  const ValueOracle& m_kernel;
  std::map<std::string, std::string> m_own;
  std::function<std::optional<long long>(const std::string&)> m_lookup;
};

} // namespace

std::optional<long long> evaluate(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last,
                                  const std::function<std::optional<long long>(const std::string&)>& macro, int depth) {
  if (first > last || last >= t.size() || depth > k_max_depth) return std::nullopt;
  return Expr(t, first, last, macro, depth).whole();
}

ValueOracle value_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& name) -> std::optional<long long> {
    static util::Memo<std::optional<long long>> known;
    return known.get(kernel_src.string() + "|" + name, [&]() -> std::optional<long long> {
      static thread_local int depth = 0;
      if (depth > k_max_depth || !kernel::WordIndex::indexable(name)) return std::nullopt;
      kernel::SourceGrep q;
      q.options = {"-hE"};
      q.includes = {"*.h"};
      q.pattern = "^[[:space:]]*#[[:space:]]*define[[:space:]]+" + name + "[[:space:]]";
      q.dirs = kernel::k_header_dirs;
      q.all_of = {name};
      q.timeout = std::chrono::seconds(30);
      for (const auto& line : kernel::grep_source(kernel_src, q)) {
        if (line.find('#') == std::string::npos) continue;
        auto m = object_macro(line.substr(line.find('#')));
        if (!m || m->first != name) continue;
        ++depth;
        auto v = evaluate_text(m->second, value_oracle(kernel_src), depth);
        --depth;
        if (v) return v;
      }
      return std::nullopt;
    });
  };
}

std::vector<LoopOverrun> loop_overruns(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& file_text,
                                       const ValueOracle& kernel) {
  std::vector<LoopOverrun> out;
  const FileMacros macros(file_text, kernel);
  const auto& macro = macros.lookup();
  // Local arrays: `T a[S];` (or `= {...}`, or `,`) in the body.
  struct Array {
    std::size_t size_first, size_last;
    int line;
  };
  std::map<std::string, Array> arrays;
  for (std::size_t i = fn.body + 1; i + 3 < fn.last; ++i) {
    if (t[i].kind != csrc::TokKind::ident || t[i + 1].text != "[" || t[i - 1].kind != csrc::TokKind::ident) continue;
    const std::size_t close = csrc::matching_close(t, i + 1);
    if (close == std::string::npos || close + 1 >= fn.last || close == i + 2) continue;
    const auto& next = t[close + 1].text;
    if (next == ";" || next == "=" || next == ",") arrays.emplace(t[i].text, Array{i + 2, close - 1, t[i].line});
  }
  if (arrays.empty()) return out;
  for (std::size_t i = fn.body; i + 6 < fn.last; ++i) {
    // for ( V = A ; V OP N ; ...
    if (t[i].text != "for" || t[i + 1].text != "(") continue;
    const std::size_t close = csrc::matching_close(t, i + 1);
    if (close == std::string::npos) continue;
    std::size_t semi = i + 2;
    while (semi < close && t[semi].text != ";") ++semi;
    if (semi + 3 >= close || t[semi + 1].kind != csrc::TokKind::ident) continue;
    const std::string v = t[semi + 1].text, op = t[semi + 2].text;
    if (op != "<" && op != "<=") continue;
    std::size_t semi2 = semi + 3;
    while (semi2 < close && t[semi2].text != ";") ++semi2;
    if (semi2 >= close || semi2 == semi + 3) continue;
    auto bound = evaluate(t, semi + 3, semi2 - 1, macro);
    if (!bound) continue;
    const std::size_t body_end = statement_end(t, close + 1, fn.last);
    for (std::size_t k = close + 1; k + 3 <= body_end; ++k) {
      if (t[k].kind != csrc::TokKind::ident || t[k + 1].text != "[" || t[k + 2].text != v || t[k + 3].text != "]") continue;
      auto a = arrays.find(t[k].text);
      if (a == arrays.end()) continue;
      auto size = evaluate(t, a->second.size_first, a->second.size_last, macro);
      const long long last = op == "<=" ? *bound : *bound - 1;
      if (!size || last < *size) continue;
      LoopOverrun o{t[k].text, v, t[i].line, a->second.line, *size, last, op, "", ""};
      for (std::size_t b = semi + 3; b < semi2; ++b) o.bound += (o.bound.empty() ? "" : " ") + t[b].text;
      for (std::size_t b = a->second.size_first; b <= a->second.size_last; ++b)
        o.size_text += (o.size_text.empty() ? "" : " ") + t[b].text;
      out.push_back(std::move(o));
      break;
    }
  }
  return out;
}

namespace {

/// A `for (V = A; V OP N; ...)` loop: its index, comparison, bound and body's token range.
struct ForLoop {
  std::string index, op, bound;
  std::size_t for_tok = 0, bound_first = 0, bound_last = 0, body_first = 0, body_last = 0;
};

std::vector<ForLoop> for_loops(const std::vector<csrc::Token>& t, const csrc::Unit& fn) {
  std::vector<ForLoop> out;
  for (std::size_t i = fn.body; i + 6 < fn.last; ++i) {
    if (t[i].text != "for" || t[i + 1].text != "(") continue;
    const std::size_t close = csrc::matching_close(t, i + 1);
    if (close == std::string::npos || close >= fn.last) continue;
    std::size_t semi = i + 2;
    while (semi < close && t[semi].text != ";") ++semi;
    if (semi + 3 >= close || t[semi + 1].kind != csrc::TokKind::ident) continue;
    std::size_t semi2 = semi + 3;
    while (semi2 < close && t[semi2].text != ";") ++semi2;
    if (semi2 >= close || semi2 == semi + 3) continue;
    ForLoop l{t[semi + 1].text, t[semi + 2].text, csrc::join_tokens(t, semi + 3, semi2 - 1), i, semi + 3,
              semi2 - 1,        close + 1,        statement_end(t, close + 1, fn.last)};
    out.push_back(std::move(l));
  }
  return out;
}

/// The names the loop's body indexes with its own index (`vi->sq[i]`: sq).
std::set<std::string> indexed_by(const std::vector<csrc::Token>& t, const ForLoop& l) {
  std::set<std::string> out;
  for (std::size_t k = l.body_first; k + 3 <= l.body_last; ++k)
    if (t[k].kind == csrc::TokKind::ident && t[k + 1].text == "[" && t[k + 2].text == l.index && t[k + 3].text == "]")
      out.insert(t[k].text);
  return out;
}

} // namespace

std::vector<CountOverrun> loops_past_count(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units,
                                           const csrc::Unit& fn, int line) {
  // The file's loops that stop before their bound, by bound and array.
  std::map<std::pair<std::string, std::string>, std::pair<int, int>> below; // -> first line, count
  for (const auto& u : units) {
    if (u.kind != csrc::UnitKind::function) continue;
    for (const auto& l : for_loops(t, u)) {
      if (l.op != "<") continue;
      for (const auto& a : indexed_by(t, l)) {
        auto& [first, n] = below[{l.bound, a}];
        if (!n) first = t[l.for_tok].line;
        ++n;
      }
    }
  }
  std::vector<CountOverrun> around, all;
  const auto loops = for_loops(t, fn);
  for (const auto& l : loops) {
    if (l.op != "<=") continue;
    for (const auto& a : indexed_by(t, l)) {
      auto it = below.find({l.bound, a});
      if (it == below.end()) continue;
      CountOverrun o{a, l.index, l.bound, l.bound_first, l.bound_last, t[l.for_tok].line, it->second.first, it->second.second};
      if (t[l.body_first].line <= line && line <= t[l.body_last].line) around.push_back(o);
      all.push_back(std::move(o));
    }
  }
  const bool in_a_loop = std::any_of(loops.begin(), loops.end(),
                                     [&](const ForLoop& l) { return t[l.for_tok].line <= line && line <= t[l.body_last].line; });
  return in_a_loop ? around : all;
}

namespace {

/// The characters a C string literal's text (quotes included) stands for, escapes counted once.
long long literal_length(const std::string& lit) {
  long long n = 0;
  for (std::size_t i = 1; i + 1 < lit.size(); ++i, ++n)
    if (lit[i] == '\\' && i + 2 < lit.size()) {
      ++i;
      if (lit[i] == 'x')
        while (i + 2 < lit.size() && std::isxdigit(static_cast<unsigned char>(lit[i + 1]))) ++i;
      else if (lit[i] >= '0' && lit[i] <= '7')
        for (int k = 0; k < 2 && i + 2 < lit.size() && lit[i + 1] >= '0' && lit[i + 1] <= '7'; ++k) ++i;
    }
  return n;
}

/// The text of a run of adjacent string literals [first, last] without their quotes, or nullopt.
std::optional<std::string> literal_run(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last) {
  std::string out;
  for (std::size_t i = first; i <= last; ++i) {
    if (t[i].kind != csrc::TokKind::string || t[i].text.size() < 2 || t[i].text.front() != '"') return std::nullopt;
    out += t[i].text.substr(1, t[i].text.size() - 2);
  }
  return out;
}

/// The longest string each member is given in the driver: `.m = "..."`, `->m = "..."`.
std::map<std::string, long long> member_strings(const std::vector<std::vector<csrc::Token>>& driver) {
  std::map<std::string, long long> out;
  for (const auto& t : driver)
    for (std::size_t i = 1; i + 2 < t.size(); ++i)
      if (t[i].kind == csrc::TokKind::ident && (t[i - 1].text == "." || t[i - 1].text == "->") && t[i + 1].text == "=" &&
          t[i + 2].kind == csrc::TokKind::string && t[i + 2].text.front() == '"') {
        auto& m = out[t[i].text];
        m = std::max(m, literal_length(t[i + 2].text));
      }
  return out;
}

/// The longest output of printf format `fmt` (its text between the quotes) with `args`, each
/// argument's longest string when it is one (nullopt: unknown), the NUL not counted; nullopt when a
/// conversion's length is unknown.
std::optional<long long> format_length(const std::string& fmt, const std::vector<std::optional<long long>>& args) {
  long long n = 0;
  std::size_t arg = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] == '\\') {
      ++n;
      ++i;
      continue;
    }
    if (fmt[i] != '%') {
      ++n;
      continue;
    }
    if (++i >= fmt.size()) return std::nullopt;
    if (fmt[i] == '%') {
      ++n;
      continue;
    }
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) ++i;
    long long width = 0, precision = -1;
    for (; i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])); ++i) width = width * 10 + (fmt[i] - '0');
    if (i < fmt.size() && fmt[i] == '.')
      for (precision = 0, ++i; i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])); ++i)
        precision = precision * 10 + (fmt[i] - '0');
    while (i < fmt.size() && std::string_view("hlzjt").find(fmt[i]) != std::string_view::npos) ++i;
    if (i >= fmt.size() || fmt[i] == '*') return std::nullopt;
    long long len = 0;
    switch (fmt[i]) {
    case 's': {
      if (arg >= args.size() || !args[arg]) return std::nullopt;
      len = precision >= 0 ? std::min(precision, *args[arg]) : *args[arg];
      break;
    }
    // A number's value is not known: it counts at its narrowest, so only what is known overruns.
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o':
    case 'c': len = 1; break;
    default: return std::nullopt; // %p and its extensions, floats: not counted
    }
    ++arg;
    n += std::max(len, width);
  }
  return n;
}

} // namespace

std::vector<FormatOverrun> format_overruns(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units,
                                           const std::string& fn, const std::string& file_text, const ValueOracle& kernel,
                                           const std::vector<std::vector<csrc::Token>>& driver) {
  std::vector<FormatOverrun> out;
  const FileMacros macros(file_text, kernel);
  const auto& macro = macros.lookup();
  std::optional<std::map<std::string, long long>> strings;
  std::set<std::string> seen, next{fn};
  for (int depth = 0; depth < 4 && !next.empty(); ++depth) {
    std::set<std::string> callees;
    for (const auto& u : units) {
      if (u.kind != csrc::UnitKind::function || !next.count(u.name) || !seen.insert(u.name).second) continue;
      // `char a[S];` in the body.
      std::map<std::string, std::pair<std::size_t, std::size_t>> arrays;
      for (std::size_t i = u.body + 1; i + 3 < u.last; ++i)
        if (t[i - 1].text == "char" && t[i].kind == csrc::TokKind::ident && t[i + 1].text == "[") {
          const std::size_t close = csrc::matching_close(t, i + 1);
          if (close != std::string::npos && close > i + 2 && close + 1 < u.last && t[close + 1].text == ";")
            arrays.emplace(t[i].text, std::make_pair(i + 2, close - 1));
        }
      for (const auto& c : csrc::find_calls(t, u.body, u.last)) {
        callees.insert(c.callee);
        if (arrays.empty() || c.arg_toks.size() < 2 || !arrays.count(c.args[0])) continue;
        std::optional<long long> need;
        if (c.callee == "sprintf") {
          auto fmt = literal_run(t, c.arg_toks[1].first, c.arg_toks[1].second);
          if (!fmt) continue;
          if (!strings) strings = member_strings(driver);
          std::vector<std::optional<long long>> lens;
          for (std::size_t a = 2; a < c.arg_toks.size(); ++a) {
            const auto [f, l] = c.arg_toks[a];
            if (auto lit = literal_run(t, f, l)) lens.push_back(static_cast<long long>(lit->size()));
            else if (l > f && (t[l - 1].text == "->" || t[l - 1].text == ".") && strings->count(t[l].text))
              lens.push_back(strings->at(t[l].text));
            else lens.push_back(std::nullopt);
          }
          need = format_length(*fmt, lens);
        } else if (c.callee == "strcpy") {
          if (auto lit = literal_run(t, c.arg_toks[1].first, c.arg_toks[1].second)) need = literal_length('"' + *lit + '"');
        }
        const auto [sf, sl] = arrays.at(c.args[0]);
        auto size = evaluate(t, sf, sl, macro);
        if (!need || !size || *need + 1 <= *size) continue;
        FormatOverrun o{u.name, c.args[0], c.callee, "", t[sf].line, t[c.name_tok].line, *size, *need + 1};
        for (std::size_t b = sf; b <= sl; ++b) o.size_text += (o.size_text.empty() ? "" : " ") + t[b].text;
        out.push_back(std::move(o));
      }
    }
    next = std::move(callees);
  }
  return out;
}

} // namespace autodriver::crash
