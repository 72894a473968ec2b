// target-api strategy "adapter": a value the target wants made by an adapter macro of the header
// that defines its type.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/shared/adapter_macro.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/target_api/strategies.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace autodriver::propose::target_api {

using namespace csrc; // the C reader shared with gate/
namespace fs = std::filesystem;
using core::DiagKind;

/// The driver passes `p<in>` where the target wants the type an adapter macro of the header
/// defining that type makes from it (`.default_groups = foo_attrs` wants `const struct
/// attribute_group **`; sysfs.h's ATTRIBUTE_GROUPS(foo) defines foo_groups from foo_attrs).
void adapter(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
  static const std::regex k_tag(R"(struct\s+([A-Za-z_]\w*))");
  std::smatch tm;
  if (!std::regex_search(d.symbols[0], tm, k_tag)) return;
  auto header = idx.header_defining(tm[1].str());
  if (header.empty()) return;
  auto htext = util::read_file(header);
  if (!htext) return;
  auto text = util::read_file(ctx.tree / d.file);
  auto line = diagnostic_line(ctx.tree, d);
  if (!text || !line) return;
  auto toks = tokenize(*text);
  for (const auto& a : adapter_macros(*htext)) {
    if (no_spaces(a.out_type) != no_spaces(d.symbols[0])) continue;
    // The one identifier on the line named `p<in>`.
    std::vector<const Token*> vals;
    for (const auto& t : toks)
      if (t.line == d.line && t.kind == TokKind::ident && t.text.size() > a.in_suffix.size() && t.text.ends_with(a.in_suffix))
        vals.push_back(&t);
    if (vals.size() != 1) continue;
    const std::string v = vals.front()->text;
    const std::string base = v.substr(0, v.size() - a.in_suffix.size());
    // Its definition in this file, after which the macro goes (unless the driver has it).
    const Unit* def = nullptr;
    auto units = find_units(toks);
    for (const auto& u : units)
      if (u.kind == UnitKind::initializer && u.name == v) def = &u;
    if (!def) continue;
    bool has = false;
    for (std::size_t i = 0; i + 3 < toks.size(); ++i)
      if (toks[i].text == a.macro && toks[i + 1].text == "(" && toks[i + 2].text == base) has = true;
    Edit e;
    e.proposer = "target-api";
    e.change_id = "adapter:" + v;
    e.label = "member-changed";
    e.title = fmt::format("pass {}{} made by {}({}) instead of {}", base, a.out_suffix, a.macro, base, v);
    e.description =
        fmt::format("The target wants '{}' where the driver passes {} ('{}'); {} of {} makes "
                    "{}{} of that type from {}.",
                    d.symbols[0], v, d.symbols[1], a.macro, fs::relative(header, ctx.new_src).string(), base, a.out_suffix, v);
    std::string l = *line;
    std::size_t nl = vals.front()->begin == 0 ? std::string::npos : text->rfind('\n', vals.front()->begin - 1);
    std::size_t col = vals.front()->begin - (nl == std::string::npos ? 0 : nl + 1);
    l.replace(col, v.size(), base + a.out_suffix);
    e.text_edits.push_back({d.file, d.line, 1, l + "\n"});
    if (!has) e.text_edits.push_back({d.file, toks[def->last].line + 1, 0, a.macro + "(" + base + ");\n"});
    e.symbols = {a.macro, base + a.out_suffix, v};
    e.support = 1;
    out.push_back(std::move(e));
    return;
  }
}

} // namespace autodriver::propose::target_api
