// Proposer "removed-api": an interface the kernel removed together with its purpose
// (set_fs()/get_fs(): the address-limit switch), so that the kernel's own callers deleted their
// statements instead of rewriting them (legacy_api.hpp states each removal once, with its
// origin). When a diagnostic names one of its symbols and the target does not declare them,
// every live statement of the removed forms in the driver is deleted, in one edit; lines in
// `#if LINUX_VERSION_CODE` branches the target rules out keep their old code.

#include "autodriver/propose/apply.hpp"
#include "autodriver/propose/c_tokens.hpp"
#include "autodriver/propose/legacy_api.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <regex>
#include <set>

namespace autodriver::propose {

namespace {

class RemovedApi final : public Proposer {
public:
  std::string_view id() const override { return "removed-api"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.new_src.empty() || !ctx.to) return out;
    std::optional<TargetIndex> idx;
    long version = linux_version_code(ctx.to->build_dir);
    for (const auto& r : legacy_removals()) {
      // A diagnostic names a symbol of the removal: in its symbols, or on its line (`set_fs(fs);`
      // reported as "'fs' undeclared").
      bool named = false;
      for (const auto& d : diags) {
        if (named || d.severity != core::Severity::error || d.file.empty() || d.file.front() == '/') continue;
        auto line = diagnostic_line(ctx.tree, d);
        for (const auto& sym : r.symbols)
          if ((!d.symbols.empty() && d.symbols[0] == sym) || has_word(d.message, sym) || (line && has_word(*line, sym)))
            named = true;
      }
      if (!named) continue;
      if (!idx) idx.emplace(ctx.new_src, ctx.to->build_dir);
      // The target must really lack them (a kernel that still has set_fs keeps the driver's code).
      if (idx->names().count(std::string(r.symbols.front()))) continue;
      std::vector<std::regex> forms;
      for (const auto& f : r.statements) forms.emplace_back(std::string(f));
      Edit e;
      e.proposer = "removed-api";
      e.change_id = fmt::format("removed:{}", r.symbols.front());
      e.label = "removed-with-replacement";
      e.title = fmt::format("{}() was removed with its purpose: its statements go", r.symbols.front());
      e.description = fmt::format("{} ({}).", r.why, r.origin);
      for (const auto& s : r.symbols) e.symbols.emplace_back(s);
      e.evidence = {std::string(r.origin)};
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
      if (e.text_edits.empty()) continue;
      // Line edits apply bottom-up per file so earlier line numbers stay right.
      std::stable_sort(e.text_edits.begin(), e.text_edits.end(),
                       [](const TextEdit& a, const TextEdit& b) { return a.file != b.file ? a.file < b.file : a.line > b.line; });
      e.support = static_cast<int>(e.text_edits.size());
      util::log_debug("removed-api: {} statement(s) of {}", e.text_edits.size(), r.symbols.front());
      out.push_back(std::move(e));
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_removed_api() { return std::make_unique<RemovedApi>(); }

} // namespace autodriver::propose
