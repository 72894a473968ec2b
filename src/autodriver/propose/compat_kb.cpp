// Proposer "compat-kb": rewrites learned from maintainers' `#if LINUX_VERSION_CODE` blocks
// (the compat knowledge base, kb_file.hpp). For each symbol the diagnostics name, the KB entries
// whose old-API form mentions it are turned into edits of the driver's own code: the old form
// is found in the driver and replaced by the maintainers' new form, arguments bound by position.
// Rules seen in more packages rank first; entries whose boundary is above the target are ignored.

#include "autodriver/propose/kb/kb_file.hpp"
#include "autodriver/propose/kb/kb_rewrite.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;
using core::DiagKind;

namespace {

bool wanted(DiagKind k) {
  switch (k) {
  case DiagKind::implicit_function_declaration:
  case DiagKind::too_few_arguments:
  case DiagKind::too_many_arguments:
  case DiagKind::no_member:
  case DiagKind::undeclared_identifier:
  case DiagKind::unknown_type:
  case DiagKind::incomplete_type:
  case DiagKind::missing_header:
  case DiagKind::incompatible_type:
  case DiagKind::int_conversion:
  case DiagKind::modpost_undefined_symbol:
  case DiagKind::conflicting_types: return true;
  default: return false;
  }
}

/// One distinct rewrite, with the entries (packages) that agree on it.
struct Rule {
  const KbEntry* first = nullptr;
  std::set<std::string> packages;
  std::vector<std::string> evidence;
};

class CompatKb final : public Proposer {
public:
  std::string_view id() const override { return "compat-kb"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diagnostics, const PortContext& ctx) override {
    std::vector<Edit> out;
    const Kb* kb = load(ctx);
    if (!kb || kb->entries.empty()) return out;
    std::vector<std::string> symbols;
    for (const auto& d : diagnostics) {
      if (d.severity != core::Severity::error && d.severity != core::Severity::fatal) continue;
      if (!wanted(d.kind) || d.symbols.empty()) continue;
      // "too many arguments to function 'f'" names f; a missing header names the header.
      for (const auto& s : d.symbols)
        if (std::find(symbols.begin(), symbols.end(), s) == symbols.end()) symbols.push_back(s);
    }
    if (symbols.empty()) return out;
    std::set<std::string> drop(ctx.kb_leave_out.begin(), ctx.kb_leave_out.end());
    KVersion to = ctx.to ? parse_kversion(ctx.to->release) : KVersion{99, 0, 0};
    KVersion from = ctx.from ? parse_kversion(ctx.from->release) : KVersion{};
    auto files = c_files(ctx.tree);
    std::map<std::string, std::string> texts;
    for (const auto& f : files)
      if (auto t = util::read_file(ctx.tree / f); t) texts[f] = *t;

    for (const auto& sym : symbols) {
      std::map<std::string, Rule> rules; // kind|old|new -> rule
      for (const auto& e : kb->entries) {
        if (drop.count(e.provenance.package)) continue;
        const auto& c = e.change;
        bool names = !c.symbols.empty() && c.symbols[0] == sym;
        if (!names && (c.kind == "statement" || c.kind == "delete"))
          names = std::find(c.symbols.begin(), c.symbols.end(), sym) != c.symbols.end();
        if (!names) continue;
        auto b = parse_kversion(e.boundary);
        if (std::pair(b.major, b.minor) > std::pair(to.major, to.minor)) continue; // new form not there yet
        auto& r = rules[c.kind + "|" + c.old_form + "|" + c.new_form];
        if (!r.first) r.first = &e;
        r.packages.insert(e.provenance.package);
        if (r.evidence.size() < 4)
          r.evidence.push_back(
              fmt::format("{} {}:{} ({})", e.provenance.package, e.provenance.file, e.provenance.line, e.boundary));
      }
      std::vector<Rule*> ranked;
      for (auto& [k, r] : rules) ranked.push_back(&r);
      auto in_range = [&](const Rule* r) {
        auto b = parse_kversion(r->first->boundary);
        return !ctx.from || std::pair(b.major, b.minor) > std::pair(from.major, from.minor);
      };
      std::stable_sort(ranked.begin(), ranked.end(), [&](const Rule* a, const Rule* b) {
        if (in_range(a) != in_range(b)) return in_range(a);
        return a->packages.size() > b->packages.size();
      });
      int rank = 0;
      for (const Rule* r : ranked) {
        if (rank >= 3) break;
        const auto& c = r->first->change;
        Edit e;
        int sites = 0;
        for (const auto& [f, text] : texts) {
          auto rw = rewrite_text(text, c);
          if (rw.sites == 0) continue;
          if (auto te = changed_lines_edit(f, text, rw.text)) {
            e.text_edits.push_back(*te);
            sites += rw.sites;
          }
        }
        if (e.text_edits.empty()) continue;
        e.proposer = "compat-kb";
        e.change_id = "kb:" + sym;
        e.label = c.kind == "member-rename"                     ? "member-changed"
                  : c.kind == "call-args"                       ? "arguments-changed"
                  : c.kind == "include"                         ? "header-moved"
                  : c.kind == "delete" || c.kind == "statement" ? "removed-with-replacement"
                                                                : "rename";
        e.title = c.new_form.empty()
                      ? fmt::format("{}: drop `{}` (Linux {})", sym, c.old_form, r->first->boundary)
                      : fmt::format("{}: `{}` -> `{}` (Linux {})", sym, c.old_form, c.new_form, r->first->boundary);
        e.description = fmt::format("Since Linux {}, maintainers of {} write `{}` where older kernels need `{}` "
                                    "(learned from their #if LINUX_VERSION_CODE blocks; {} site(s) here).",
                                    r->first->boundary, fmt::join(r->packages, ", "), c.new_form, c.old_form, sites);
        e.symbols = c.symbols;
        e.support = static_cast<int>(r->packages.size());
        e.rank = rank++;
        e.evidence = r->evidence;
        out.push_back(std::move(e));
      }
    }
    return out;
  }

private:
  const Kb* load(const PortContext& ctx) {
    if (m_loaded) return m_kb ? &*m_kb : nullptr;
    m_loaded = true;
    fs::path path = ctx.kb_path.empty() ? default_kb_path() : ctx.kb_path;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      // First use: learn from the DKMS sources already in the cache (`autodriver kb build --dkms`
      // fetches all of them).
      auto sources = cached_dkms_sources();
      if (sources.empty()) {
        util::log_info("compat-kb: no KB at {} and no DKMS sources cached: run `autodriver kb build --dkms`", path.string());
        return nullptr;
      }
      Kb kb = build_kb(sources);
      if (auto w = save_kb(kb, path); !w) util::log_info("compat-kb: cannot save {}: {}", path.string(), w.error().message);
      m_kb = std::move(kb);
      return &*m_kb;
    }
    auto kb = load_kb(path);
    if (!kb) {
      util::log_info("compat-kb: {}", kb.error().message);
      return nullptr;
    }
    m_kb = std::move(*kb);
    return &*m_kb;
  }

  bool m_loaded = false;
  std::optional<Kb> m_kb;
};

} // namespace

std::unique_ptr<Proposer> make_compat_kb() { return std::make_unique<CompatKb>(); }

} // namespace autodriver::propose
