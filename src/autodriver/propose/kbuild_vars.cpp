// Proposer "kbuild-vars": a variable of the driver's Makefile that the target's kbuild no longer
// reads. The old kbuild forwarded it to its current name in one line of scripts/Makefile.lib
// (`ccflags-y += $(EXTRA_CFLAGS)`); the target's scripts/ do not mention it any more (6.15
// dropped EXTRA_CFLAGS and friends), so the driver's flags silently vanish and the build fails
// further on (rtpengine: "'RTPENGINE_VERSION' undeclared", a -D that never reached gcc). The
// driver's Makefile and Kbuild files use the name the old kbuild forwarded it to. Both facts
// come from the two kernel trees' scripts/, nothing from a table.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;

namespace {

/// The kbuild makefiles of a kernel source tree (scripts/Makefile.*, scripts/Kbuild.include).
std::vector<fs::path> kbuild_makefiles(const fs::path& src) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(src / "scripts", ec)) {
    const std::string n = e.path().filename().string();
    if (n.starts_with("Makefile") || n == "Kbuild.include") out.push_back(e.path());
  }
  return out;
}

/// `alias -> current` for every `current += $(alias)` line of the old kbuild whose alias the
/// new kbuild's makefiles never mention.
std::map<std::string, std::string> dropped_aliases(const fs::path& old_src, const fs::path& new_src) {
  std::map<std::string, std::string> out;
  static const std::regex k_forward(R"(^\s*([A-Za-z][\w-]*)\s*\+=\s*\$\(([A-Z][A-Z0-9_]*)\)\s*$)");
  for (const auto& f : kbuild_makefiles(old_src)) {
    auto text = util::read_file(f);
    if (!text) continue;
    for (auto l : util::split_lines(*text)) {
      std::smatch m;
      std::string line(l);
      if (std::regex_match(line, m, k_forward)) out[m[2].str()] = m[1].str();
    }
  }
  if (out.empty()) return out;
  for (const auto& f : kbuild_makefiles(new_src)) {
    auto text = util::read_file(f);
    if (!text) continue;
    std::erase_if(out, [&](const auto& kv) { return has_word(*text, kv.first); });
  }
  return out;
}

class KbuildVars final : public Proposer {
public:
  std::string_view id() const override { return "kbuild-vars"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.old_src.empty() || ctx.new_src.empty() || diags.empty()) return out;
    if (m_for != ctx.old_src.string() + "|" + ctx.new_src.string()) {
      m_aliases = dropped_aliases(ctx.old_src, ctx.new_src);
      m_for = ctx.old_src.string() + "|" + ctx.new_src.string();
    }
    if (m_aliases.empty()) return out;
    Edit e;
    e.proposer = "kbuild-vars";
    e.change_id = "kbuild-vars";
    e.label = "other";
    std::set<std::string> used;
    for (const auto& rel : util::list_files(ctx.tree)) {
      const std::string name = rel.filename().string();
      if (name != "Makefile" && name != "Kbuild" && name != "GNUmakefile" && rel.extension() != ".mk") continue;
      auto text = util::read_file(ctx.tree / rel);
      if (!text) continue;
      int n = 0;
      for (auto l : util::split_lines(*text)) {
        ++n;
        std::string line(l), changed = line;
        for (const auto& [alias, current] : m_aliases) {
          const std::regex k_word("(^|[^A-Za-z0-9_])" + alias + "(?![A-Za-z0-9_])");
          std::string next = std::regex_replace(changed, k_word, "$1" + current);
          if (next != changed) used.insert(alias + " -> " + current);
          changed = std::move(next);
        }
        if (changed != line) e.text_edits.push_back({rel.string(), n, 1, changed + "\n"});
      }
    }
    if (e.text_edits.empty()) return out;
    e.title = fmt::format("kbuild no longer reads {}", fmt::join(used, ", "));
    e.description = fmt::format("The target's kbuild no longer reads these Makefile variables, which the old one "
                                "forwarded (scripts/Makefile.*): {}. The driver's makefiles use the current names.",
                                fmt::join(used, "; "));
    for (const auto& u : used) e.symbols.push_back(u.substr(0, u.find(' ')));
    e.support = 1;
    out.push_back(std::move(e));
    return out;
  }

private:
  std::string m_for;
  std::map<std::string, std::string> m_aliases;
};

} // namespace

std::unique_ptr<Proposer> make_kbuild_vars() { return std::make_unique<KbuildVars>(); }

} // namespace autodriver::propose
