// The remove-statements mechanism of the rule packs (rules/*.rule, kind remove-statements): an
// interface the kernel removed together with its purpose (set_fs()/get_fs(): the address-limit
// switch), so that the kernel's own callers deleted their statements instead of rewriting them.
// When a diagnostic names one of the rule's symbols and the target does not declare the first,
// every live statement of the rule's forms in the driver is deleted, in one edit; lines in
// `#if LINUX_VERSION_CODE` branches the target rules out keep their old code.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/rules/rule_mechanisms.hpp"
#include "autodriver/propose/rules/rules.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <regex>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

std::optional<Edit> propose_statement_removal(const std::vector<core::Diagnostic>& diags, const PortContext& ctx, const Rule& r,
                                              std::optional<TargetIndex>& idx) {
  if (ctx.new_src.empty() || !ctx.to || r.symbols.empty()) return std::nullopt;
  // A diagnostic names a symbol of the removal: in its symbols, or on its line (`set_fs(fs);`
  // reported as "'fs' undeclared").
  bool named = false;
  for (const auto& d : diags) {
    if (named || d.severity != core::Severity::error || d.file.empty() || d.file.front() == '/') continue;
    auto line = diagnostic_line(ctx.tree, d);
    for (const auto& sym : r.symbols)
      if ((!d.symbols.empty() && d.symbols[0] == sym) || has_word(d.message, sym) || (line && has_word(*line, sym))) named = true;
  }
  if (!named) return std::nullopt;
  if (!idx) idx.emplace(ctx.new_src, ctx.to->build_dir);
  // The target must really lack them (a kernel that still has set_fs keeps the driver's code).
  if (idx->names().count(r.symbols.front())) return std::nullopt;
  std::vector<std::regex> forms;
  for (auto l : util::split_lines(r.body)) {
    auto f = util::trim(l);
    if (!f.empty() && f.front() != '#') forms.emplace_back(std::string(f));
  }
  long version = linux_version_code(ctx.to->build_dir);
  Edit e;
  e.proposer = "rule-pack";
  e.change_id = fmt::format("removed:{}", r.symbols.front());
  e.label = "removed-with-replacement";
  e.title = fmt::format("{}() was removed with its purpose: its statements go", r.symbols.front());
  e.description = fmt::format("{}. Rule: {}.", r.why.empty() ? r.symbols.front() + " was removed" : r.why, r.provenance());
  e.symbols = r.symbols;
  e.evidence = {r.file};
  for (const auto& rel : c_files(ctx.tree)) {
    auto text = util::read_file(ctx.tree / rel);
    if (!text || !has_word(*text, r.symbols.front())) continue;
    auto dead = version ? version_dead_lines(*text, version) : std::vector<bool>{};
    auto lines = util::split_lines(*text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i < dead.size() && dead[i]) continue;
      std::string l(lines[i]);
      for (const auto& f : forms)
        if (std::regex_search(l, f)) {
          e.text_edits.push_back({rel, static_cast<int>(i) + 1, 1, "", std::nullopt});
          break;
        }
    }
  }
  if (e.text_edits.empty()) return std::nullopt;
  // Line edits apply bottom-up per file so earlier line numbers stay right.
  std::stable_sort(e.text_edits.begin(), e.text_edits.end(),
                   [](const TextEdit& a, const TextEdit& b) { return a.file != b.file ? a.file < b.file : a.line > b.line; });
  e.support = static_cast<int>(e.text_edits.size());
  util::log_debug("rule-pack: {} statement(s) of {} removed", e.text_edits.size(), r.symbols.front());
  return e;
}

} // namespace autodriver::propose
