// Proposer "feature-switch": out-of-tree drivers carry two implementations behind macros of
// their own (`#ifdef HAVE_PROC_CREATE` ... `#else` ... `#endif`), switched on by a
// LINUX_VERSION_CODE test or a configure step. When the target's errors sit in the branch
// compiled while such a macro is undefined, the maintainers' other branch is the first thing
// to try: `#define HAVE_PROC_CREATE` where the driver first tests it. Nothing is learned from a
// table: the macro, both branches and the place come from the driver itself, and the loop keeps
// the switch only when the build improves. Kernel macros (any name the target's headers declare,
// CONFIG_*, reserved names) and debug switches are never touched.

#include "autodriver/gate/feature_switch.hpp"
#include "autodriver/csrc/scan.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;

namespace {

bool debug_like(const std::string& m) {
  for (const char* w : {"DEBUG", "TRACE", "VERBOSE", "TEST", "DUMP", "NDEBUG", "DISABLE", "NO_"})
    if (m.find(w) != std::string::npos) return true;
  return false;
}

/// Conditional depth of each line (1-based; [0] unused), an include guard not counted.
std::vector<int> depth_of_lines(const std::vector<std::string_view>& lines) {
  static const std::regex k_open(R"(^\s*#\s*(if|ifdef|ifndef)\b)");
  static const std::regex k_close(R"(^\s*#\s*endif\b)");
  static const std::regex k_guard(R"(^\s*#\s*ifndef\s+(\w+))");
  static const std::regex k_define(R"(^\s*#\s*define\s+(\w+))");
  std::vector<int> depth(lines.size() + 2, 0);
  int d = 0, guard_depth = -1;
  bool first = true;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string l(lines[i]);
    depth[i + 1] = d - (guard_depth >= 0 && d > guard_depth ? 1 : 0);
    std::smatch m;
    if (std::regex_search(l, m, k_open)) {
      if (first && std::regex_search(l, m, k_guard) && i + 1 < lines.size()) {
        std::string next(lines[i + 1]);
        std::smatch n;
        if (std::regex_search(next, n, k_define) && n[1].str() == m[1].str()) guard_depth = d;
      }
      ++d;
      first = false;
    } else if (std::regex_search(l, k_close)) {
      if (d > 0) --d;
      if (guard_depth >= 0 && d == guard_depth) guard_depth = -1;
    } else if (l.find_first_not_of(" \t\r") != std::string::npos && l.find("//") != 0 && l.find("/*") != 0 && l.find(" *") != 0) {
      first = false;
    }
  }
  return depth;
}

/// Does a preprocessor conditional line of `text` name `macro`?
bool tested_in(const std::string& text, const std::string& macro) {
  std::regex k("^\\s*#\\s*(if|ifdef|ifndef|elif)\\b[^\\n]*\\b" + macro + "\\b", std::regex::ECMAScript | std::regex::multiline);
  return std::regex_search(text, k);
}

/// Line before which `#define M` goes in `text`: at file scope and outside every conditional, no
/// later than the first test of M. Where maintainers put such switches: after the file's last
/// top-level `#include`/`#define` before its first function; else right before the first test.
/// 0 when there is no such place.
int insertion_line(const std::string& text, const std::string& macro) {
  auto lines = util::split_lines(text);
  std::regex k("^\\s*#\\s*(if|ifdef|ifndef|elif)\\b.*\\b" + macro + "\\b");
  int first = 0;
  for (std::size_t i = 0; i < lines.size() && !first; ++i)
    if (std::regex_search(std::string(lines[i]), k)) first = static_cast<int>(i) + 1;
  if (!first) return 0;
  auto depth = depth_of_lines(lines);
  auto scanned = csrc::scan(text);
  auto line_text = [&](int l) { return std::string(lines[static_cast<std::size_t>(l) - 1]); };
  auto continued = [&](int l) {
    auto t = line_text(l);
    return !t.empty() && t.back() == '\\';
  };
  int limit = first;
  for (const auto& it : scanned.items)
    if (it.kind == csrc::ItemKind::function) {
      limit = std::min(limit, it.first_line);
      break;
    }
  static const std::regex k_pp(R"(^\s*#\s*(include|define)\b)");
  int after = 0;
  for (int l = 1; l < limit; ++l) {
    if (depth[static_cast<std::size_t>(l)] != 0 || !std::regex_search(line_text(l), k_pp)) continue;
    if (const auto* it = scanned.item_at(l); it && it->first_line < l) continue;
    int end = l;
    while (continued(end) && end < limit - 1) ++end;
    if (continued(end)) break;
    after = end;
    l = end;
  }
  if (after) return after + 1;
  for (int l = first; l >= 1; --l) {
    if (depth[static_cast<std::size_t>(l)] != 0) continue;
    const auto* it = scanned.item_at(l);
    if (it && it->first_line < l) continue;  // inside a function or declaration
    if (l > 1 && continued(l - 1)) continue; // inside a multi-line directive
    return l;
  }
  return 0;
}

class FeatureSwitch final : public Proposer {
public:
  std::string_view id() const override { return "feature-switch"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    std::map<std::string, std::vector<gate::SwitchTest>> tests;
    std::map<std::string, int> votes;        // macro -> diagnostics in its undefined branch
    std::map<std::string, bool> value_tests; // macro -> some test needs a value
    for (const auto& d : diags) {
      if (d.severity != core::Severity::error && d.severity != core::Severity::fatal) continue;
      if (d.file.empty() || d.file.front() == '/' || d.line <= 0) continue;
      auto it = tests.find(d.file);
      if (it == tests.end()) {
        auto text = util::read_file(ctx.tree / d.file);
        it = tests.emplace(d.file, text ? gate::switch_tests(*text) : std::vector<gate::SwitchTest>{}).first;
      }
      for (const auto* t : gate::switches_off_at(it->second, d.line)) {
        ++votes[t->macro];
        value_tests[t->macro] = value_tests[t->macro] || t->value_test;
      }
    }
    util::log_debug("feature-switch: {} macro(s) switched off at an error", votes.size());
    if (votes.empty()) return out;
    std::optional<TargetIndex> idx;
    if (!ctx.new_src.empty() && ctx.to) idx.emplace(ctx.new_src, ctx.to->build_dir);
    // The driver's own files: which test each macro, define it, or pass it from a Makefile.
    std::map<std::string, std::string> texts;
    for (const auto& rel : c_files(ctx.tree))
      if (auto t = util::read_file(ctx.tree / rel)) texts[rel] = std::move(*t);
    std::string makefiles;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(ctx.tree, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      auto name = it->path().filename().string();
      if (it->is_regular_file(ec) &&
          (name == "Makefile" || name == "Kbuild" || name == "dkms.conf" || name.starts_with("Makefile.") ||
           name == "configure" || name.ends_with(".mk") || name.ends_with(".sh")))
        if (auto t = util::read_file(it->path())) makefiles += *t + "\n";
    }
    int rank = 0;
    for (const auto& [macro, n] : votes) {
      if (debug_like(macro) || has_word(makefiles, macro) || makefiles.find("-D" + macro) != std::string::npos) {
        util::log_debug("feature-switch: {}: a debug switch or set by the build", macro);
        continue;
      }
      if (idx && idx->names().count(macro)) {
        util::log_debug("feature-switch: {}: the target defines it", macro);
        continue; // the kernel's own macro
      }
      std::regex k_def("^\\s*#\\s*(define|undef)\\s+" + macro + "\\b([^\\n]*)", std::regex::ECMAScript | std::regex::multiline);
      std::string value = value_tests[macro] ? " 1" : "";
      bool undef = false;
      for (const auto& [rel, text] : texts) {
        std::smatch m;
        if (!std::regex_search(text, m, k_def)) continue;
        if (m[1].str() == "undef") undef = true;
        else if (auto v = util::trim(m[2].str()); !v.empty() && v.find("/*") != 0 && v.find("//") != 0)
          value = " " + std::string(v);
      }
      if (undef) continue;
      std::vector<std::string> testers;
      for (const auto& [rel, text] : texts)
        if (tested_in(text, macro)) testers.push_back(rel);
      if (testers.empty()) continue;
      // One definition where every tester sees it: the only tester, else a driver header that
      // every other tester includes, else each tester.
      std::vector<std::string> where;
      if (testers.size() == 1) where = testers;
      else
        for (const auto& h : testers) {
          if (!h.ends_with(".h")) continue;
          std::string base = fs::path(h).filename().string();
          std::regex inc("^\\s*#\\s*include\\s*\"([^\"]*/)?" + std::regex_replace(base, std::regex(R"([.])"), "\\.") + "\"",
                         std::regex::ECMAScript | std::regex::multiline);
          bool all = std::all_of(testers.begin(), testers.end(),
                                 [&](const std::string& f) { return f == h || std::regex_search(texts[f], inc); });
          if (all) {
            where = {h};
            break;
          }
        }
      if (where.empty()) where = testers;
      Edit e;
      e.proposer = "feature-switch";
      e.change_id = "feature:" + macro;
      e.label = "other";
      e.title = fmt::format("switch on the driver's own {}", macro);
      e.description = fmt::format("{} target error(s) sit in the branch the driver compiles while its own feature macro {} is "
                                  "undefined; the maintainers' other branch (`#ifdef {}`) is used instead.",
                                  n, macro, macro);
      e.symbols = {macro};
      e.support = n;
      e.rank = rank++;
      bool ok = true;
      for (const auto& f : where) {
        int line = insertion_line(texts[f], macro);
        if (!line) {
          util::log_debug("feature-switch: {}: no file-scope place for it in {}", macro, f);
          ok = false;
          break;
        }
        e.text_edits.push_back({f, line, 0, fmt::format("#define {}{}\n", macro, value), std::nullopt});
      }
      if (!ok) continue;
      for (const auto& f : where) e.evidence.push_back(f);
      util::log_debug("feature-switch: {} ({} diagnostics) defined in {}", macro, n, fmt::join(where, ", "));
      out.push_back(std::move(e));
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_feature_switch() { return std::make_unique<FeatureSwitch>(); }

} // namespace autodriver::propose
