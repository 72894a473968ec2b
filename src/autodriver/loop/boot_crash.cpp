#include "autodriver/loop/boot_crash.hpp"

#include "autodriver/crash/localize.hpp"
#include "autodriver/crash/report.hpp"
#include "autodriver/crash/symbolize.hpp"
#include "autodriver/crash/teardown.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/util/json_text.hpp"

#include <algorithm>
#include <set>

namespace autodriver::loop {

namespace fs = std::filesystem;

static std::string boot_console(const nlohmann::json& gates, const std::string& release) {
  const auto& bk = gates["gates"]["boot"]["by_kernel"];
  if (!bk.is_object() || !bk.contains(release)) return {};
  return util::json_get(bk[release]["details"], "console", std::string());
}

std::string boot_outcome(const nlohmann::json& gates, const std::string& release) {
  const auto& bk = gates["gates"]["boot"]["by_kernel"];
  return bk.is_object() && bk.contains(release) ? util::json_get(bk[release]["details"], "outcome", "") : std::string();
}

std::vector<crash::CrashReport> boot_crash_reports(const nlohmann::json& gates, const std::string& release) {
  return crash::parse_reports(boot_console(gates, release));
}

bool same_crash(const BootCrash& c, const std::vector<crash::CrashReport>& others) {
  for (const auto& o : others) {
    if (o.title == c.report.title) return true;
    if (o.kind != c.report.kind) continue;
    for (const auto& m : c.modules) {
      const auto *a = c.report.first_in(m), *b = o.first_in(m);
      if (a && b && a->function == b->function) return true;
    }
  }
  return false;
}

bool same_crash_title(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::string& shorter = a.size() < b.size() ? a : b;
  const std::string& longer = a.size() < b.size() ? b : a;
  if (shorter.find(" in ") == std::string::npos && longer.starts_with(shorter + " in ")) return true;
  // "Oops" is the report of a fault whose first line (the page fault's own "BUG: unable to handle
  // page fault") the console lost among other output: the same crash when the place is the same.
  const auto in_a = a.rfind(" in "), in_b = b.rfind(" in ");
  if (in_a == std::string::npos || in_b == std::string::npos || a.substr(in_a) != b.substr(in_b)) return false;
  return a.starts_with("Oops in ") || b.starts_with("Oops in ");
}

std::optional<BootCrash> analyse_boot_crash(const nlohmann::json& gates, const std::string& release, const fs::path& tree,
                                            const fs::path& kernel_src) {
  auto reports = crash::parse_reports(boot_console(gates, release));
  if (reports.empty()) return std::nullopt;
  crash::CrashReport& r = reports.front();
  std::vector<std::pair<std::string, fs::path>> modules;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().extension() != ".ko" || !it->is_regular_file(ec)) continue;
    modules.emplace_back(crash::module_name(it->path().stem().string()), it->path());
  }
  const int symbolized = crash::symbolize_report(r, modules, {}, gate::k_sandbox_tree);
  std::set<std::string> names;
  for (const auto& [n, _] : modules) names.insert(n);
  auto where = crash::localize(r, names, tree, gate::k_sandbox_tree, kernel_src);
  auto hyps =
      crash::hypothesize(r, where, tree, crash::release_oracle(kernel_src), crash::pair_oracle(kernel_src),
                         crash::undo_oracle(kernel_src), crash::teardown_oracle(kernel_src), crash::value_oracle(kernel_src),
                         crash::managed_oracle(kernel_src), crash::init_oracle(kernel_src), crash::alloc_oracle(kernel_src));
  crash::rank_by_hypotheses(where, hyps);
  nlohmann::json j = {{"title", r.title},
                      {"kind", crash::to_string(r.kind)},
                      {"headline", r.headline},
                      {"panicked", r.panicked},
                      {"symbolized_frames", symbolized},
                      {"in_driver", !where.empty()},
                      {"repair", "not attempted (autodriver crash --repair tries it)"}};
  j["localized"] = nlohmann::json::array();
  for (const auto& l : where) j["localized"].push_back(crash::to_json(l));
  j["hypotheses"] = nlohmann::json::array();
  for (const auto& h : hyps) j["hypotheses"].push_back(crash::to_json(h));
  return BootCrash{std::move(r), std::move(hyps), !where.empty(), std::move(j), std::move(names)};
}

} // namespace autodriver::loop
