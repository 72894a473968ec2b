// Proposer "entry-points": objtool refuses a module entry point found by its magic name
// ("lime.o: error: objtool: init_module(): Magic init_module() function name is deprecated, use
// module_init(fn) instead"; the same words for cleanup_module()). Which macro registers which
// magic name is read off the target's own headers (module_init() defines init_module() as an
// alias of its argument, module_exit() cleanup_module()). Every magic entry point the driver
// defines gets a name of its own (`<module>_<magic name>`) and is registered with its macro
// right after its definition, in one edit (objtool reports one at a time).

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

/// A magic entry point and the macro that defines it for a function of the module's own: read
/// off the target's headers (`#define module_exit(exitfn) ... void cleanup_module(void)
/// __copy(exitfn) __attribute__((alias(#exitfn)));`).
struct Magic {
  std::string fn, macro;
};

std::vector<Magic> magic_entry_points(const std::filesystem::path& src) {
  std::vector<Magic> out;
  if (src.empty()) return out;
  kernel::SourceGrep q;
  q.options = {"-lE"};
  q.includes = {"*.h"};
  q.pattern = "alias\\(#";
  q.dirs = {"include/linux"};
  q.all_of = {"alias"};
  q.timeout = std::chrono::seconds(60);
  static const std::regex k_define(R"(#\s*define\s+([A-Za-z_]\w*)\(([A-Za-z_]\w*)\)((?:[^\n]*\\\n)*[^\n]*))");
  for (const auto& line : kernel::grep_source(src, q)) {
    auto text = util::read_file(src / line);
    if (!text) continue;
    for (auto it = std::sregex_iterator(text->begin(), text->end(), k_define); it != std::sregex_iterator(); ++it) {
      const std::string macro = (*it)[1].str(), arg = (*it)[2].str(), body = (*it)[3].str();
      std::smatch m;
      const std::regex k_alias("([A-Za-z_]\\w*)\\(void\\)[^;]*alias\\(#" + arg + "\\)");
      if (std::regex_search(body, m, k_alias)) out.push_back({m[1].str(), macro});
    }
  }
  return out;
}

class EntryPoints final : public Proposer {
public:
  std::string_view id() const override { return "entry-points"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    std::string object;
    for (const auto& d : diags)
      if (d.tool == "objtool" && d.severity == core::Severity::error && d.message.find("Magic") != std::string::npos &&
          !d.function.empty())
        object = d.file;
    if (object.empty()) return out;
    if (m_magic_src != ctx.new_src) {
      m_magic = magic_entry_points(ctx.new_src);
      m_magic_src = ctx.new_src;
    }
    const std::string module = std::filesystem::path(object).stem().string();
    static const std::regex k_ident(R"(^[A-Za-z_]\w*$)");
    Edit e;
    e.proposer = "entry-points";
    e.label = "other";
    std::vector<std::string> done, names;
    for (const auto& [magic, macro] : m_magic) {
      const std::string name = module + "_" + magic;
      if (!std::regex_match(name, k_ident)) continue;
      // The driver's definition, and no other use of the new name anywhere in it.
      std::string file;
      int after_line = 0;
      for (const auto& [rel, t] : sources_mentioning(ctx.tree, magic)) {
        auto toks = tokenize(t);
        for (const auto& u : find_units(toks))
          if (u.kind == UnitKind::function && u.name == magic && file.empty()) {
            file = rel;
            after_line = toks[u.last].line;
          }
      }
      bool clash = !sources_mentioning(ctx.tree, name).empty();
      if (file.empty() || clash) continue;
      e.renames.push_back({magic, name});
      e.text_edits.push_back({file, after_line + 1, 0, fmt::format("{}({});\n", macro, name)});
      e.symbols.push_back(magic);
      e.symbols.push_back(macro);
      names.push_back(name);
      done.push_back(fmt::format("{}() -> {}({})", magic, macro, name));
    }
    if (done.empty()) return out;
    e.change_id = "entry:" + module;
    std::vector<std::string> macros;
    for (std::size_t i = 1; i < e.symbols.size(); i += 2) macros.push_back(e.symbols[i]);
    e.title = fmt::format("entry points registered with {}", fmt::join(macros, ", "));
    e.description = fmt::format("objtool no longer accepts a module entry point by its magic name; each gets a name of "
                                "its own and is registered with the macro the target's <linux/module.h> defines it "
                                "with: {}.",
                                fmt::join(done, "; "));
    // The new names are what the integrity gate sees on the renamed definitions' lines.
    e.symbols.insert(e.symbols.end(), names.begin(), names.end());
    e.support = 1;
    out.push_back(std::move(e));
    return out;
  }

private:
  std::filesystem::path m_magic_src;
  std::vector<Magic> m_magic;
};

} // namespace

std::unique_ptr<Proposer> make_entry_points() { return std::make_unique<EntryPoints>(); }

} // namespace autodriver::propose
