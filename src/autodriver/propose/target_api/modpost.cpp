// target-api strategies "import-namespace" and "unexported-array": modpost's complaints about a
// symbol the target moved into a namespace or stopped exporting.

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

/// modpost: "module m uses symbol s from namespace NS, but does not import it": the target
/// moved the symbol into a namespace; the module imports it next to its MODULE_LICENSE, written
/// the way the target's own modules write the import.
void import_namespace(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                      std::vector<Edit>& out) {
  // Up to 6.12: "module m uses symbol s from namespace NS, ..."; since 6.13 the names are
  // quoted and the module comes first: "m.ko: module uses symbol 's' from namespace 'NS', ...".
  static const std::regex k_ns(
      R"((?:module (\S+)|(\S+?)(?:\.ko)?: module) uses symbol '?([^\s']+)'? from namespace '?([A-Za-z_]\w*)'?, but does not import it)");
  std::smatch m;
  if (!std::regex_search(d.message, m, k_ns)) return;
  std::string module = m[1].matched ? m[1].str() : m[2].str(), symbol = m[3].str(), ns = m[4].str();
  if (!seen.insert("ns:" + module + ":" + ns).second) return;
  // The file with the module's MODULE_LICENSE: named like the module, else one using the symbol.
  std::string file;
  int line = 0, score = -1;
  static const std::regex k_license(R"(^\s*MODULE_LICENSE\s*\()");
  for (const auto& rel : util::list_files(ctx.tree)) {
    if (rel.extension() != ".c") continue;
    auto t = util::read_file(ctx.tree / rel);
    if (!t || t->find("MODULE_LICENSE") == std::string::npos) continue;
    int n = 0, at = 0;
    for (auto l : util::split_lines(*t)) {
      ++n;
      if (std::regex_search(std::string(l), k_license)) at = n;
    }
    if (!at) continue;
    int sc = (rel.stem().string() == module ? 2 : 0) + (has_word(*t, symbol) ? 1 : 0);
    if (sc > score) score = sc, file = rel.string(), line = at;
  }
  if (file.empty()) return;
  // 6.13 made the argument a string literal; follow the target's own callers.
  int quoted = 0, bare = 0;
  const auto callers = idx.caller_args("MODULE_IMPORT_NS", 1); // kept: the loop reads into it
  if (!callers.empty())
    for (const auto& [arg, n] : callers[0]) (arg.starts_with("\"") ? quoted : bare) += n;
  std::string arg = quoted > bare ? "\"" + ns + "\"" : ns;
  Edit e;
  e.proposer = "target-api";
  e.change_id = "import-ns:" + ns;
  e.label = "other";
  e.title = fmt::format("{} imports namespace {}", module, ns);
  e.description = fmt::format("The target exports {} in symbol namespace {}; modpost refuses a module that uses it "
                              "without MODULE_IMPORT_NS.",
                              symbol, ns);
  e.text_edits.push_back({file, line + 1, 0, fmt::format("MODULE_IMPORT_NS({});\n", arg), std::nullopt});
  e.symbols = {symbol, ns};
  e.support = 1;
  e.rank = 1;
  out.push_back(std::move(e));
}

/// modpost: "X" undefined, where the target keeps the array X private and exports the
/// function that indexes it (`led_get_color_name(u8 color_id) { ... return led_colors[color_id]; }`):
/// each `X[E]` of the driver becomes `F(E)`. Found in the target's own source: an exported
/// function of one parameter whose body returns X indexed by that parameter.
void unexported_array(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
  const std::string& sym = d.symbols[0];
  static const std::regex k_name(R"(^[A-Za-z_]\w*$)");
  if (!std::regex_match(sym, k_name)) return;
  bool indexed = false;
  for (const auto& [rel, text] : sources_mentioning(ctx.tree, sym))
    if (std::regex_search(text, std::regex("\\b" + sym + "\\s*\\["))) indexed = true;
  if (!indexed) return;
  kernel::SourceGrep q;
  q.options = {"-lE"};
  q.includes = {"*.c"};
  q.pattern = "return[[:space:]]+" + sym + "[[:space:]]*\\[";
  q.dirs = kernel::k_code_dirs;
  q.all_of = {sym};
  for (const auto& line : kernel::grep_source(ctx.new_src, q)) {
    auto text = util::read_file(ctx.new_src / line);
    if (!text) continue;
    auto toks = tokenize(*text);
    for (const auto& u : find_units(toks)) {
      if (u.kind != UnitKind::function) continue;
      // One named parameter, and `return sym [ param ] ;` in the body.
      std::size_t open = u.first;
      while (open < u.body && !(toks[open].text == u.name && open + 1 < u.body && toks[open + 1].text == "(")) ++open;
      if (open >= u.body) continue;
      std::size_t close = matching_close(toks, open + 1);
      if (close == std::string::npos || close > u.body) continue;
      std::string param;
      int commas = 0;
      for (std::size_t k = open + 2; k < close; ++k) commas += toks[k].text == ",";
      if (commas != 0 || close < open + 3 || toks[close - 1].kind != TokKind::ident) continue;
      param = toks[close - 1].text;
      bool returns = false;
      for (std::size_t k = u.body; k + 5 <= u.last && k + 5 < toks.size(); ++k)
        if (toks[k].text == "return" && toks[k + 1].text == sym && toks[k + 2].text == "[" && toks[k + 3].text == param &&
            toks[k + 4].text == "]" && toks[k + 5].text == ";")
          returns = true;
      if (!returns) continue;
      static const std::regex k_export(R"(EXPORT_SYMBOL(_GPL)?\s*\(\s*([A-Za-z_]\w*)\s*\))");
      bool exported = false;
      for (std::sregex_iterator it(text->begin(), text->end(), k_export), end; it != end; ++it)
        if ((*it)[2].str() == u.name) exported = true;
      if (!exported || !idx.names().count(u.name)) continue;
      Edit e;
      e.proposer = "target-api";
      e.change_id = "array:" + sym;
      e.label = "removed-with-replacement";
      e.title = fmt::format("{}[] is not exported: use {}()", sym, u.name);
      e.description = fmt::format("The target keeps {}[] to itself and exports {}() ({}), which returns {}[{}]: "
                                  "each {}[E] becomes {}(E).",
                                  sym, u.name, std::string(line), sym, param, sym, u.name);
      e.smpl = fmt::format("@@\nexpression E;\n@@\n- {}[E]\n+ {}(E)\n", sym, u.name);
      e.symbols = {sym, u.name};
      e.evidence = {std::string(line)};
      e.support = 1;
      out.push_back(std::move(e));
      return;
    }
  }
}

} // namespace autodriver::propose::target_api
