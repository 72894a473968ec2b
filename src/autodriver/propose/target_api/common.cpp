// target-api: helpers more than one strategy uses.

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

/// A type's text without its spaces ("struct a *" -> "structa*").
std::string no_spaces(std::string t) {
  t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
  return t;
}

int compat(const std::string& arg, const Param& p) {
  const std::string& t = p.type;
  bool typed = !t.empty();
  bool ptr = t.find('*') != std::string::npos;
  bool charp = ptr && t.find("char") != std::string::npos;
  int s = 0;
  if (typed) {
    if (!arg.empty() && arg[0] == '"') s += charp ? 3 : ptr ? -1 : -3;
    else if (arg == "THIS_MODULE") s += t.find("module") != std::string::npos ? 3 : -3;
    else if (!arg.empty() && std::isdigit(static_cast<unsigned char>(arg[0]))) s += ptr ? (arg == "0" ? 0 : -2) : 1;
    else if (arg == "NULL") s += ptr ? 1 : -1;
    else if (arg.starts_with("GFP_") || arg.starts_with("__GFP_")) s += t.find("gfp") != std::string::npos ? 3 : -2;
    else if (arg.starts_with("&")) s += ptr ? 1 : -2;
  }
  // Name agreement: the argument's last identifier against the parameter's name.
  auto toks = tokenize(arg);
  for (auto it = toks.rbegin(); it != toks.rend(); ++it)
    if (it->kind == TokKind::ident) {
      if (!p.name.empty() && name_similarity(it->text, p.name) >= 0.6) s += 2;
      break;
    }
  return s;
}

Edit shim_edit(const std::string& file, const std::string& name, int line, int lines, const char* what) {
  Edit e;
  e.proposer = "target-api";
  e.change_id = "shim:" + name;
  e.label = "other";
  e.title = fmt::format("the target defines {} itself", name);
  e.description = fmt::format("The driver's own {} {} (a compat definition for kernels that lacked it) clashes with "
                              "the target kernel's definition of the same name; it is removed.",
                              what, name);
  e.text_edits.push_back({file, line, lines, "", std::nullopt});
  e.symbols = {name};
  e.support = 1;
  e.rank = 1;
  return e;
}

} // namespace autodriver::propose::target_api
