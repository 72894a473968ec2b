#include "autodriver/propose/shared/call_merge.hpp"

#include "autodriver/csrc/tokens.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

/// Token `i` opens a statement: what precedes it ends one (or is a preprocessor line).
bool starts_statement(const std::vector<Token>& toks, std::size_t i) {
  if (i == 0) return false;
  const Token& prev = toks[i - 1];
  return prev.kind == TokKind::pp_line || prev.text == ";" || prev.text == "{" || prev.text == "}";
}

bool statement_call(const std::vector<Token>& toks, const Call& c) {
  if (c.close_tok + 1 >= toks.size() || toks[c.close_tok + 1].text != ";") return false;
  return starts_statement(toks, c.name_tok);
}

/// Statement member assignments `E.m = V;` / `P->m = V;` in [first, last] as pseudo-calls on the
/// object a call would take (`& E` / `P`): callee "=.m", args {object, V}. They merge
/// into a new call like calls do (6.15: `hrtimer_init(&t, c, m); t.function = f;` ->
/// `hrtimer_setup(&t, f, c, m);`).
std::vector<Call> member_assignments(const std::vector<Token>& toks, std::size_t first, std::size_t last) {
  std::vector<Call> out;
  for (std::size_t i = first + 1; i <= last && i < toks.size(); ++i) {
    if (!starts_statement(toks, i) || toks[i].kind != TokKind::ident) continue;
    std::size_t eq = 0, semi = 0;
    int depth = 0;
    for (std::size_t k = i; k <= last && k < toks.size(); ++k) {
      const std::string& x = toks[k].text;
      if (x == "(" || x == "[") ++depth;
      else if (x == ")" || x == "]") --depth;
      else if (x == "{" || x == "}") break;
      else if (depth == 0 && x == "=" && !eq) eq = k;
      else if (depth == 0 && x == ";") {
        semi = k;
        break;
      }
    }
    if (!eq || !semi || eq < i + 2 || semi < eq + 2) continue;
    const std::string& op = toks[eq - 2].text;
    if ((op != "." && op != "->") || toks[eq - 1].kind != TokKind::ident || eq - 2 <= i - 1 || eq - 2 == i) continue;
    Call c;
    c.callee = "=." + toks[eq - 1].text; // the operator shows in the object's form
    std::string object = join_tokens(toks, i, eq - 3);
    c.args = {op == "." ? "& " + object : object, join_tokens(toks, eq + 1, semi - 1)};
    c.name_tok = i;
    c.close_tok = semi - 1;
    out.push_back(std::move(c));
  }
  return out;
}

bool literal(const std::string& a) {
  return !a.empty() && (std::isdigit(static_cast<unsigned char>(a[0])) || a == "NULL" || a == "true" || a == "false");
}

/// The rule one changed function shows for the removed call `c`, if its arguments all come from
/// the old calls on the same first argument (or are literals).
std::optional<MergeRule> merge_at(const std::vector<Token>& before, const std::vector<Call>& old_calls, const Call& c,
                                  const std::vector<Call>& new_calls) {
  const std::string& x = c.args[0];
  std::set<std::string> old_callees;
  for (const auto& oc : old_calls) old_callees.insert(oc.callee);
  std::map<std::string, int> new_on_x; // callee -> calls on x in the new function
  for (const auto& nc : new_calls)
    if (!nc.args.empty() && nc.args[0] == x) ++new_on_x[nc.callee];
  for (const auto& g : new_calls) {
    if (g.callee.starts_with("=") || old_callees.count(g.callee) || g.args.size() < 2 || g.args[0] != x) continue;
    // The old statement calls on x that are gone: c first, then the others by name.
    std::vector<const Call*> gone = {&c};
    for (const auto& oc : old_calls)
      if (&oc != &c && !oc.args.empty() && oc.args[0] == x && !new_on_x.count(oc.callee) && oc.callee != c.callee &&
          statement_call(before, oc))
        gone.push_back(&oc);
    std::sort(gone.begin() + 1, gone.end(), [](const Call* a, const Call* b) { return a->callee < b->callee; });
    MergeRule r;
    r.callee = g.callee;
    std::set<std::size_t> used = {0};
    bool ok = true;
    for (std::size_t i = 1; i < g.args.size() && ok; ++i) {
      std::string t;
      for (std::size_t k = 0; k < gone.size() && t.empty(); ++k)
        for (std::size_t j = 1; j < gone[k]->args.size() && t.empty(); ++j)
          if (gone[k]->args[j] == g.args[i]) {
            t = fmt::format("${}.{}", k, j);
            used.insert(k);
          }
      if (t.empty() && literal(g.args[i])) t = g.args[i];
      if (t.empty()) ok = false;
      r.args.push_back(t);
    }
    if (!ok || used.size() < 2) continue; // nothing merged: a plain replacement is learn_call's
    // Keep only the calls that gave an argument (renumbered).
    std::map<std::size_t, std::size_t> renum;
    for (std::size_t k : used) {
      renum[k] = r.calls.size();
      r.calls.push_back({gone[k]->callee, gone[k]->args.size()});
    }
    for (auto& a : r.args)
      if (a[0] == '$') {
        auto dot = a.find('.');
        a = fmt::format("${}{}", renum[std::stoul(a.substr(1, dot - 1))], a.substr(dot));
      }
    return r;
  }
  return std::nullopt;
}

/// One rule per order of the old calls, with the object as metavariable `meta_x`, the calls'
/// first argument written `x` and member assignments on `obj` (`->` when obj is x, else `.`).
std::string merge_smpl_on(const MergeRule& r, const std::string& meta_x, const std::string& x, const std::string& obj) {
  std::vector<std::string> metas = {meta_x};
  auto meta = [](std::size_t k, std::size_t i) { return fmt::format("A{}_{}", k, i); };
  for (std::size_t k = 0; k < r.calls.size(); ++k)
    for (std::size_t i = 1; i < r.calls[k].second; ++i) metas.push_back(meta(k, i));
  std::string call = r.callee + "(" + x;
  for (const auto& a : r.args) {
    if (a[0] == '$') {
      auto dot = a.find('.');
      call += ", " + meta(std::stoul(a.substr(1, dot - 1)), std::stoul(a.substr(dot + 1)));
    } else {
      call += ", " + a;
    }
  }
  call += ");";
  std::vector<std::size_t> order(r.calls.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::string out;
  do {
    out += "@@\nexpression " + fmt::format("{}", fmt::join(metas, ", ")) + ";\n@@\n";
    for (std::size_t k : order) {
      const std::string& callee = r.calls[k].first;
      if (callee.starts_with("=")) {
        // "=.m": the assignment on the object, whichever operator the learned code used.
        std::string member = callee.substr(2);
        out += "- " + obj + (obj == x ? "->" : ".") + member + " = " + meta(k, 1) + ";\n";
        continue;
      }
      out += "- " + callee + "(" + x;
      for (std::size_t i = 1; i < r.calls[k].second; ++i) out += ", " + meta(k, i);
      out += ");\n";
    }
    out += "+ " + call + "\n\n";
  } while (std::next_permutation(order.begin(), order.end()));
  return out;
}

} // namespace

std::string MergeRule::key() const {
  std::string k = callee + "(";
  for (const auto& a : args) k += ", " + a;
  k += ") <-";
  for (const auto& [c, n] : calls) k += fmt::format(" {}/{}", c, n);
  return k;
}

std::vector<LearnedMerge> learn_merges(SiteIndex& idx, const std::string& sym) {
  std::map<std::string, LearnedMerge> by_key;
  for (const auto& pair : idx.pairs_using(sym, 60, SiteIndex::Pairs::changed)) {
    const auto& before = *pair.before;
    const auto& after = *pair.after;
    for (const auto& u : before.units) {
      if (u.kind != UnitKind::function) continue;
      const Unit* nu = after.unit(u.name);
      if (!nu || nu->kind != UnitKind::function) continue;
      auto old_calls = find_calls(before.tokens, u.first, u.last);
      auto new_calls = find_calls(after.tokens, nu->first, nu->last);
      for (auto& a : member_assignments(before.tokens, u.first, u.last)) old_calls.push_back(std::move(a));
      for (auto& a : member_assignments(after.tokens, nu->first, nu->last)) new_calls.push_back(std::move(a));
      for (const auto& c : old_calls) {
        if (c.callee != sym || c.args.empty() || !statement_call(before.tokens, c)) continue;
        auto r = merge_at(before.tokens, old_calls, c, new_calls);
        if (!r) continue;
        auto& m = by_key[r->key()];
        m.rule = *r;
        ++m.count;
        if (m.files.size() < 5 && std::find(m.files.begin(), m.files.end(), before.rel) == m.files.end())
          m.files.push_back(before.rel);
      }
    }
  }
  std::vector<LearnedMerge> out;
  for (auto& [k, m] : by_key) out.push_back(std::move(m));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  return out;
}

std::string merge_smpl(const MergeRule& r) {
  bool assigns = std::any_of(r.calls.begin(), r.calls.end(), [](const auto& c) { return c.first.starts_with("="); });
  if (!assigns) return merge_smpl_on(r, "X", "X", "X");
  // A member assignment names the object itself: one rule for a pointer (`P->m = V;`, calls on
  // P), one for an object whose address the calls take (`E.m = V;`, calls on &E).
  return merge_smpl_on(r, "X", "X", "X") + merge_smpl_on(r, "E", "&E", "E");
}

} // namespace autodriver::propose
