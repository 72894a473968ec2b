// Proposer "rule-pack": the knowledge stated by hand in rule files (rules.hpp: the shipped
// rules/ folder, compiled in, and the user's --rules folders), each applied by the mechanism of
// its kind. Every edit names its rule file and the rule's provenance; `--no-rule-packs` leaves
// the shipped rules out.
//   old-definitions    the inline-removed mechanism over the rules' C text
//   remove-statements  statement_removal.cpp
//   table-path         table_path.cpp
//   smpl               the semantic patch, proposed when a diagnostic names one of its symbols and
//                      the target declares none of its `target-lacks`
//   typed-variant      read by callback-signature (it retypes variables), nothing here

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/inline_removed.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/rules/rule_mechanisms.hpp"
#include "autodriver/propose/rules/rules.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

/// A diagnostic that names one of the rule's symbols (its first symbol, or a word of its message).
bool names_any(const std::vector<core::Diagnostic>& diags, const std::vector<std::string>& symbols) {
  for (const auto& d : diags) {
    if (d.severity != core::Severity::error) continue;
    for (const auto& s : symbols)
      if ((!d.symbols.empty() && d.symbols[0] == s) || has_word(d.message, s)) return true;
  }
  return false;
}

Edit smpl_edit(const Rule& r) {
  Edit e;
  e.proposer = "rule-pack";
  e.change_id = "rule:" + r.name;
  e.label = "other";
  e.title = r.why.empty() ? fmt::format("rule {}: {}", r.name, r.symbols.empty() ? std::string() : r.symbols.front()) : r.why;
  e.description = fmt::format("{}. Rule: {}.", r.why.empty() ? "A semantic patch stated in a rule file" : r.why, r.provenance());
  e.smpl = r.body;
  e.symbols = r.symbols;
  e.support = 1;
  e.evidence = {r.file};
  return e;
}

class RulePack final : public Proposer {
public:
  std::string_view id() const override { return "rule-pack"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (!ctx.rules || ctx.rules->empty() || !ctx.to) return out;
    const long version = target_version_code(ctx);
    std::vector<OldDefinitions> defs;
    std::map<std::string, const Rule*> by_file;
    std::optional<TargetIndex> idx;
    for (const auto& r : *ctx.rules) {
      if (!applies_to(r, version)) continue;
      by_file[r.file] = &r;
      if (r.kind == "old-definitions") {
        defs.push_back({r.file, r.body});
      } else if (r.kind == "remove-statements") {
        if (auto e = propose_statement_removal(diags, ctx, r, idx)) out.push_back(std::move(*e));
      } else if (r.kind == "table-path") {
        for (auto& e : propose_table_path(diags, ctx, r)) out.push_back(std::move(e));
      } else if (r.kind == "smpl") {
        if (!names_any(diags, r.symbols) || ctx.new_src.empty()) continue;
        if (!idx) idx.emplace(ctx.new_src, ctx.to->build_dir);
        auto lacks = r.words("target-lacks");
        if (std::any_of(lacks.begin(), lacks.end(), [&](const std::string& s) { return idx->names().count(s) > 0; })) continue;
        out.push_back(smpl_edit(r));
      }
    }
    if (!defs.empty()) {
      auto inline_removed = make_inline_from_definitions("rule-pack", std::move(defs));
      for (auto& e : inline_removed->propose(diags, ctx)) {
        // Evidence is "rules/NAME.rule:LINE" (one per rule for a header's names taken together).
        std::vector<std::string> cited;
        for (const auto& ev : e.evidence) {
          auto it = by_file.find(ev.substr(0, ev.rfind(':')));
          if (it != by_file.end() && std::find(cited.begin(), cited.end(), it->first) == cited.end()) {
            e.description += fmt::format(" Rule: {}.", it->second->provenance());
            cited.push_back(it->first);
          }
        }
        out.push_back(std::move(e));
      }
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_rule_pack() { return std::make_unique<RulePack>(); }

} // namespace autodriver::propose
