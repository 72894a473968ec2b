#include "autodriver/propose/kb/kb_extract.hpp"
#include "autodriver/propose/shared/version_cond.hpp"

#include "autodriver/core/kernel.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

std::string KVersion::str() const { return fmt::format("{}.{}.{}", major, minor, patch); }

KVersion parse_kversion(std::string_view s) {
  auto r = core::release_numbers(s);
  return r ? KVersion{r->major, r->minor, r->patch} : KVersion{};
}

void ExtractStats::add(const ExtractStats& o) {
  conditionals += o.conditionals;
  blocks += o.blocks;
  complex += o.complex;
  nested += o.nested;
  big += o.big;
  unclassified += o.unclassified;
  entries += o.entries;
}

std::string normalize_ws(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

namespace {

/// A version block's condition: an ordering of LINUX_VERSION_CODE (version_cond.hpp).
using Cond = VersionCond;

std::optional<Cond> parse_cond(const std::string& c) {
  auto r = parse_version_condition(c);
  if (r && !r->ordered()) return std::nullopt;
  return r;
}

struct Line {
  std::string text; // with continuations joined (for directives)
  int first = 0;    // 1-based first physical line
  int last = 0;
};

struct Branch {
  std::string cond; // empty for #else
  bool is_else = false;
  int dir_line = 0; // physical line of the directive (last line if continued)
  int body_first = 0;
  int body_last = -1;
};

struct Frame {
  bool version = false;
  bool nested = false;
  int if_line = 0;
  std::vector<Branch> branches;
};

std::string lines_text(const std::vector<std::string_view>& phys, int first, int last) {
  std::string out;
  for (int i = first; i <= last; ++i) out += std::string(phys[static_cast<std::size_t>(i - 1)]) + "\n";
  return out;
}

} // namespace

std::vector<VersionBlock> extract_version_blocks(std::string_view text, ExtractStats& stats) {
  std::vector<std::string_view> phys;
  for (std::size_t pos = 0; pos < text.size();) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    phys.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  static const std::regex k_dir(R"(^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$)");
  std::vector<VersionBlock> out;
  std::vector<Frame> stack;
  for (int i = 1; i <= static_cast<int>(phys.size()); ++i) {
    std::string l(phys[static_cast<std::size_t>(i - 1)]);
    int first = i;
    while (!l.empty() && l.back() == '\\' && i < static_cast<int>(phys.size())) {
      l.pop_back();
      l += std::string(phys[static_cast<std::size_t>(i)]);
      ++i;
    }
    std::smatch m;
    // A directive is read up to util::k_max_parsed_line (a joined #define of a whole table can be
    // longer; the regex would overflow the stack on it).
    if (l.find('#') == std::string::npos) continue;
    l.resize(std::min(l.size(), util::k_max_parsed_line));
    if (!std::regex_match(l, m, k_dir)) continue;
    std::string d = m[1].str(), cond = m[2].str();
    bool names_version = cond.find("LINUX_VERSION_CODE") != std::string::npos;
    if ((d == "if" || d == "elif") && names_version) ++stats.conditionals;
    auto close_branch = [&](Frame& f) {
      if (!f.branches.empty()) f.branches.back().body_last = first - 1;
    };
    if (d == "if" || d == "ifdef" || d == "ifndef") {
      if (!stack.empty()) stack.back().nested = true;
      Frame f;
      f.version = d == "if" && names_version;
      f.if_line = first;
      f.branches.push_back({d == "if" ? cond : std::string("?"), false, i, i + 1, -1});
      stack.push_back(std::move(f));
    } else if (d == "elif" || d == "else") {
      if (stack.empty()) continue;
      auto& f = stack.back();
      close_branch(f);
      if (names_version) f.version = true;
      f.branches.push_back({d == "elif" ? cond : std::string(), d == "else", i, i + 1, -1});
    } else { // endif
      if (stack.empty()) continue;
      Frame f = std::move(stack.back());
      stack.pop_back();
      close_branch(f);
      if (!f.version) continue;
      if (f.nested) {
        ++stats.nested;
        continue;
      }
      // Parse every condition; all must be simple.
      std::vector<std::optional<Cond>> conds;
      bool ok = true;
      for (const auto& b : f.branches) {
        if (b.is_else) continue;
        conds.push_back(parse_cond(b.cond));
        if (!conds.back()) ok = false;
      }
      if (!ok) {
        ++stats.complex;
        continue;
      }
      auto body = [&](const Branch& b) { return b.body_first <= b.body_last ? lines_text(phys, b.body_first, b.body_last) : ""; };
      bool has_else = f.branches.back().is_else;
      if (conds.size() == 1) {
        VersionBlock vb;
        const auto& c = *conds[0];
        vb.boundary = c.boundary();
        const Branch& t = f.branches[0];
        const Branch* e = has_else ? &f.branches[1] : nullptr;
        const Branch* nb = c.new_when_true() ? &t : e;
        const Branch* ob = c.new_when_true() ? e : &t;
        vb.new_code = nb ? body(*nb) : "";
        vb.old_code = ob ? body(*ob) : "";
        if (nb) vb.new_first = nb->body_first, vb.new_last = nb->body_last;
        if (ob) vb.old_first = ob->body_first, vb.old_last = ob->body_last;
        vb.line = f.if_line;
        vb.end_line = i;
        vb.simple = true;
        ++stats.blocks;
        out.push_back(std::move(vb));
        continue;
      }
      // #elif chain: only descending `>=`/`>` chains have a clear old/new order.
      bool chain = true;
      for (std::size_t k = 0; k < conds.size(); ++k) {
        if (!conds[k]->new_when_true()) chain = false;
        if (k > 0 && !(conds[k]->boundary() < conds[k - 1]->boundary())) chain = false;
      }
      if (!chain) {
        ++stats.complex;
        continue;
      }
      for (std::size_t k = 0; k + 1 < f.branches.size(); ++k) {
        VersionBlock vb;
        vb.boundary = conds[k]->boundary();
        vb.new_code = body(f.branches[k]);
        vb.old_code = body(f.branches[k + 1]);
        vb.new_first = f.branches[k].body_first, vb.new_last = f.branches[k].body_last;
        vb.old_first = f.branches[k + 1].body_first, vb.old_last = f.branches[k + 1].body_last;
        vb.line = f.if_line;
        vb.end_line = i;
        vb.simple = false;
        if (k + 1 < conds.size()) vb.old_since = conds[k + 1]->boundary();
        if (k > 0) vb.new_until = conds[k - 1]->boundary();
        ++stats.blocks;
        out.push_back(std::move(vb));
      }
    }
  }
  return out;
}

// ---- deriving the change a block encodes ------------------------------------------------------

namespace {

bool is_keyword(const std::string& s) {
  static const std::set<std::string> k = {"auto",    "break",    "case",   "char",     "const",  "continue", "default",
                                          "do",      "double",   "else",   "enum",     "extern", "float",    "for",
                                          "goto",    "if",       "inline", "int",      "long",   "register", "return",
                                          "short",   "signed",   "sizeof", "static",   "struct", "switch",   "typedef",
                                          "union",   "unsigned", "void",   "volatile", "while",  "bool",     "__always_inline",
                                          "u8",      "u16",      "u32",    "u64",      "s32",    "s64",      "size_t",
                                          "ssize_t", "loff_t",   "__user", "__iomem"};
  return k.count(s) > 0;
}

bool is_ident_token(const Token& t) { return t.kind == TokKind::ident; }

/// Splits code tokens into pieces ending at a top-level ';' or ','.
std::vector<std::vector<Token>> pieces_of(const std::vector<Token>& toks) {
  std::vector<std::vector<Token>> out(1);
  int depth = 0;
  for (const auto& t : toks) {
    out.back().push_back(t);
    if (t.kind != TokKind::punct) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    else if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
    else if (depth == 0 && (t.text == ";" || t.text == ",")) out.emplace_back();
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

std::string join(const std::vector<Token>& t, std::size_t a, std::size_t b) { return join_tokens(t, a, b); }

std::vector<std::string> split_args(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  std::vector<std::string> args;
  if (close == open + 1) return args;
  int depth = 0;
  std::size_t start = open + 1;
  for (std::size_t i = open + 1; i <= close; ++i) {
    const auto& x = t[i].text;
    if (t[i].kind == TokKind::punct && (x == "(" || x == "[" || x == "{")) ++depth;
    else if (t[i].kind == TokKind::punct && (x == ")" || x == "]" || x == "}") && i != close) --depth;
    if (i == close || (depth == 0 && t[i].kind == TokKind::punct && x == ",")) {
      args.push_back(i > start ? join(t, start, i - 1) : "");
      start = i + 1;
    }
  }
  return args;
}

/// A new argument in terms of the old ones ($i), by whole-token substitution, longest first.
std::string templ(const std::string& arg, const std::vector<std::string>& old_args) {
  for (std::size_t i = 0; i < old_args.size(); ++i)
    if (arg == old_args[i]) return "$" + std::to_string(i);
  std::vector<std::size_t> order(old_args.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto x, auto y) { return old_args[x].size() > old_args[y].size(); });
  std::string out = " " + arg + " ";
  for (auto i : order) {
    if (old_args[i].empty()) continue;
    std::string pat = " " + old_args[i] + " ";
    for (auto pos = out.find(pat); pos != std::string::npos; pos = out.find(pat, pos + 1))
      out.replace(pos, pat.size(), " $" + std::to_string(i) + " ");
  }
  return out.substr(1, out.size() - 2);
}

std::string call_form(const std::string& callee, const std::vector<std::string>& args) {
  std::string s = callee + "(";
  for (std::size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + ")";
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

std::optional<KbChange> classify_pair(const std::vector<Token>& o, const std::vector<Token>& n) {
  for (const auto* side : {&o, &n})
    for (const auto& t : *side)
      if (t.kind == TokKind::punct && (t.text == "{" || t.text == "}")) return std::nullopt;
  std::size_t p = 0;
  while (p < o.size() && p < n.size() && o[p].text == n[p].text) ++p;
  std::size_t s = 0;
  while (s < o.size() - p && s < n.size() - p && o[o.size() - 1 - s].text == n[n.size() - 1 - s].text) ++s;
  std::size_t oe = o.size() - s, ne = n.size() - s; // diff regions [p, oe), [p, ne)
  if (oe == p + 1 && ne == p + 1 && is_ident_token(o[p]) && is_ident_token(n[p])) {
    const std::string& a = o[p].text;
    const std::string& b = n[p].text;
    if (p > 0 && (o[p - 1].text == "." || o[p - 1].text == "->")) return KbChange{"member-rename", a, b, {a, b}};
    if (p + 1 < o.size() && o[p + 1].text == "(") return KbChange{"call-rename", a, b, {a, b}};
    if (!is_keyword(a) && !is_keyword(b)) return KbChange{"ident-rename", a, b, {a, b}};
    return std::nullopt;
  }
  // The innermost call enclosing the whole difference on both sides.
  for (std::size_t c = std::min(p, std::min(o.size(), n.size()) - 1) + 1; c-- > 0;) {
    if (c + 1 >= o.size() || c + 1 >= n.size()) continue;
    if (!is_ident_token(o[c]) || !is_ident_token(n[c]) || o[c + 1].text != "(" || n[c + 1].text != "(") continue;
    if (is_keyword(o[c].text) || is_keyword(n[c].text)) continue;
    auto oc = matching_close(o, c + 1), nc = matching_close(n, c + 1);
    if (oc == std::string::npos || nc == std::string::npos) continue;
    if (oc + 1 < oe || nc + 1 < ne) continue;
    auto oargs = split_args(o, c + 1, oc);
    auto nargs = split_args(n, c + 1, nc);
    std::vector<std::string> holes, tmpl;
    for (std::size_t i = 0; i < oargs.size(); ++i) holes.push_back("$" + std::to_string(i));
    for (const auto& a : nargs) tmpl.push_back(templ(a, oargs));
    KbChange ch;
    ch.kind = o[c].text == n[c].text ? "call-args" : "call-replace";
    ch.old_form = call_form(o[c].text, holes);
    ch.new_form = call_form(n[c].text, tmpl);
    ch.symbols = {o[c].text};
    add_unique(ch.symbols, n[c].text);
    if (ch.old_form == ch.new_form) return std::nullopt;
    return ch;
  }
  if (o.size() > 40 || n.size() > 40) return std::nullopt;
  KbChange ch{"statement", join(o, 0, o.size() - 1), join(n, 0, n.size() - 1), {}};
  std::set<std::string> in_new, in_old;
  for (const auto& t : n) in_new.insert(t.text);
  for (const auto& t : o) in_old.insert(t.text);
  for (std::size_t i = p; i < oe; ++i)
    if (is_ident_token(o[i]) && !in_new.count(o[i].text) && !is_keyword(o[i].text)) add_unique(ch.symbols, o[i].text);
  for (std::size_t i = p; i < ne; ++i)
    if (is_ident_token(n[i]) && !in_old.count(n[i].text) && !is_keyword(n[i].text)) add_unique(ch.symbols, n[i].text);
  if (ch.symbols.empty()) return std::nullopt;
  return ch;
}

/// `#define A B` with single-token A and B; nullopt otherwise.
std::optional<std::pair<std::string, std::string>> simple_define(const std::string& line) { return define_alias(line); }

} // namespace

std::vector<KbChange> derive_changes(const VersionBlock& block, ExtractStats& stats) {
  std::vector<KbChange> out;
  auto ot = tokenize(block.old_code), nt = tokenize(block.new_code);
  auto split = [](const std::vector<Token>& all, std::vector<Token>& pp, std::vector<Token>& code) {
    for (const auto& t : all) (t.kind == TokKind::pp_line ? pp : code).push_back(t);
  };
  std::vector<Token> opp, oc, npp, nc;
  split(ot, opp, oc);
  split(nt, npp, nc);
  if (ot.empty() && nt.empty()) {
    ++stats.unclassified;
    return out;
  }
  if (oc.empty() && nc.empty()) {
    // Preprocessor-only branches: includes, and `#define new old` compat aliases.
    std::vector<std::string> oi = includes_of(opp), ni = includes_of(npp);
    if (oi.size() == opp.size() && ni.size() == npp.size() && oi.size() <= 1 && ni.size() <= 1 && oi != ni) {
      KbChange c{"include", oi.empty() ? "" : oi[0], ni.empty() ? "" : ni[0], {}};
      add_unique(c.symbols, c.old_form);
      add_unique(c.symbols, c.new_form);
      out.push_back(c);
    } else if (opp.size() == 1 && npp.empty() && simple_define(opp[0].text)) {
      // Old kernels only: `#define new_name old_name` means old_name became new_name.
      auto [a, b] = *simple_define(opp[0].text);
      out.push_back({"ident-rename", b, a, {b, a}});
    } else if (npp.size() == 1 && opp.empty() && simple_define(npp[0].text)) {
      // New kernels only: `#define old_name new_name` keeps old spellings building.
      auto [a, b] = *simple_define(npp[0].text);
      out.push_back({"ident-rename", a, b, {a, b}});
    }
    if (out.empty()) ++stats.unclassified;
    stats.entries += static_cast<int>(out.size());
    return out;
  }
  if (!opp.empty() || !npp.empty()) { // code mixed with directives
    ++stats.unclassified;
    return out;
  }
  auto op = pieces_of(oc), np = pieces_of(nc);
  if (np.empty()) {
    // New kernels drop the code: a deletion (e.g. `.llseek = no_llseek,`).
    if (op.size() > 2 || oc.size() > 30) {
      ++stats.big;
      return out;
    }
    for (const auto& piece : op) {
      if (piece.size() < 3) { // `NULL,` alone says nothing about an API
        ++stats.unclassified;
        continue;
      }
      KbChange c{"delete", join(piece, 0, piece.size() - 1), "", {}};
      for (const auto& t : piece)
        if (is_ident_token(t) && !is_keyword(t.text)) add_unique(c.symbols, t.text);
      // The symbol that vanished is the likelier diagnostic: put the last identifier first.
      if (!c.symbols.empty()) std::rotate(c.symbols.begin(), c.symbols.end() - 1, c.symbols.end());
      out.push_back(c);
    }
    stats.entries += static_cast<int>(out.size());
    return out;
  }
  if (op.empty()) { // added code has no old form to recognise
    ++stats.unclassified;
    return out;
  }
  std::vector<std::pair<std::vector<Token>, std::vector<Token>>> pairs;
  if (op.size() == np.size()) {
    for (std::size_t i = 0; i < op.size(); ++i)
      if (join(op[i], 0, op[i].size() - 1) != join(np[i], 0, np[i].size() - 1)) pairs.push_back({op[i], np[i]});
  } else {
    pairs.push_back({oc, nc});
  }
  if (pairs.size() > 2) {
    ++stats.big;
    return out;
  }
  for (const auto& [o, n] : pairs) {
    if (o.size() > 80 || n.size() > 80) {
      ++stats.big;
      continue;
    }
    if (auto c = classify_pair(o, n)) out.push_back(*c);
    else ++stats.unclassified;
  }
  stats.entries += static_cast<int>(out.size());
  return out;
}

} // namespace autodriver::propose
