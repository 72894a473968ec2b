#include "autodriver/propose/shared/struct_swap.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <algorithm>
#include <chrono>
#include <regex>
#include <vector>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

/// Names declared `struct tag [*...] name` among tokens [first, last].
std::set<std::string> declared_with(const std::vector<Token>& toks, std::size_t first, std::size_t last,
                                    const std::set<std::string>& tags) {
  std::set<std::string> out;
  for (std::size_t i = first; i + 2 <= last && i + 2 < toks.size(); ++i) {
    if (toks[i].text != "struct" || !tags.count(toks[i + 1].text)) continue;
    std::size_t k = i + 2;
    while (k <= last && k < toks.size() && (toks[k].text == "*" || toks[k].text == "const")) ++k;
    if (k > last || k >= toks.size() || toks[k].kind != TokKind::ident) continue;
    if (k + 1 < toks.size() && (toks[k + 1].text == "(" || toks[k + 1].text == "{")) continue; // a function
    out.insert(toks[k].text);
  }
  return out;
}

/// `[&] name (->|.) member` spanning all of tokens [first, last]: (address taken, name, member).
struct Access {
  bool address = false;
  std::string name, member;
};

bool parse_access(const std::vector<Token>& toks, std::size_t first, std::size_t last, Access& a) {
  std::size_t i = first;
  a.address = toks[i].text == "&";
  if (a.address) ++i;
  if (i + 2 != last || toks[i].kind != TokKind::ident || (toks[i + 1].text != "->" && toks[i + 1].text != ".") ||
      toks[last].kind != TokKind::ident)
    return false;
  a.name = toks[i].text;
  a.member = toks[last].text;
  return true;
}

/// Top-level argument token ranges of the call whose '(' is at `open`.
std::vector<std::pair<std::size_t, std::size_t>> call_args(const std::vector<Token>& toks, std::size_t open, std::size_t close) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  int depth = 0;
  std::size_t start = open + 1;
  for (std::size_t k = open + 1; k < close; ++k) {
    const auto& x = toks[k].text;
    if (x == "(" || x == "[" || x == "{") ++depth;
    if (x == ")" || x == "]" || x == "}") --depth;
    if (depth == 0 && x == ",") {
      out.push_back({start, k - 1});
      start = k + 1;
    }
  }
  if (close > start) out.push_back({start, close - 1});
  return out;
}

bool line_start(const std::string& text, std::size_t at) {
  std::size_t ls = text.rfind('\n', at == 0 ? 0 : at - 1);
  ls = ls == std::string::npos ? 0 : ls + 1;
  if (at > 0 && text[at - 1] == '\n') ls = at;
  for (std::size_t k = ls; k < at; ++k)
    if (text[k] != ' ' && text[k] != '\t') return false;
  return true;
}

std::size_t line_begin(const std::string& text, std::size_t at) {
  if (at == 0) return 0;
  std::size_t ls = text.rfind('\n', at - 1);
  return ls == std::string::npos ? 0 : ls + 1;
}

struct Splice {
  std::size_t begin, end;
  std::string text;
};

} // namespace

std::map<std::string, MemberBridge> learn_member_bridges(const std::string& text, const std::string& from_tag,
                                                         const std::string& to_tag) {
  std::map<std::string, MemberBridge> out;
  auto toks = tokenize(text);
  std::string any_into, any_out;
  for (const auto& u : find_units(toks)) {
    if (u.kind != UnitKind::function) continue;
    auto olds = declared_with(toks, u.first, u.last, {from_tag});
    auto news = declared_with(toks, u.first, u.last, {to_tag});
    if (olds.empty() || news.empty()) continue;
    for (const auto& c : find_calls(toks, u.body, u.last)) {
      auto args = call_args(toks, c.name_tok + 1, c.close_tok);
      if (args.size() != 2) continue;
      Access a0, a1;
      if (!parse_access(toks, args[0].first, args[0].second, a0) || !parse_access(toks, args[1].first, args[1].second, a1) ||
          a0.member != a1.member || a1.address)
        continue;
      if (!a0.address && news.count(a0.name) && olds.count(a1.name)) {
        out[a0.member].into = c.callee;
        any_into = c.callee;
      } else if (a0.address && olds.count(a0.name) && news.count(a1.name)) {
        out[a0.member].out_of = c.callee;
        any_out = c.callee;
      }
    }
  }
  for (auto& [m, b] : out) {
    if (b.into.empty()) b.into = any_into;
    if (b.out_of.empty()) b.out_of = any_out;
  }
  return out;
}

std::map<std::string, MemberBridge> target_member_bridges(const fs::path& new_src, const std::string& from_tag,
                                                          const std::string& to_tag,
                                                          const std::function<std::string(const std::string&)>& scalar_type_of) {
  std::map<std::string, MemberBridge> out;
  if (new_src.empty()) return out;
  kernel::SourceGrep q;
  q.options = {"-lw"};
  q.includes = {"*.c", "*.h"};
  q.pattern = to_tag;
  q.dirs = {"net", "drivers/net", "fs", "kernel", "include"};
  q.all_of = {to_tag};
  q.output_cap = 1 << 20;
  int read = 0;
  for (const auto& rel : kernel::grep_source(new_src, q)) {
    if (++read > 400) break;
    auto text = util::read_file(new_src / rel);
    if (!text || !has_word(*text, from_tag)) continue;
    for (auto& [m, b] : learn_member_bridges(*text, from_tag, to_tag)) {
      auto& o = out[m];
      if (o.into.empty()) o.into = b.into;
      if (o.out_of.empty()) o.out_of = b.out_of;
    }
  }
  for (auto it = out.begin(); it != out.end();) {
    if (!it->second.out_of.empty()) it->second.scalar = scalar_type_of(it->second.out_of);
    if (it->second.into.empty() || it->second.out_of.empty() || it->second.scalar.empty()) it = out.erase(it);
    else ++it;
  }
  return out;
}

std::set<std::string> names_of_struct_type(const std::string& text, const std::set<std::string>& tags) {
  auto toks = tokenize(text);
  if (toks.empty()) return {};
  return declared_with(toks, 0, toks.size() - 1, tags);
}

namespace {

/// A bridged member access: the chain [start, member] ending in `name (->|.) member`.
struct Use {
  std::size_t start, member;
  std::string chain;
};

/// The bridged member accesses of a function body (u.body, close): scalar uses of a bridged member
/// of one of `names` (not its address, not sizeof, not indexed or called).
std::vector<Use> bridged_uses(const std::vector<Token>& toks, const Unit& u, std::size_t close,
                              const std::map<std::string, MemberBridge>& bridges, const std::set<std::string>& names) {
  std::vector<Use> uses;
  for (std::size_t i = u.body + 3; i < close; ++i) {
    if (!bridges.count(toks[i].text) || (toks[i - 1].text != "->" && toks[i - 1].text != ".") || !names.count(toks[i - 2].text))
      continue;
    if (i + 1 < close && (toks[i + 1].text == "[" || toks[i + 1].text == "(")) continue;
    std::size_t s = i - 2;
    while (s >= 2 && (toks[s - 1].text == "->" || toks[s - 1].text == ".") && toks[s - 2].kind == TokKind::ident) s -= 2;
    // Its address (a unary '&', not the binary one after an operand): not a scalar use.
    if (toks[s - 1].text == "&" && toks[s - 2].kind != TokKind::ident && toks[s - 2].kind != TokKind::number &&
        toks[s - 2].text != ")" && toks[s - 2].text != "]")
      continue;
    if (s >= 2 && toks[s - 1].text == "(" && toks[s - 2].text == "sizeof") continue;
    std::string chain;
    for (std::size_t k = s; k <= i; ++k) chain += toks[k].text;
    uses.push_back({s, i, chain});
  }
  return uses;
}

/// The statement holding the token at `use`: from the token after the nearest ';', '{' or '}' to
/// its end (the condition's ')' for if/switch, else the ';' at depth 0); `nested` when the use is
/// in the unbraced branch of an `if (c) stmt;` / `else stmt;`. nullopt when brackets do not match.
struct Statement {
  std::size_t start = 0, end = 0;
  std::size_t cond_close = std::string::npos;
  bool nested = false;
};
std::optional<Statement> statement_of(const std::vector<Token>& toks, std::size_t body, std::size_t close, std::size_t use) {
  Statement st;
  std::size_t s = use;
  while (s > body && toks[s - 1].text != ";" && toks[s - 1].text != "{" && toks[s - 1].text != "}") --s;
  for (;;) {
    if ((toks[s].text == "if" || toks[s].text == "switch") && toks[s + 1].text == "(") {
      std::size_t c = matching_close(toks, s + 1);
      if (c == std::string::npos) return std::nullopt;
      if (use > c) {
        s = c + 1;
        st.nested = true;
        continue;
      }
      st.cond_close = c;
    } else if (toks[s].text == "else" && toks[s + 1].text != "if") {
      ++s;
      st.nested = true;
      continue;
    }
    break;
  }
  st.start = s;
  std::size_t end = st.cond_close;
  if (end == std::string::npos) {
    int depth = 0;
    for (end = s; end < close; ++end) {
      const auto& x = toks[end].text;
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (depth == 0 && x == ";") break;
    }
    if (end >= close) return std::nullopt;
  }
  st.end = end;
  return st;
}

} // namespace

std::string swap_struct(const std::string& text, const std::string& from_tag, const std::string& to_tag,
                        const std::map<std::string, MemberBridge>& bridges, const std::set<std::string>& names) {
  auto toks = tokenize(text);
  std::vector<Splice> tags, splices;
  for (std::size_t i = 1; i < toks.size(); ++i)
    if (toks[i].text == from_tag && toks[i - 1].text == "struct") tags.push_back({toks[i].begin, toks[i].end, to_tag});
  // A rewritten statement is rendered from the original text: its own `struct from_tag` too.
  const std::regex tag_re("\\bstruct(\\s+)" + from_tag + "\\b");
  auto retag = [&](const std::string& s) { return std::regex_replace(s, tag_re, "struct$1" + to_tag); };

  for (const auto& u : find_units(toks)) {
    if (u.kind != UnitKind::function || bridges.empty()) continue;
    std::size_t close = matching_close(toks, u.body);
    if (close == std::string::npos) continue;
    auto uses = bridged_uses(toks, u, close, bridges, names);
    if (uses.empty()) continue;
    // Group by statement: from the token after the nearest ';', '{' or '}' to its end.
    std::map<std::string, std::string> temp_of; // chain -> local
    std::set<std::string> taken;
    for (std::size_t k = u.first; k <= close; ++k)
      if (toks[k].kind == TokKind::ident) taken.insert(toks[k].text);
    std::vector<std::string> decls;
    std::size_t ui = 0;
    bool fn_ok = true;
    std::vector<Splice> mine;
    while (ui < uses.size() && fn_ok) {
      auto st = statement_of(toks, u.body, close, uses[ui].start);
      if (!st) {
        fn_ok = false;
        break;
      }
      const std::size_t s = st->start, end = st->end, cond_close = st->cond_close;
      const bool nested = st->nested;
      std::vector<Use> here;
      while (ui < uses.size() && uses[ui].start <= end) here.push_back(uses[ui++]);
      const auto& head = toks[s].text;
      if (head == "for" || head == "while" || head == "do" || head == "case" || head == "default") continue;
      // `chain = E;` / `chain op= E;`: written through F.
      const Use* lhs = nullptr;
      std::string op;
      if (cond_close == std::string::npos && here.front().start == s && here.front().member + 1 < end) {
        const auto& t = toks[here.front().member + 1].text;
        if (t == "=" || t == "|=" || t == "&=" || t == "^=") {
          lhs = &here.front();
          op = t == "=" ? "" : t.substr(0, 1);
        }
      }
      std::vector<const Use*> reads;
      for (const auto& h : here)
        if (&h != lhs || !op.empty()) reads.push_back(&h);
      if (!reads.empty() && (nested || !line_start(text, toks[s].begin))) continue;
      std::string fill;
      std::string indent;
      {
        std::size_t lb = line_begin(text, toks[s].begin);
        indent = text.substr(lb, toks[s].begin - lb);
      }
      for (const auto* r : reads) {
        if (!temp_of.count(r->chain)) {
          const auto& b = bridges.at(toks[r->member].text);
          std::string name = "legacy_" + toks[r->member].text;
          for (int n = 2; taken.count(name); ++n) name = "legacy_" + toks[r->member].text + std::to_string(n);
          taken.insert(name);
          temp_of[r->chain] = name;
          decls.push_back(b.scalar + " " + name + ";");
        }
        std::string call = bridges.at(toks[r->member].text).out_of + "(&" + temp_of[r->chain] + ", " +
                           text.substr(toks[r->start].begin, toks[r->member].end - toks[r->start].begin) + ");\n";
        if (fill.find(call) == std::string::npos) fill += indent + call;
      }
      if (!fill.empty()) {
        std::size_t lb = line_begin(text, toks[s].begin);
        mine.push_back({lb, lb, fill});
      }
      // Read splices inside [from, to) become the temps; `slice` renders a token range so.
      auto slice = [&](std::size_t from_tok, std::size_t to_tok) {
        std::string outs;
        std::size_t pos = toks[from_tok].begin;
        for (const auto* r : reads) {
          if (r == lhs || r->start < from_tok || r->member > to_tok) continue;
          outs += text.substr(pos, toks[r->start].begin - pos) + temp_of[r->chain];
          pos = toks[r->member].end;
        }
        return outs + text.substr(pos, toks[to_tok].end - pos);
      };
      if (lhs) {
        std::string target = text.substr(toks[lhs->start].begin, toks[lhs->member].end - toks[lhs->start].begin);
        std::string rhs = slice(lhs->member + 2, end - 1);
        if (!op.empty()) rhs = temp_of[lhs->chain] + " " + op + " (" + rhs + ")";
        const auto& b = bridges.at(toks[lhs->member].text);
        std::string call = b.into + "(" + target + ", " + rhs + ");";
        // Past 100 columns: the second argument on its own line, aligned after the '('.
        std::size_t col = 0;
        for (char ch : indent) col = ch == '\t' ? (col / 8 + 1) * 8 : col + 1;
        if (col + call.size() > 100 && rhs.find('\n') == std::string::npos) {
          std::size_t at = col + b.into.size() + 1;
          std::string pad(at / 8, '\t');
          pad += std::string(at % 8, ' ');
          call = b.into + "(" + target + ",\n" + pad + rhs + ");";
        }
        mine.push_back({toks[s].begin, toks[end].end, retag(call)});
      } else {
        for (const auto* r : reads) mine.push_back({toks[r->start].begin, toks[r->member].end, temp_of[r->chain]});
      }
    }
    if (!fn_ok) continue;
    // The locals open the body ('{' ending its line, kernel style).
    std::size_t nl = text.find('\n', toks[u.body].end);
    if (!decls.empty()) {
      if (nl == std::string::npos || toks[u.body + 1].begin < nl) continue;
      std::string lines;
      for (const auto& d : decls) lines += "\t" + d + "\n";
      mine.push_back({nl + 1, nl + 1, lines});
    }
    for (auto& m : mine) splices.push_back(std::move(m));
  }
  for (const auto& t : tags)
    if (std::none_of(splices.begin(), splices.end(),
                     [&](const Splice& sp) { return sp.begin < sp.end && sp.begin <= t.begin && t.end <= sp.end; }))
      splices.push_back(t);
  // Bottom up; at one offset the replacement before the insertion that goes in front of it.
  std::stable_sort(splices.begin(), splices.end(),
                   [](const Splice& a, const Splice& b) { return a.begin != b.begin ? a.begin > b.begin : a.end > b.end; });
  std::string out = text;
  for (const auto& sp : splices) out.replace(sp.begin, sp.end - sp.begin, sp.text);
  return out;
}

} // namespace autodriver::propose
