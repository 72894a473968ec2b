#include "autodriver/loop/reference.hpp"

#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace autodriver::loop {

namespace fs = std::filesystem;

void choose_reference(const core::Kernel& to, const std::vector<core::Diagnostic>& errors, propose::PortContext& ctx,
                      PortReport& rep, const std::function<void(const std::string&)>& note,
                      const std::function<void(const std::string&, nlohmann::json)>& step) {
  std::set<std::string> missing;
  for (const auto& d : errors)
    if (d.kind == core::DiagKind::implicit_function_declaration || d.kind == core::DiagKind::undeclared_identifier)
      for (const auto& sym : d.symbols) missing.insert(sym);
  if (missing.empty() || ctx.old_src.empty()) return;
  auto declared = [&](const fs::path& src) {
    propose::TargetIndex idx(src, {});
    const auto& names = idx.names();
    return static_cast<std::size_t>(
        std::count_if(missing.begin(), missing.end(), [&](const auto& m) { return names.count(m) > 0; }));
  };
  // A kernel that still declares the names but where (almost) no driver uses them any more has
  // already moved its drivers away: 7.2 kept `struct acpi_driver` for one last user, the
  // conversions of the 44 others happened before. Its own drivers must still use them.
  auto users = [&](const fs::path& src) {
    kernel::SourceGrep q;
    q.options = {"-lwE"};
    q.includes = {"*.c"};
    q.pattern = fmt::format("{}", fmt::join(missing, "|"));
    q.dirs = {"drivers", "sound", "net", "fs", "arch/x86"};
    q.any_of.assign(missing.begin(), missing.end());
    q.output_cap = 1 << 20;
    return kernel::grep_source(src, q).size();
  };
  constexpr std::size_t k_enough_users = 3;
  std::size_t best = declared(ctx.old_src);
  std::size_t best_users = best == missing.size() ? users(ctx.old_src) : 0;
  if (best == missing.size() && best_users >= k_enough_users) return;
  fs::path best_src;
  std::string best_release;
  int steps = 0;
  for (const auto& k : kernel::reference_chain(to)) {
    if (k.release == rep.reference) continue;
    if (++steps > 3) break;
    auto src = kernel::ensure_source(k, note);
    if (!src) {
      util::log_info("no reference source ({}): {}", k.line, src.error().message);
      continue;
    }
    std::size_t n = declared(*src);
    std::size_t u = n == missing.size() && n == best ? users(*src) : 0;
    if (n > best || (n == best && n == missing.size() && best_users < k_enough_users && u > best_users)) {
      best = n;
      best_users = n == missing.size() ? (u ? u : users(*src)) : 0;
      best_src = *src;
      best_release = k.release;
    }
    if (best == missing.size() && best_users >= k_enough_users) break;
  }
  if (best_src.empty()) return;
  note(fmt::format("reference: {} still declares {} of the {} name(s) the target lacks{}; learning from it instead", best_release,
                   best, missing.size(), best_users ? fmt::format(", used by {} of its drivers", best_users) : std::string()));
  ctx.old_src = best_src;
  rep.reference = best_release;
  step("reference",
       {{"kernel", best_release}, {"source", best_src.string()}, {"declares_missing", best}, {"missing", missing.size()}});
}

} // namespace autodriver::loop
