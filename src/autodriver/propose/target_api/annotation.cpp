// target-api strategy "obsolete-annotation": annotation macros the target no longer defines.

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

/// "expected '=', ',', ';', 'asm' or '__attribute__' before 'X'": a declaration carries an
/// annotation macro the target no longer defines (`static int __devinit probe(...)`,
/// `ids[] __devinitdata = {`; the hotplug section markers went in 3.8). An `__identifier` the
/// target declares nowhere, right before X or X itself, is dropped.
void obsolete_annotation(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                         std::vector<Edit>& out) {
  static const std::regex k_msg(R"(^expected '=', ',', ';', 'asm' or '__attribute__' before '([A-Za-z_]\w*)')");
  std::smatch m;
  if (d.file.empty() || d.file.front() == '/' || !std::regex_search(d.message, m, k_msg)) return;
  auto text = util::read_file(ctx.tree / d.file);
  if (!text) return;
  auto toks = tokenize(*text);
  const std::string x = m[1].str();
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].line != d.line || toks[i].text != x) continue;
    std::size_t a = x.starts_with("__") ? i : (i > 0 ? i - 1 : i);
    const Token& t = toks[a];
    if (t.kind != TokKind::ident || !t.text.starts_with("__") || idx.names().count(t.text)) return;
    if (!seen.insert("annotation:" + t.text + ":" + d.file).second) return;
    Edit e;
    e.proposer = "target-api";
    e.change_id = "annotation:" + t.text + ":" + d.file; // one edit per file: each file reports its own
    e.label = "removed-with-replacement";
    e.title = fmt::format("{} is gone: an obsolete annotation, dropped", t.text);
    e.description = fmt::format("The target kernel defines no {} and gcc cannot parse the declaration that carries "
                                "it: an annotation macro of older kernels, removed from the declarations.",
                                t.text);
    // Every declaration of the file with it, as a whole-word removal (with the space before it).
    auto lines = util::split_lines(*text);
    for (const auto& u : toks) {
      if (u.kind != TokKind::ident || u.text != t.text) continue;
      std::string line(lines[static_cast<std::size_t>(u.line) - 1]);
      std::string fixed = std::regex_replace(line, std::regex(R"([ \t]*\b)" + t.text + R"(\b)"), "");
      if (fixed != line && (e.text_edits.empty() || e.text_edits.back().line != u.line))
        e.text_edits.push_back({d.file, u.line, 1, fixed + "\n"});
    }
    if (e.text_edits.empty()) return;
    e.symbols = {t.text};
    e.support = 1;
    out.push_back(std::move(e));
    return;
  }
}

} // namespace autodriver::propose::target_api
