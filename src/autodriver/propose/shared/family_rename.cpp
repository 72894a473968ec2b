#include "autodriver/propose/shared/family_rename.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/token_diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

/// "INTEL_FAM6_ATOM_AIRMONT" -> "INTEL_FAM6_ATOM_", "INTEL_FAM6_", "INTEL_": the prefixes that
/// end at an underscore and leave a non-empty suffix.
std::vector<std::string> prefixes(const std::string& sym) {
  std::vector<std::string> out;
  for (std::size_t i = sym.size(); i-- > 1;)
    if (sym[i] == '_' && i + 1 < sym.size() && sym[i - 1] != '_') out.push_back(sym.substr(0, i + 1));
  if (out.size() > 3) out.resize(3); // the longest three: a one-word prefix of a long name says little
  return out;
}

struct FamilyVotes {
  std::map<std::string, int> prefix;                                              ///< new prefix -> units
  std::map<std::pair<std::string, std::string>, std::set<std::string>> companion; ///< old->new token -> files
  std::set<std::string> files;
  int units = 0; ///< units with a family rename
};

FamilyVotes family_votes(SiteIndex& idx, const std::string& p1) {
  FamilyVotes v;
  const std::string pattern = p1 + "[A-Za-z0-9_]*";
  for (const auto& pair : idx.pairs_using(pattern, 40, SiteIndex::Pairs::changed)) {
    const auto& before = *pair.before;
    const auto& after = *pair.after;
    for (const auto& u : before.units) {
      bool uses = false;
      for (std::size_t i = u.first; i <= u.last && i < before.tokens.size() && !uses; ++i)
        uses = before.tokens[i].kind == TokKind::ident && before.tokens[i].text.starts_with(p1);
      if (!uses) continue;
      const Unit* nu = after.unit(u.name);
      if (!nu) continue;
      std::set<std::string> new_prefixes;
      std::set<std::pair<std::string, std::string>> others;
      for (const auto& h : diff_tokens(before.tokens, u.first, u.last, after.tokens, nu->first, nu->last)) {
        if (h.a_count != 1 || h.b_count != 1) continue;
        const auto& o = before.tokens[h.a_first];
        const auto& n = after.tokens[h.b_first];
        if (o.kind != TokKind::ident || n.kind != TokKind::ident || o.text == n.text) continue;
        if (o.text.starts_with(p1) && o.text.size() > p1.size()) {
          std::string s = o.text.substr(p1.size());
          if (n.text.size() > s.size() && n.text.ends_with(s)) new_prefixes.insert(n.text.substr(0, n.text.size() - s.size()));
        } else if (!n.text.starts_with(p1)) {
          others.insert({o.text, n.text});
        }
      }
      if (new_prefixes.empty()) continue;
      ++v.units;
      v.files.insert(before.rel);
      for (const auto& p : new_prefixes) ++v.prefix[p];
      for (const auto& c : others) v.companion[c].insert(before.rel);
    }
  }
  return v;
}

/// Token index range of the statement around token `i` ([first, last]), bounded by ';', '{', '}'.
std::pair<std::size_t, std::size_t> statement_around(const std::vector<Token>& toks, std::size_t i) {
  std::size_t a = i, b = i;
  while (a > 0 && toks[a - 1].text != ";" && toks[a - 1].text != "{" && toks[a - 1].text != "}" &&
         toks[a - 1].kind != TokKind::pp_line)
    --a;
  while (b + 1 < toks.size() && toks[b].text != ";" && toks[b].text != "{" && toks[b].text != "}" && toks[b].text != ":") ++b;
  return {a, b};
}

/// For a `case` label at token `i`: the token range of its switch's controlling expression.
std::optional<std::pair<std::size_t, std::size_t>> switch_head(const std::vector<Token>& toks, std::size_t i) {
  int depth = 0;
  for (std::size_t k = i; k-- > 0;) {
    if (toks[k].later_branch) continue;
    if (toks[k].text == "}") ++depth;
    if (toks[k].text == "{" && depth-- == 0) {
      if (k == 0 || toks[k - 1].text != ")") return std::nullopt;
      // back to the '(' that opens it, then `switch`
      int pd = 0;
      for (std::size_t j = k - 1; j > 0; --j) {
        if (toks[j].text == ")") ++pd;
        if (toks[j].text == "(" && --pd == 0) {
          if (toks[j - 1].text != "switch") return std::nullopt;
          return std::make_pair(j + 1, k - 2);
        }
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<Edit> learn_family_rename(SiteIndex& idx, const PortContext& ctx, const std::string& sym,
                                        const std::set<std::string>& names) {
  std::string p1, p2;
  FamilyVotes best;
  int best_n = 0;
  for (const auto& p : prefixes(sym)) {
    auto v = family_votes(idx, p);
    int total = 0;
    for (const auto& [x, c] : v.prefix) total += c;
    for (const auto& [np, n] : v.prefix) {
      // Most agreeing units; a tie goes to the shorter prefix (the whole family).
      if (n >= 3 && 3 * n >= 2 * total && n >= best_n && names.count(np + sym.substr(p.size()))) {
        p1 = p;
        p2 = np;
        best_n = n;
        best = v;
      }
    }
  }
  if (p1.empty()) return std::nullopt;
  // Companions: the same other token change in at least three files' units and a third of them.
  std::vector<std::pair<std::string, std::string>> companions;
  for (const auto& [c, files] : best.companion)
    if (files.size() >= 3 && 3 * static_cast<int>(files.size()) >= best.units) companions.push_back(c);

  Edit e;
  e.proposer = "learned-rewrite";
  e.change_id = "family:" + p1;
  e.label = "rename";
  std::set<std::string> renamed;
  for (const auto& rel : c_files(ctx.tree)) {
    auto text = util::read_file(ctx.tree / rel);
    if (!text || text->find(p1) == std::string::npos) continue;
    auto toks = tokenize(*text);
    std::set<int> lines_done;
    auto lines = util::split_lines(*text);
    auto companion_line = [&](int line) {
      if (line < 1 || line > static_cast<int>(lines.size()) || !lines_done.insert(line).second) return;
      std::string l(lines[static_cast<std::size_t>(line) - 1]), orig = l;
      for (const auto& [a, b] : companions) l = std::regex_replace(l, std::regex("\\b" + a + "\\b"), b);
      if (l != orig) e.text_edits.push_back({rel, line, 1, l + "\n"});
    };
    for (std::size_t i = 0; i < toks.size(); ++i) {
      const auto& t = toks[i];
      if (t.kind != TokKind::ident || !t.text.starts_with(p1) || t.text.size() <= p1.size()) continue;
      std::string to = p2 + t.text.substr(p1.size());
      if (!names.count(to) || names.count(t.text)) continue;
      if (renamed.insert(t.text).second) e.renames.push_back({t.text, to});
      if (companions.empty()) continue;
      // The comparison or switch that uses the constant reads the companion's new form.
      auto [a, b] = statement_around(toks, i);
      if (a > 0 && toks[a].text == "case") {
        if (auto h = switch_head(toks, a))
          for (std::size_t k = h->first; k <= h->second; ++k)
            for (const auto& [o, n] : companions)
              if (toks[k].text == o) companion_line(toks[k].line);
      }
      for (std::size_t k = a; k <= b && k < toks.size(); ++k)
        for (const auto& [o, n] : companions)
          if (toks[k].text == o) companion_line(toks[k].line);
    }
  }
  if (!renamed.count(sym)) return std::nullopt;
  e.support = best_n;
  e.evidence.assign(best.files.begin(), best.files.end());
  if (e.evidence.size() > 5) e.evidence.resize(5);
  e.symbols = {sym};
  for (const auto& [o, n] : e.renames) e.symbols.push_back(n);
  std::vector<std::string> comp_text;
  for (const auto& [o, n] : companions) comp_text.push_back(o + " -> " + n);
  e.title = fmt::format("{}* constants became {}*", p1, p2);
  e.description = fmt::format(
      "The kernel renamed the {}* constants to {}* ({} of its functions changed that way, "
      "e.g. {}){}.",
      p1, p2, best_n, fmt::join(e.evidence, ", "),
      comp_text.empty() ? std::string() : fmt::format("; where they are compared, {} as well", fmt::join(comp_text, ", ")));
  util::log_debug("learned-rewrite: family {} -> {} ({} units), companions {}", p1, p2, best_n, comp_text.size());
  return e;
}

} // namespace autodriver::propose
