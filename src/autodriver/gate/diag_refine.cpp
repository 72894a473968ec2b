#include "autodriver/gate/diag_refine.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <map>
#include <regex>
#include <set>

namespace autodriver::gate {

namespace {

std::string source_line(std::map<std::string, std::string>& cache, const std::filesystem::path& tree, const std::string& file,
                        int line) {
  if (file.empty() || file.front() == '/' || line < 1) return {};
  auto it = cache.find(file);
  if (it == cache.end()) {
    auto text = util::read_file(tree / file);
    it = cache.emplace(file, text ? std::move(*text) : std::string()).first;
  }
  auto lines = util::split_lines(it->second);
  if (static_cast<std::size_t>(line) > lines.size()) return {};
  return std::string(lines[static_cast<std::size_t>(line) - 1]);
}

} // namespace

void refine_with_sources(std::vector<core::Diagnostic>& diags, const std::filesystem::path& tree) {
  static const std::regex k_macro_note(R"(^in expansion of macro '([^']+)')");
  static const std::regex k_call_line(R"(^(?:static\s+)?([A-Za-z_]\w*)\s*\()");
  static const std::set<std::string> k_not_calls = {"if",     "for",    "while",         "switch", "return",
                                                    "sizeof", "typeof", "__attribute__", "asm",    "__asm__"};
  std::map<std::string, std::string> cache;
  // A macro called with the wrong number of arguments is left unexpanded and reads as a K&R
  // declaration too; gcc said so on the same line ("macro "X" requires 2 arguments").
  std::set<std::string> macro_arity;
  for (const auto& d : diags)
    if ((d.kind == core::DiagKind::too_few_arguments || d.kind == core::DiagKind::too_many_arguments) &&
        d.message.starts_with("macro ") && !d.symbols.empty())
      macro_arity.insert(d.file + ":" + std::to_string(d.line) + ":" + d.symbols[0]);
  for (auto& d : diags) {
    if (!d.function.empty() || d.severity == core::Severity::note) continue;
    bool syntax = d.kind == core::DiagKind::syntax_error && d.message.starts_with("expected declaration specifiers");
    bool implicit_int = d.message.starts_with("type defaults to 'int' in declaration of '");
    if (!syntax && !implicit_int) continue;
    std::string file = d.file;
    int line = d.line;
    std::set<std::string> expanded;
    for (const auto& n : d.notes) {
      std::smatch m;
      if (!std::regex_search(n.message, m, k_macro_note)) continue;
      expanded.insert(m[1].str());
      if (!n.file.empty() && n.file.front() != '/') {
        file = n.file;
        line = n.line;
      }
    }
    std::string text = std::string(util::trim(source_line(cache, tree, file, line)));
    std::smatch m;
    if (!std::regex_search(text, m, k_call_line)) continue;
    std::string ident = m[1].str();
    if (k_not_calls.count(ident) || expanded.count(ident)) continue;
    if (macro_arity.count(file + ":" + std::to_string(line) + ":" + ident)) continue;
    // "type defaults to 'int' in declaration of 'X'" names the call's own identifier.
    if (implicit_int && d.message.find("'" + ident + "'") == std::string::npos) continue;
    d.file = file;
    d.line = line;
    d.column = 1;
    d.kind = core::DiagKind::implicit_function_declaration;
    d.symbols = {ident};
    d.message = "implicit declaration of function '" + ident + "' (a file-scope macro call: " + d.message + ")";
  }
}

} // namespace autodriver::gate
