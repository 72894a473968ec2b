// Proposer "learned-rewrite": learns each API change from the kernel's own drivers. For a
// symbol the diagnostics name, it finds the kernel files that used it in the old tree, the same
// files in the new tree, pairs the same function/initializer in both, and derives the rewrite
// (call arguments dropped/added/reordered, callee renamed, designated member renamed/removed,
// identifier replaced). The majority rule becomes a Coccinelle semantic patch.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/call_merge.hpp"
#include "autodriver/propose/shared/family_rename.hpp"
#include "autodriver/propose/shared/site_index.hpp"
#include "autodriver/propose/shared/stmt_template.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/shared/token_diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;
using core::DiagKind;
using core::Diagnostic;

namespace {

bool is_identifier(const std::string& s) {
  static const std::regex k_id(R"(^[A-Za-z_]\w*$)");
  return std::regex_match(s, k_id);
}

struct Vote {
  int count = 0;
  std::vector<std::string> files;
};

void add_vote(std::map<std::string, Vote>& votes, const std::string& key, const std::string& file) {
  auto& v = votes[key];
  ++v.count;
  if (v.files.size() < 5 && std::find(v.files.begin(), v.files.end(), file) == v.files.end()) v.files.push_back(file);
}

std::vector<std::pair<std::string, Vote>> ranked(const std::map<std::string, Vote>& votes) {
  std::vector<std::pair<std::string, Vote>> out(votes.begin(), votes.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  return out;
}

// --- call rewrites ---------------------------------------------------------------------------

/// A new argument expressed through the old ones: "$0", or a template like "& $1 -> dev", or a literal.
std::string template_arg(const std::string& new_arg, const std::vector<std::string>& old_args) {
  for (std::size_t i = 0; i < old_args.size(); ++i)
    if (new_arg == old_args[i]) return "$" + std::to_string(i);
  // An identifier now passed as a string literal (`MODULE_IMPORT_NS(NS)` -> `MODULE_IMPORT_NS("NS")`).
  static const std::regex k_ident(R"(^[A-Za-z_]\w*$)");
  for (std::size_t i = 0; i < old_args.size(); ++i)
    if (new_arg == "\"" + old_args[i] + "\"" && std::regex_match(old_args[i], k_ident)) return "\"$" + std::to_string(i) + "\"";
  // Replace whole-token occurrences of old arguments, longest first.
  std::vector<std::size_t> order(old_args.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto x, auto y) { return old_args[x].size() > old_args[y].size(); });
  std::string out = " " + new_arg + " ";
  for (auto i : order) {
    if (old_args[i].empty()) continue;
    std::string pat = " " + old_args[i] + " ";
    for (auto pos = out.find(pat); pos != std::string::npos; pos = out.find(pat, pos + 1))
      out.replace(pos, pat.size(), " $" + std::to_string(i) + " ");
  }
  return std::string(util::trim(out));
}

/// A literal (NULL, 0, true) the new call passes at several positions while the old call passed it
/// once: only the position nearest the old one is that argument; the others are the literal
/// (`dm_io(r, n, reg, NULL, p)` -> `dm_io(r, n, reg, NULL, NULL, p)` added a NULL, not a copy).
void literal_copies_stay_literal(std::vector<std::string>& templates, const std::vector<std::string>& new_args,
                                 const std::vector<std::string>& old_args) {
  static const std::regex k_literal(R"(^(NULL|true|false|-?\s*[0-9][0-9A-Za-z_.]*|'.*'|".*")$)");
  for (std::size_t i = 0; i < old_args.size(); ++i) {
    if (!std::regex_match(old_args[i], k_literal)) continue;
    const std::string ref = "$" + std::to_string(i);
    std::size_t keep = templates.size();
    for (std::size_t j = 0; j < templates.size(); ++j)
      if (templates[j] == ref && (keep == templates.size() || (j > i ? j - i : i - j) < (keep > i ? keep - i : i - keep)))
        keep = j;
    for (std::size_t j = 0; j < templates.size(); ++j)
      if (templates[j] == ref && j != keep) templates[j] = new_args[j];
  }
}

struct CallRule {
  std::string callee;
  std::vector<std::string> args; // templates
  std::size_t old_arity = 0;
  /// An old argument the new call drops that the kernel's sites wrote in terms of another one
  /// (`strncpy(d, s, sizeof(d))` -> `strscpy(d, s)`): the rule holds only where the driver writes
  /// it so too. Old index -> template over $i.
  std::map<std::size_t, std::string> dropped_as;
  std::string key() const {
    std::string k = callee + "(";
    for (std::size_t i = 0; i < args.size(); ++i) k += (i ? ", " : "") + args[i];
    k += ")/" + std::to_string(old_arity);
    // `|` separates the entries: one inside an argument's text (`a | b`) is kept as \x1f.
    for (const auto& [i, t] : dropped_as) {
      std::string escaped = t;
      std::replace(escaped.begin(), escaped.end(), '|', '\x1f');
      k += fmt::format("|{}={}", i, escaped);
    }
    return k;
  }
};

/// A number, NULL, true or false as an argument's whole text.
bool is_constant_literal(const std::string& a) {
  static const std::regex k_literal(R"(^-?\s*(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*$|^(NULL|true|false)$)");
  return std::regex_match(a, k_literal);
}

/// Whether a new argument's template names an identifier of `old_arg` (one not of the template's
/// own $i references).
bool shares_identifier(const std::string& old_arg, const std::vector<std::string>& templates) {
  static const std::regex k_ident(R"(^[A-Za-z_]\w*$)");
  std::set<std::string> ids;
  for (const auto& w : util::split_words(old_arg))
    if (std::regex_match(w, k_ident) && w != "sizeof") ids.insert(w);
  for (const auto& a : templates)
    for (const auto& w : util::split_words(a))
      if (ids.count(w)) return true;
  return false;
}

/// For each old argument no new one uses: its text with the other old arguments as $i, when it
/// is written in terms of them (`sizeof ( dst )` with dst the first -> `sizeof ( $0 )`), or the
/// constant it is.
void note_dropped(CallRule& r, const std::vector<std::string>& old_args) {
  for (std::size_t j = 0; j < old_args.size(); ++j) {
    const std::string ref = "$" + std::to_string(j);
    bool used = false;
    for (const auto& a : r.args)
      for (std::size_t p = a.find(ref); p != std::string::npos; p = a.find(ref, p + 1))
        if (p + ref.size() >= a.size() || !std::isdigit(static_cast<unsigned char>(a[p + ref.size()]))) used = true;
    if (used) continue;
    std::string t = " " + old_args[j] + " ";
    bool related = false;
    for (std::size_t i = 0; i < old_args.size(); ++i) {
      if (i == j || old_args[i].empty() || old_args[i] == old_args[j]) continue;
      const std::string x = " " + old_args[i] + " ";
      for (std::size_t p = t.find(x); p != std::string::npos; p = t.find(x, p + 1)) {
        t.replace(p, x.size(), fmt::format(" ${} ", i));
        related = true;
      }
    }
    if (related) r.dropped_as[j] = std::string(util::trim(t));
    // A constant the new call drops (`ida_simple_get(ida, 0, 0, gfp)` -> `ida_alloc(ida, gfp)`):
    // the rule holds where the driver passes that constant too, not where it passes a limit the
    // new call would lose (`ida_simple_get(ida, 0, 16, gfp)` is `ida_alloc_max(ida, 15, gfp)`).
    else if (is_constant_literal(old_args[j])) r.dropped_as[j] = old_args[j];
    // A new argument made of the dropped one's parts (`single_open(f, s, PDE_DATA(inode))` ->
    // `single_open(f, s, pde_data(inode))`): `inode` is the site's, not the rule's; the rule holds
    // only where the driver wrote that argument so.
    else if (shares_identifier(old_args[j], r.args)) r.dropped_as[j] = std::string(util::trim(t));
  }
}

CallRule parse_call_key(const std::string& key) {
  CallRule r;
  auto open = key.find('(');
  auto slash = key.rfind(")/");
  r.callee = key.substr(0, open);
  std::string tail = key.substr(slash + 2);
  for (auto bar = tail.rfind('|'); bar != std::string::npos; bar = tail.rfind('|')) {
    std::string c = tail.substr(bar + 1);
    auto eq = c.find('=');
    std::string text = c.substr(eq + 1);
    std::replace(text.begin(), text.end(), '\x1f', '|');
    r.dropped_as[std::stoul(c.substr(0, eq))] = text;
    tail.resize(bar);
  }
  r.old_arity = std::stoul(tail);
  std::string inner = key.substr(open + 1, slash - open - 1);
  std::size_t pos = 0;
  while (!inner.empty()) {
    auto comma = inner.find(", ", pos);
    r.args.push_back(inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 2;
  }
  return r;
}

int arg_overlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  int n = 0;
  for (const auto& x : a)
    for (const auto& y : b)
      if (x == y || (!x.empty() && y.find(x) != std::string::npos)) ++n;
  return n;
}

/// Calls of `sym` outside every function and initializer, standing as statements of their own
/// (file-scope macros: `MODULE_IMPORT_NS(NS);`, not a prototype `int sym(int);`).
std::vector<Call> file_scope_calls(const SourceFile& f, const std::string& sym) {
  std::vector<Call> out;
  if (f.tokens.empty()) return out;
  std::vector<bool> inside(f.tokens.size(), false);
  for (const auto& u : f.units)
    for (std::size_t k = u.first; k <= u.last && k < inside.size(); ++k) inside[k] = true;
  for (auto& c : find_calls(f.tokens, 0, f.tokens.size() - 1)) {
    if (c.callee != sym || inside[c.name_tok]) continue;
    const std::string prev = c.name_tok ? f.tokens[c.name_tok - 1].text : ";";
    if (prev == ";" || prev == "}" || prev == ")") out.push_back(std::move(c));
  }
  return out;
}

void learn_call_votes(SiteIndex& idx, const std::string& sym, std::map<std::string, Vote>& votes, int& unchanged) {
  for (const auto& pair : idx.pairs_using(sym, 60)) {
    const auto& before = *pair.before;
    const auto& after = *pair.after;
    {
      auto olds = file_scope_calls(before, sym), news = file_scope_calls(after, sym);
      if (olds.size() == news.size())
        for (std::size_t i = 0; i < olds.size(); ++i) {
          if (news[i].args == olds[i].args) {
            ++unchanged;
            continue;
          }
          CallRule r;
          r.callee = sym;
          r.old_arity = olds[i].args.size();
          for (const auto& a : news[i].args) r.args.push_back(template_arg(a, olds[i].args));
          note_dropped(r, olds[i].args);
          add_vote(votes, r.key(), before.rel);
        }
    }
    for (const auto& u : before.units) {
      if (u.kind != UnitKind::function) continue;
      auto old_calls = find_calls(before.tokens, u.first, u.last);
      std::vector<Call> olds;
      std::set<std::string> old_callees;
      for (auto& c : old_calls) {
        old_callees.insert(c.callee);
        if (c.callee == sym) olds.push_back(c);
      }
      if (olds.empty()) continue;
      const Unit* nu = after.unit(u.name);
      if (!nu || nu->kind != UnitKind::function) continue;
      auto new_calls = find_calls(after.tokens, nu->first, nu->last);
      std::vector<Call> news;
      for (auto& c : new_calls)
        if (c.callee == sym) news.push_back(c);
      if (news.empty()) {
        // Renamed or replaced: a callee new to this function, called as often, sharing arguments.
        std::map<std::string, std::vector<Call>> by_callee;
        for (auto& c : new_calls)
          if (!old_callees.count(c.callee)) by_callee[c.callee].push_back(c);
        int best = -1;
        // With no argument to anchor the pairing (a call without arguments), the new call must
        // stand where the old one stood: the same token before it and after it (`x = old();` ->
        // `x = new();`), not merely be some call new to the function.
        auto same_place = [&](const std::vector<Call>& calls) {
          auto text = [](const std::vector<Token>& t, std::size_t i) { return i < t.size() ? t[i].text : std::string(); };
          for (std::size_t i = 0; i < calls.size(); ++i)
            if (olds[i].name_tok == 0 || calls[i].name_tok == 0 ||
                text(before.tokens, olds[i].name_tok - 1) != text(after.tokens, calls[i].name_tok - 1) ||
                text(before.tokens, olds[i].close_tok + 1) != text(after.tokens, calls[i].close_tok + 1))
              return false;
          return true;
        };
        for (auto& [callee, calls] : by_callee) {
          if (calls.size() != olds.size()) continue;
          int ov = 0;
          for (std::size_t i = 0; i < calls.size(); ++i) ov += arg_overlap(olds[i].args, calls[i].args);
          if (ov > best && (ov > 0 || (olds[0].args.empty() && same_place(calls)))) {
            best = ov;
            news = calls;
          }
        }
      }
      if (news.size() != olds.size()) continue;
      for (std::size_t i = 0; i < olds.size(); ++i) {
        if (news[i].callee == sym && news[i].args == olds[i].args) {
          ++unchanged;
          continue;
        }
        CallRule r;
        r.callee = news[i].callee;
        r.old_arity = olds[i].args.size();
        for (const auto& a : news[i].args) r.args.push_back(template_arg(a, olds[i].args));
        literal_copies_stay_literal(r.args, news[i].args, olds[i].args);
        note_dropped(r, olds[i].args);
        add_vote(votes, r.key(), before.rel);
      }
    }
  }
}

std::string call_smpl(const std::string& sym, const CallRule& r) {
  // SmPL cannot make a string of an identifier: the token rewrite (CallRewrite) does it.
  for (const auto& a : r.args)
    if (a.find("\"$") != std::string::npos) return {};
  std::string metas, old_args, new_args;
  for (std::size_t i = 0; i < r.old_arity; ++i) {
    auto d = r.dropped_as.find(i);
    if (d == r.dropped_as.end()) metas += (metas.empty() ? "" : ", ") + fmt::format("E{}", i);
    old_args +=
        (i ? ", " : "") + (d == r.dropped_as.end()
                               ? fmt::format("E{}", i)
                               : c_text(util::split_words(std::regex_replace(d->second, std::regex(R"(\$(\d+))"), "E$1"))));
  }
  for (std::size_t i = 0; i < r.args.size(); ++i) {
    std::string a = std::regex_replace(r.args[i], std::regex(R"(\$(\d+))"), "E$1");
    new_args += (i ? ", " : "") + c_text(util::split_words(a));
  }
  std::string head = !metas.empty() ? fmt::format("@@\nexpression {};\n@@\n", metas) : "@@\n@@\n";
  return head + fmt::format("- {}({})\n+ {}({})\n", sym, old_args, r.callee, new_args);
}

std::string describe_call(const std::string& sym, const CallRule& r, std::string& label) {
  std::vector<std::string> kept;
  bool reordered = false;
  int prev = -1;
  for (const auto& a : r.args)
    if (a.size() >= 2 && a[0] == '$' && std::isdigit(static_cast<unsigned char>(a[1])) && a.find(' ') == std::string::npos) {
      int i = std::stoi(a.substr(1));
      if (i < prev) reordered = true;
      prev = i;
      kept.push_back(a);
    }
  std::string what;
  if (r.callee != sym) {
    label = "rename";
    what = fmt::format("{}() was replaced by {}()", sym, r.callee);
    if (r.args.size() != r.old_arity || kept.size() != r.args.size()) {
      label = "removed-with-replacement";
      what += " with different arguments";
    }
  } else {
    label = "arguments-changed";
    if (r.args.size() < r.old_arity)
      what = fmt::format("{}() takes {} argument(s) instead of {}", sym, r.args.size(), r.old_arity);
    else if (r.args.size() > r.old_arity)
      what = fmt::format("{}() takes {} argument(s) instead of {}", sym, r.args.size(), r.old_arity);
    else if (reordered) what = fmt::format("{}() takes its arguments in another order", sym);
    else if (std::any_of(r.args.begin(), r.args.end(), [](const std::string& a) { return a.starts_with("\"$"); }))
      what = fmt::format("{}() takes a string literal where it took a name", sym);
    else what = fmt::format("{}() takes different arguments", sym);
  }
  return what;
}

// --- designated initializer members ----------------------------------------------------------

std::string struct_tag(const std::string& type_symbol) {
  // "struct i2c_driver" -> "i2c_driver"
  auto sp = type_symbol.rfind(' ');
  return sp == std::string::npos ? type_symbol : type_symbol.substr(sp + 1);
}

void learn_member_votes(SiteIndex& idx, const std::string& type_symbol, const std::string& member,
                        std::map<std::string, Vote>& votes, int& unchanged) {
  std::string tag = struct_tag(type_symbol);
  for (const auto& pair : idx.pairs_using(tag, 80)) {
    const auto& before = *pair.before;
    const auto& after = *pair.after;
    for (const auto& u : before.units) {
      if (u.kind != UnitKind::initializer || !has_word(u.type, tag)) continue;
      auto olds = designated_members(before.tokens, u);
      auto it = std::find_if(olds.begin(), olds.end(), [&](const auto& d) { return d.member == member; });
      if (it == olds.end()) continue;
      const Unit* nu = after.unit(u.name);
      if (!nu || nu->kind != UnitKind::initializer) continue;
      // An object declared with another struct type now did not lose a member: its whole type
      // went (struct-convert learns those conversions).
      if (!has_word(nu->type, tag)) continue;
      auto news = designated_members(after.tokens, *nu);
      auto same = std::find_if(news.begin(), news.end(), [&](const auto& d) { return d.member == member; });
      if (same != news.end()) {
        ++unchanged;
        continue;
      }
      std::set<std::string> old_members;
      for (const auto& d : olds) old_members.insert(d.member);
      std::string to;
      for (const auto& d : news)
        if (!old_members.count(d.member) && d.value == it->value) to = d.member;
      add_vote(votes, to.empty() ? "remove" : "rename:" + to, before.rel);
    }
  }
}

std::string member_smpl(const std::string& type_symbol, const std::string& member, const std::string& decision,
                        const std::string& fixed_value) {
  std::string value = fixed_value.empty() ? "E" : fixed_value;
  std::string metas = fixed_value.empty() ? "identifier x;\nexpression E;\n" : "identifier x;\n";
  if (decision == "remove") return fmt::format("@@\n{}@@\n{} x = {{\n-\t.{} = {},\n}};\n", metas, type_symbol, member, value);
  std::string to = decision.substr(7);
  return fmt::format("@@\n{}@@\n{} x = {{\n-\t.{} = {},\n+\t.{} = {},\n}};\n", metas, type_symbol, member, value, to, value);
}

// --- identifiers used as values (constants, functions used as pointers) -----------------------

void learn_identifier_votes(SiteIndex& idx, const std::string& sym, std::map<std::string, Vote>& votes,
                            std::map<std::string, std::string>& member_of_removal) {
  for (const auto& pair : idx.pairs_using(sym, 60)) {
    const auto& before = *pair.before;
    const auto& after = *pair.after;
    for (const auto& u : before.units) {
      bool uses = false;
      for (std::size_t i = u.first; i <= u.last && i < before.tokens.size(); ++i)
        if (before.tokens[i].kind == TokKind::ident && before.tokens[i].text == sym) uses = true;
      if (!uses) continue;
      const Unit* nu = after.unit(u.name);
      if (!nu) continue;
      if (u.kind == UnitKind::initializer) {
        // ".member = sym" removed or given another value.
        auto olds = designated_members(before.tokens, u);
        auto news = designated_members(after.tokens, *nu);
        for (const auto& d : olds) {
          if (d.value != sym) continue;
          auto same = std::find_if(news.begin(), news.end(), [&](const auto& x) { return x.member == d.member; });
          if (same == news.end()) {
            add_vote(votes, "remove-member:" + d.member, before.rel);
            member_of_removal[d.member] = u.type;
          } else if (same->value != sym && is_identifier(same->value)) {
            add_vote(votes, "replace:" + same->value, before.rel);
          }
        }
        continue;
      }
      auto hunks = diff_tokens(before.tokens, u.first, u.last, after.tokens, nu->first, nu->last);
      for (std::size_t hi = 0; hi < hunks.size(); ++hi) {
        const auto& h = hunks[hi];
        if (h.a_count != 1 || before.tokens[h.a_first].text != sym) continue;
        // Only an isolated one-token change is a rename: "features |= X" -> "lltx = true" is a
        // rewrite of the statement whose pieces happen to diff token by token.
        auto near = [&](const TokenHunk& o) {
          auto gap_a = o.a_first > h.a_first ? o.a_first - (h.a_first + h.a_count) : h.a_first - (o.a_first + o.a_count);
          auto gap_b = o.b_first > h.b_first ? o.b_first - (h.b_first + h.b_count) : h.b_first - (o.b_first + o.b_count);
          return gap_a < 3 || gap_b < 3;
        };
        if ((hi > 0 && near(hunks[hi - 1])) || (hi + 1 < hunks.size() && near(hunks[hi + 1]))) continue;
        if (h.b_count == 1 && after.tokens[h.b_first].kind == TokKind::ident)
          add_vote(votes, "replace:" + after.tokens[h.b_first].text, before.rel);
      }
    }
  }
}

// --- statement rewrites (anti-unified) --------------------------------------------------------

/// The kernel's own functions that used `sym` and no longer do: each changed statement that used
/// it, paired with what replaced it, anti-unified into a template (and its expression core).
/// Where an old token outside every diff hunk sits in the new sequence (npos inside a hunk):
/// the diff's alignment, which holds even when the LCS splits one rewritten statement into a
/// deletion and an insertion.
struct Alignment {
  const std::vector<TokenHunk>& hunks;
  std::size_t a0, b0; ///< the ranges' first tokens (aligned)
  std::size_t operator()(std::size_t i) const {
    long delta = static_cast<long>(b0) - static_cast<long>(a0);
    for (const auto& h : hunks) {
      if (i >= h.a_first && i < h.a_first + h.a_count) return std::string::npos;
      if (h.a_first + h.a_count > i) break;
      delta = static_cast<long>(h.b_first + h.b_count) - static_cast<long>(h.a_first + h.a_count);
    }
    return static_cast<std::size_t>(static_cast<long>(i) + delta);
  }
};

/// A member access the kernel rewrote as another member path (`E->wol_enabled` ->
/// `E->ethtool->wol_enabled`, `E.cpu_core_id` -> `E.topo.core_id`): the tokens around `op sym`
/// are unchanged and what the new code has between them is `op ident (op ident)*`. Read off the
/// diff's alignment, so an insertion (`ethtool ->`) counts as well as a replacement.
void member_path_votes(const SourceFile& before, const SourceFile& after, const Unit& u, const Unit& nu,
                       const std::vector<TokenHunk>& hunks, const std::string& sym, std::map<std::string, Vote>& votes,
                       std::map<std::string, StmtTemplate>& templates) {
  const auto& a = before.tokens;
  const auto& b = after.tokens;
  const Alignment mapped{hunks, u.body, nu.body};
  for (std::size_t s = u.body + 2; s + 1 <= u.last; ++s) {
    if (a[s].text != sym || (a[s - 1].text != "->" && a[s - 1].text != ".")) continue;
    std::size_t l = mapped(s - 2), r = mapped(s + 1);
    if (l == std::string::npos || r == std::string::npos || r <= l + 1 || r - l - 1 > 7) continue;
    std::vector<std::string> path;
    for (std::size_t k = l + 1; k < r; ++k) path.push_back(b[k].text);
    bool chain = path.size() >= 2 && path.size() % 2 == 0;
    for (std::size_t k = 0; chain && k < path.size(); ++k)
      chain = k % 2 == 0 ? (path[k] == "->" || path[k] == ".") : b[l + 1 + k].kind == TokKind::ident;
    if (!chain || (path.size() == 2 && path[1] == sym)) continue;
    StmtTemplate t;
    t.before = {"$0", a[s - 1].text, sym};
    t.after = {"$0"};
    t.after.insert(t.after.end(), path.begin(), path.end());
    t.holes = 1;
    t.expression = true;
    add_vote(votes, "expr:" + t.key(), before.rel);
    templates["expr:" + t.key()] = t;
  }
}

/// Vote key of "the flag was dropped from OR chains" (no template).
const std::string k_or_drop = "or-drop";

/// `where` picks the kernel files to read: the symbol itself, or for a member the struct's
/// "struct tag" (a member name like `file` is everywhere; `struct fd` finds the files that use it).
/// Files in `read` are skipped (and added), so two searches never count a file twice.
void learn_statement_votes(SiteIndex& idx, const std::string& sym, const std::string& where, std::map<std::string, Vote>& votes,
                           std::map<std::string, StmtTemplate>& templates, std::set<std::string>& read) {
  auto texts = [](const std::vector<Token>& toks, std::size_t a, std::size_t b) {
    std::vector<std::string> out;
    for (std::size_t k = a; k <= b; ++k) out.push_back(toks[k].text);
    return out;
  };
  for (const auto& pair : idx.pairs_using(where, 60, SiteIndex::Pairs::changed)) {
    const auto& before = *pair.before;
    const auto& after = *pair.after;
    if (!read.insert(before.rel).second) continue; // counted by an earlier search
    for (const auto& u : before.units) {
      const Unit* nu = after.unit(u.name);
      if (!nu || nu->kind != u.kind) continue;
      // A flag dropped from an OR chain (`I2C_CLASS_HWMON | I2C_CLASS_SPD` -> `I2C_CLASS_HWMON`),
      // in an initializer or a statement: the hunk is just `| FLAG` or `FLAG |`.
      auto hunks = diff_tokens(before.tokens, u.body, u.last, after.tokens, nu->body, nu->last);
      for (const auto& h : hunks) {
        if (h.b_count != 0 || h.a_count != 2) continue;
        const auto& t0 = before.tokens[h.a_first].text;
        const auto& t1 = before.tokens[h.a_first + 1].text;
        if ((t0 == "|" && t1 == sym) || (t0 == sym && t1 == "|")) add_vote(votes, k_or_drop, before.rel);
      }
      if (u.kind != UnitKind::function) continue;
      member_path_votes(before, after, u, *nu, hunks, sym, votes, templates);
      std::set<std::size_t> seen; // old statements already voted for
      // A deleted statement is evidence of a call removed without replacement only when the
      // function calls nothing new (else the work moved elsewhere, e.g. three calls merged into one).
      std::set<std::string> old_callees;
      for (const auto& c : find_calls(before.tokens, u.first, u.last)) old_callees.insert(c.callee);
      bool calls_something_new = false;
      for (const auto& c : find_calls(after.tokens, nu->first, nu->last))
        if (!old_callees.count(c.callee)) calls_something_new = true;
      for (const auto& h : hunks) {
        if (h.a_count == 0) continue;
        bool has = false;
        for (std::size_t k = h.a_first; k < h.a_first + h.a_count; ++k)
          if (before.tokens[k].text == sym) has = true;
        if (!has) continue;
        auto os = enclosing_statements(before.tokens, h.a_first, h.a_first + h.a_count - 1, u.body + 1, u.last);
        if (!os || !seen.insert(os->first).second) continue;
        std::vector<std::string> neu;
        // The new statement(s): what lies between the images of the tokens around the old ones.
        const Alignment align{hunks, u.body, nu->body};
        std::size_t l = align(os->first - 1), r = align(os->second + 1);
        if (l != std::string::npos && r != std::string::npos && r > l + 1) {
          neu = texts(after.tokens, l + 1, r - 1);
        } else if (h.b_count > 0) {
          auto ns = enclosing_statements(after.tokens, h.b_first, h.b_first + h.b_count - 1, nu->body + 1, nu->last);
          if (!ns) continue;
          neu = texts(after.tokens, ns->first, ns->second);
        } else if (os->first < h.a_first || os->second >= h.a_first + h.a_count || calls_something_new) {
          continue; // part of a statement vanished, or its work moved elsewhere: not a deletion
        }
        if (std::find(neu.begin(), neu.end(), sym) != neu.end()) continue;
        auto t = anti_unify(texts(before.tokens, os->first, os->second), neu, sym);
        if (!t) continue;
        add_vote(votes, t->key(), before.rel);
        templates[t->key()] = *t;
        if (auto e = narrow_to_expression(*t, sym)) {
          add_vote(votes, "expr:" + e->key(), before.rel);
          templates["expr:" + e->key()] = *e;
        }
      }
    }
  }
}

// --- the proposer ----------------------------------------------------------------------------

class LearnedRewrite final : public Proposer {
public:
  std::string_view id() const override { return "learned-rewrite"; }

  std::vector<Edit> propose(const std::vector<Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.old_src.empty() || ctx.new_src.empty()) return out;
    SiteIndex& idx = m_sites.get(ctx);

    std::set<std::string> calls, idents, merges, as_files;
    // Macros asked about without a diagnostic naming them: only a convention of the kernel's
    // (several sites changed alike) is worth a trial, not one file's own rewording.
    std::set<std::string> probed;
    std::set<std::pair<std::string, std::string>> stmts; // symbol, where to look for it
    std::set<std::pair<std::string, std::string>> members;
    for (const auto& d : diags) {
      if (d.severity == core::Severity::warning && d.kind != DiagKind::implicit_function_declaration) continue;
      // A kernel macro the driver invokes on the erroring line, whatever the message says about
      // its expansion (`MODULE_IMPORT_NS(NS)` now wants a string: "'NS' undeclared").
      for (const auto& n : d.notes) {
        static const std::regex k_expansion(R"(^in expansion of macro '([A-Za-z_]\w*)'$)");
        std::smatch m;
        if (n.file == d.file && n.line == d.line && !n.file.empty() && n.file.front() != '/' &&
            std::regex_match(n.message, m, k_expansion) && probed.size() < 24)
          probed.insert(m[1].str());
      }
      // The assembler choked on what a file-scope macro emitted (no source line to go by): each
      // macro the file invokes at file scope is asked of the kernel's own changes.
      if (d.tool == "as" && d.severity == core::Severity::error && !d.file.empty() && d.file.front() != '/' &&
          as_files.insert(d.file).second)
        if (auto text = util::read_file(ctx.tree / d.file)) {
          SourceFile f;
          f.tokens = tokenize(*text);
          f.units = find_units(f.tokens);
          std::set<std::string> names;
          if (!f.tokens.empty())
            for (const auto& c : find_calls(f.tokens, 0, f.tokens.size() - 1)) names.insert(c.callee);
          for (const auto& n : names)
            if (probed.size() < 24 && !calls.count(n) && !file_scope_calls(f, n).empty()) probed.insert(n);
        }
      if (d.symbols.empty()) continue;
      switch (d.kind) {
      case DiagKind::implicit_function_declaration:
      case DiagKind::too_few_arguments:
      case DiagKind::too_many_arguments:
      case DiagKind::modpost_undefined_symbol:
      case DiagKind::incompatible_type:
        if (is_identifier(d.symbols[0])) calls.insert(d.symbols[0]);
        if (d.kind == DiagKind::implicit_function_declaration && is_identifier(d.symbols[0])) {
          stmts.insert({d.symbols[0], d.symbols[0]});
          merges.insert(d.symbols[0]);
        }
        break;
      case DiagKind::int_conversion:
      case DiagKind::incompatible_pointer_type:
        if (d.symbols.size() == 1 && is_identifier(d.symbols[0])) calls.insert(d.symbols[0]);
        break;
      case DiagKind::undeclared_identifier:
      case DiagKind::unknown_type:
        if (is_identifier(d.symbols[0])) idents.insert(d.symbols[0]);
        if (d.kind == DiagKind::undeclared_identifier && is_identifier(d.symbols[0])) stmts.insert({d.symbols[0], d.symbols[0]});
        break;
      case DiagKind::no_member:
        if (d.symbols.size() >= 2 && d.symbols[0].starts_with("struct ")) members.insert({d.symbols[0], d.symbols[1]});
        if (d.symbols.size() >= 2 && is_identifier(d.symbols[1]))
          stmts.insert({d.symbols[1],
                        d.symbols[0].starts_with("struct ") || d.symbols[0].starts_with("union ") ? d.symbols[0] : d.symbols[1]});
        break;
      case DiagKind::read_only_member:
        if (is_identifier(d.symbols[0])) stmts.insert({d.symbols[0], d.symbols[0]});
        break;
      default: break;
      }
    }
    // An undeclared call of a function the target's headers still declare wants an include
    // (header-fix), not a rewrite the kernel's drivers made for other reasons (crypto_tfm_ctx
    // moved to <crypto/algapi.h>; some drivers had also switched to crypto_shash_ctx).
    if (ctx.to) {
      std::optional<TargetIndex> declared;
      for (const auto& d : diags) {
        if (d.kind != DiagKind::implicit_function_declaration || d.symbols.empty() || !calls.count(d.symbols[0])) continue;
        if (!declared) declared.emplace(ctx.new_src, ctx.to->build_dir);
        if (declared->names().count(d.symbols[0])) calls.erase(d.symbols[0]);
      }
    }
    for (const auto& sym : calls) learn_call(idx, sym, out);
    for (const auto& sym : probed)
      if (!calls.count(sym)) learn_call(idx, sym, out, 3, Majority::yes);
    for (const auto& [type, member] : members) learn_member(idx, type, member, out);
    for (const auto& sym : idents) learn_identifier(idx, sym, out);
    // A constant no kernel file used itself: what the kernel did to its family (same prefix).
    int family_attempts = 0;
    std::optional<TargetIndex> target;
    for (const auto& sym : idents) {
      bool learned = std::any_of(out.begin(), out.end(), [&](const Edit& e) { return e.change_id == "ident:" + sym; });
      bool in_family = std::any_of(out.begin(), out.end(), [&](const Edit& e) {
        return e.change_id.starts_with("family:") &&
               std::any_of(e.renames.begin(), e.renames.end(), [&](const auto& r) { return r.first == sym; });
      });
      if (learned || in_family || !ctx.to) continue;
      // Each attempt greps the old tree once per prefix: a few names per round are enough (the
      // family's rule renames all its members at once).
      if (++family_attempts > 6) break;
      if (!target) target.emplace(ctx.new_src, ctx.to->build_dir);
      if (auto f = learn_family_rename(idx, ctx, sym, target->names()); f) out.push_back(std::move(*f));
    }
    for (const auto& [sym, where] : stmts) learn_statement(idx, sym, where, out);
    for (const auto& sym : merges) learn_merge(idx, sym, out);
    drop_outvoted_calls(out);
    return out;
  }

  /// Where the kernel's own code mostly deleted the call statement (pci_enable_pcie_error_reporting,
  /// 6.5: the PCI core enables AER itself), a "replacement" read off the few functions that
  /// happened to call something new with the same argument is noise: call rules with less support
  /// than the deletion go.
  static void drop_outvoted_calls(std::vector<Edit>& out) {
    std::map<std::string, int> deleted;
    for (const auto& e : out)
      if (e.change_id.starts_with("stmt:") && e.label == "removed-with-replacement" && !e.symbols.empty())
        deleted[e.symbols[0]] = std::max(deleted[e.symbols[0]], e.support);
    std::erase_if(out, [&](const Edit& e) {
      if (!e.change_id.starts_with("call:")) return false;
      auto it = deleted.find(e.change_id.substr(5));
      return it != deleted.end() && it->second > e.support;
    });
  }

private:
  SiteIndexCache m_sites;

  /// A call no diagnostic names (a macro expanded on the erroring line) is only worth a rule when
  /// the kernel changed most of its own sites: a few rewritten among many kept (memmove gaining a
  /// cast at 3 sites while 77 kept theirs) is one file's taste, not the API's change.
  enum class Majority { no, yes };

  void learn_call(SiteIndex& idx, const std::string& sym, std::vector<Edit>& out, int min_support = 1,
                  Majority majority = Majority::no) {
    std::map<std::string, Vote> votes;
    int unchanged = 0;
    learn_call_votes(idx, sym, votes, unchanged);
    int rank = 0;
    for (const auto& [key, vote] : ranked(votes)) {
      if (rank >= 3 || vote.count < min_support) break;
      if (majority == Majority::yes && vote.count <= unchanged) break;
      CallRule r = parse_call_key(key);
      Edit e;
      e.proposer = "learned-rewrite";
      e.change_id = "call:" + sym;
      e.title = describe_call(sym, r, e.label);
      e.smpl = call_smpl(sym, r);
      if (r.dropped_as.empty()) e.call = CallRewrite{sym, r.old_arity, r.callee, r.args}; // tokens cannot check the form
      e.symbols = {sym};
      if (r.callee != sym) e.symbols.push_back(r.callee);
      e.support = vote.count;
      e.rank = rank++;
      e.evidence = vote.files;
      e.description = fmt::format("{}. Learned from {} call site(s) the kernel's own code changed between the two "
                                  "trees ({} site(s) kept the old form), e.g. {}.",
                                  e.title, vote.count, unchanged, fmt::join(vote.files, ", "));
      for (const auto& [i, t] : r.dropped_as)
        e.description += fmt::format(" The argument dropped was `{}` at those sites; the rule applies only where the "
                                     "driver writes it so.",
                                     c_text(util::split_words(std::regex_replace(t, std::regex(R"(\$(\d+))"), "arg$1"))));
      if (e.smpl.empty() && !e.call) continue;
      out.push_back(std::move(e));
    }
    util::log_debug("learned-rewrite: {}: {} rule(s), {} unchanged site(s)", sym, votes.size(), unchanged);
  }

  void learn_member(SiteIndex& idx, const std::string& type, const std::string& member, std::vector<Edit>& out) {
    std::map<std::string, Vote> votes;
    int unchanged = 0;
    learn_member_votes(idx, type, member, votes, unchanged);
    int rank = 0;
    for (const auto& [decision, vote] : ranked(votes)) {
      if (rank >= 2) break;
      Edit e;
      e.proposer = "learned-rewrite";
      e.change_id = "member:" + type + "." + member;
      e.label = "member-changed";
      e.title = decision == "remove" ? fmt::format("{} lost the member .{}", type, member)
                                     : fmt::format("{}.{} was renamed to .{}", type, member, decision.substr(7));
      e.smpl = member_smpl(type, member, decision, "");
      e.symbols = {type, member};
      e.support = vote.count;
      e.rank = rank++;
      e.evidence = vote.files;
      e.description = fmt::format("{}. Learned from {} initializer(s) of {} in the kernel's own drivers, e.g. {}.", e.title,
                                  vote.count, type, fmt::join(vote.files, ", "));
      out.push_back(std::move(e));
    }
  }

  void learn_statement(SiteIndex& idx, const std::string& sym, const std::string& where, std::vector<Edit>& out) {
    std::map<std::string, Vote> votes;
    std::map<std::string, StmtTemplate> templates;
    std::set<std::string> read;
    learn_statement_votes(idx, sym, where, votes, templates, read);
    // A member the struct's users rarely touch (net_device.wol_enabled) is not in the first
    // files using the struct: the files using the member's own name count too.
    if (where != sym) learn_statement_votes(idx, sym, sym, votes, templates, read);
    int rank = 0;
    for (const auto& [key, vote] : ranked(votes)) {
      if (rank >= 3) break;
      if (key == k_or_drop) {
        if (vote.count < 2) continue;
        Edit e;
        e.proposer = "learned-rewrite";
        e.change_id = "stmt:" + sym;
        e.label = "removed-with-replacement";
        e.title = fmt::format("{} was removed: drop it from OR-ed flags", sym);
        e.smpl = fmt::format("@@\nexpression E;\n@@\n(\n- E | {0}\n+ E\n|\n- {0} | E\n+ E\n)\n", sym);
        e.symbols = {sym};
        e.support = vote.count;
        e.rank = rank++;
        e.evidence = vote.files;
        e.description = fmt::format("{}. Learned from {} OR-ed flag list(s) the kernel's own code dropped it from, e.g. {}.",
                                    e.title, vote.count, fmt::join(vote.files, ", "));
        out.push_back(std::move(e));
        continue;
      }
      const StmtTemplate& t = templates[key];
      if (t.after.empty() && vote.count < 2) continue; // one deletion is not a convention
      auto show = [](const std::vector<std::string>& side) {
        std::vector<std::string> ts;
        for (const auto& x : side) ts.push_back(x[0] == '$' ? "E" + x.substr(1) : x);
        return join_c_tokens(ts);
      };
      Edit e;
      e.proposer = "learned-rewrite";
      e.change_id = "stmt:" + sym;
      e.label = t.after.empty() ? "removed-with-replacement" : "other";
      e.title = t.after.empty() ? fmt::format("{} was removed: drop {}", sym, show(t.before))
                                : fmt::format("{} -> {}", show(t.before), show(t.after));
      e.smpl = template_smpl(t);
      if (auto flags = flag_variants_smpl(t, sym); !flags.empty()) e.smpl = flags + "\n" + e.smpl;
      e.symbols = {sym};
      e.support = vote.count;
      e.rank = rank++;
      e.evidence = vote.files;
      e.description = fmt::format("{}. Learned from {} {} the kernel's own code rewrote this way, e.g. {}.", e.title, vote.count,
                                  t.expression ? "expression(s)" : "statement(s)", fmt::join(vote.files, ", "));
      out.push_back(std::move(e));
    }
    util::log_debug("learned-rewrite: statements using {}: {} template(s)", sym, votes.size());
  }

  void learn_merge(SiteIndex& idx, const std::string& sym, std::vector<Edit>& out) {
    int rank = 0;
    for (const auto& m : learn_merges(idx, sym)) {
      if (rank >= 2) break;
      std::vector<std::string> names;
      for (const auto& [c, n] : m.rule.calls)
        names.push_back(c.starts_with("=") ? fmt::format("the .{} assignment", c.substr(2)) : c + "()");
      std::string list = names.size() == 2
                             ? names[0] + " and " + names[1]
                             : fmt::format("{} and {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
      Edit e;
      e.proposer = "learned-rewrite";
      e.change_id = "merge:" + sym;
      e.label = "removed-with-replacement";
      e.title = fmt::format("{} were merged into {}()", list, m.rule.callee);
      e.smpl = merge_smpl(m.rule);
      e.symbols = {sym, m.rule.callee};
      e.support = m.count;
      e.rank = rank++;
      e.evidence = m.files;
      e.description = fmt::format("{}. Learned from {} function(s) the kernel's own code changed this way, e.g. {}.", e.title,
                                  m.count, fmt::join(m.files, ", "));
      out.push_back(std::move(e));
    }
  }

  void learn_identifier(SiteIndex& idx, const std::string& sym, std::vector<Edit>& out) {
    std::map<std::string, Vote> votes;
    std::map<std::string, std::string> member_type;
    learn_identifier_votes(idx, sym, votes, member_type);
    int rank = 0;
    for (const auto& [decision, vote] : ranked(votes)) {
      if (rank >= 2) break;
      // A removed member whose initializer's struct type was not read: no rule (never a guess).
      if (!decision.starts_with("replace:") && member_type[decision.substr(14)].empty()) continue;
      Edit e;
      e.proposer = "learned-rewrite";
      e.change_id = "ident:" + sym;
      e.support = vote.count;
      e.rank = rank++;
      e.evidence = vote.files;
      e.symbols = {sym};
      if (decision.starts_with("replace:")) {
        std::string to = decision.substr(8);
        e.label = "rename";
        e.title = fmt::format("{} was replaced by {}", sym, to);
        e.renames = {{sym, to}};
        e.symbols.push_back(to);
      } else {
        std::string member = decision.substr(14);
        std::string type = member_type[member];
        e.label = "removed-with-replacement";
        e.title = fmt::format("{} was removed: drop .{} = {}", sym, member, sym);
        e.smpl = fmt::format("@@\nidentifier x;\n@@\n{} x = {{\n-\t.{} = {},\n}};\n", type, member, sym);
      }
      e.description = fmt::format("{}. Learned from {} use(s) the kernel's own code changed, e.g. {}.", e.title, vote.count,
                                  fmt::join(vote.files, ", "));
      out.push_back(std::move(e));
    }
  }
};

} // namespace

std::unique_ptr<Proposer> make_learned_rewrite() { return std::make_unique<LearnedRewrite>(); }

} // namespace autodriver::propose
