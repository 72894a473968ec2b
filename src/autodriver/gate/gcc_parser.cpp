#include "autodriver/gate/gcc_parser.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include <charconv>
#include <regex>

namespace autodriver::gate {

using core::DiagKind;
using core::Diagnostic;
using core::Severity;

namespace {

std::vector<std::string> quoted_words(std::string_view msg) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    auto open = msg.find('\'', pos);
    if (open == std::string_view::npos) break;
    auto close = msg.find('\'', open + 1);
    if (close == std::string_view::npos) break;
    out.emplace_back(msg.substr(open + 1, close - open - 1));
    pos = close + 1;
  }
  return out;
}

struct Rule {
  std::regex re;
  DiagKind kind;
  std::vector<int> groups; // capture groups that are symbols
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> k_rules = [] {
    std::vector<Rule> r;
    auto add = [&](const char* re, DiagKind k, std::vector<int> g) { r.push_back({std::regex(re), k, std::move(g)}); };
    add(R"(^implicit declaration of function '([^']+)')", DiagKind::implicit_function_declaration, {1});
    add(R"(^too few arguments to function '([^']+)')", DiagKind::too_few_arguments, {1});
    add(R"(^too many arguments to function '([^']+)')", DiagKind::too_many_arguments, {1});
    add(R"(^too (few|many) arguments to function)", DiagKind::too_few_arguments, {});
    add(R"re(^macro "([^"]+)" passed \d+ arguments, but takes just \d+)re", DiagKind::too_many_arguments, {1});
    add(R"re(^macro "([^"]+)" requires \d+ arguments, but only \d+ given)re", DiagKind::too_few_arguments, {1});
    add(R"(^'([^']+)' has no member named '([^']+)')", DiagKind::no_member, {1, 2});
    add(R"(^request for member '([^']+)' in something not a structure or union)", DiagKind::no_member, {1});
    add(R"(^(?:assignment|increment|decrement) of read-only member '([^']+)')", DiagKind::read_only_member, {1});
    add(R"(^(?:'return' with a value, in function returning void|'return' with no value, in function returning non-void))",
        DiagKind::incompatible_return_type, {});
    add(R"(^(?:returning '([^']+)' from a function with (?:incompatible )?return type '([^']+)'))",
        DiagKind::incompatible_return_type, {1, 2});
    add(R"(^incompatible types when returning type '([^']+)' but '([^']+)' was expected)", DiagKind::incompatible_return_type,
        {1, 2});
    // gcc may add " {aka '...'}" after each type; the symbols are the types as written.
    add(R"(^(?:initialization of|assignment to) '([^']+)'(?: \{aka '[^']+'\})? from incompatible pointer type '([^']+)')",
        DiagKind::incompatible_pointer_type, {1, 2});
    add(R"(^returning '([^']+)'(?: \{aka '[^']+'\})? from a function with incompatible return type '([^']+)')",
        DiagKind::incompatible_return_type, {1, 2});
    add(R"(^passing argument (\d+) of '([^']+)' from incompatible pointer type)", DiagKind::incompatible_pointer_type, {2});
    add(R"(incompatible pointer type)", DiagKind::incompatible_pointer_type, {});
    add(R"(^incompatible type for argument (\d+) of '([^']+)')", DiagKind::incompatible_type, {2});
    add(R"(^incompatible types when (?:assigning|initializing))", DiagKind::incompatible_type, {});
    add(R"(^unknown type name '([^']+)')", DiagKind::unknown_type, {1});
    add(R"(^'([^']+)' undeclared)", DiagKind::undeclared_identifier, {1});
    add(R"(^invalid use of undefined type '([^']+)')", DiagKind::incomplete_type, {1});
    add(R"(^dereferencing pointer to incomplete type '([^']+)')", DiagKind::incomplete_type, {1});
    add(R"(^(?:field|parameter \d+) '([^']+)' has incomplete type)", DiagKind::incomplete_type, {1});
    add(R"(^storage size of '([^']+)' isn't known)", DiagKind::incomplete_type, {1});
    add(R"(^invalid application of 'sizeof' to incomplete type '([^']+)')", DiagKind::incomplete_type, {1});
    add(R"(^array type has incomplete element type '([^']+)')", DiagKind::incomplete_type, {1});
    add(R"(^conflicting types for '([^']+)')", DiagKind::conflicting_types, {1});
    add(R"(^([^:]+\.h): No such file or directory)", DiagKind::missing_header, {1});
    add(R"(makes (?:pointer from integer|integer from pointer) without a cast)", DiagKind::int_conversion, {});
    add(R"(^passing argument \d+ of '([^']+)' makes)", DiagKind::int_conversion, {1});
    add(R"(^expected .* before)", DiagKind::syntax_error, {});
    add(R"(^expected )", DiagKind::syntax_error, {});
    add(R"(^'([^']+)' is deprecated)", DiagKind::deprecated, {1});
    add(R"(discards '(const|volatile)' qualifier)", DiagKind::const_qualifier, {});
    add(R"(^implicit declaration of)", DiagKind::implicit_function_declaration, {});
    // The driver's macro clashes with one of the same name (`"scmd_dbg" redefined`, an error
    // under -Werror): the name is the symbol, so that the compat-shim strategies see it.
    add(R"re(^"([A-Za-z_]\w*)" redefined)re", DiagKind::other, {1});
    return r;
  }();
  return k_rules;
}

struct Loc {
  std::string file;
  int line = 0;
  int column = 0;
  std::string severity;
  std::string message;
};

/// A decimal number as printed in a location; 0 when it does not fit an int (a corrupted line).
int location_number(const std::string& s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? v : 0;
}

bool parse_location_line(std::string_view line, Loc& loc) {
  static const std::regex k_re(R"(^(.+?):(\d+):(?:(\d+):)? (fatal error|error|warning|note): (.*)$)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(line.begin(), line.end(), m, k_re)) return false;
  // A path holding ": " is a line with text before gcc's own ("[probe] make: Entering ...
  // test.c:23:30: error: ..."): a Makefile's $(info $(shell ...)) prints a feature probe's whole
  // output on one line; those errors are the probe's, expected, and name no file of the build.
  if (m[1].str().find(": ") != std::string::npos) return false;
  loc.file = m[1].str();
  loc.line = location_number(m[2].str());
  loc.column = m[3].matched ? location_number(m[3].str()) : 0;
  loc.severity = m[4].str();
  loc.message = m[5].str();
  return true;
}

std::string relativize(const std::string& file, const std::string& root, const std::string& subdir = {}) {
  if (!subdir.empty()) {
    // "/tree/drv/../common/x.c" or, from M=/tree/drv, "../common/x.c": both "common/x.c".
    namespace fs = std::filesystem;
    fs::path p(file);
    const bool relative = p.is_relative();
    if (relative) p = fs::path(root) / subdir / p;
    std::string n = p.lexically_normal().string();
    std::string prefix = root.back() == '/' ? root : root + "/";
    if (n.starts_with(prefix)) return n.substr(prefix.size());
    // Outside the tree: an absolute path stays as it was (a kernel header), a relative one
    // is told relative to the tree ("../x.o": a file the copy does not hold).
    return relative ? fs::path(n).lexically_relative(root).string() : file;
  }
  if (!root.empty()) {
    std::string prefix = root.back() == '/' ? root : root + "/";
    // `M=$(PWD)/` or `$(src)/./x.c` print "/tree//x.c": the same file as "/tree/x.c". A header
    // included by a relative path from a sub-folder ("/tree/src/mod/../../main.h") is the tree's
    // "src/main.h", one file whichever folder included it; a path that leaves the tree keeps
    // its ".." ("/tree/../common/x.o" is told "../common/x.o").
    std::string n = file;
    for (std::size_t at; (at = n.find("//")) != std::string::npos;) n.erase(at, 1);
    for (std::size_t at; (at = n.find("/./")) != std::string::npos;) n.erase(at, 2);
    if (n.starts_with(prefix)) {
      std::string rest = n.substr(prefix.size());
      if (rest.find("..") == std::string::npos) return rest;
      std::string normal = std::filesystem::path(rest).lexically_normal().string();
      return normal.empty() || normal.starts_with("..") ? rest : normal;
    }
  }
  return file;
}

std::string strip_flag(std::string& message) {
  static const std::regex k_flag(R"( \[(-W[^\]]+)\]$)");
  std::smatch m;
  if (std::regex_search(message, m, k_flag)) {
    std::string flag = m[1].str();
    message = message.substr(0, static_cast<std::size_t>(m.position(0)));
    return flag;
  }
  return {};
}

} // namespace

DiagKind classify_message(std::string_view message, std::vector<std::string>& symbols) {
  std::string msg(message);
  for (const auto& rule : rules()) {
    std::smatch m;
    if (!std::regex_search(msg, m, rule.re)) continue;
    for (int g : rule.groups)
      if (m[g].matched) symbols.push_back(m[g].str());
    if (symbols.empty() && rule.kind != DiagKind::syntax_error) symbols = quoted_words(msg);
    return rule.kind;
  }
  symbols = quoted_words(msg);
  return DiagKind::other;
}

namespace {

/// A line of a tool other than the compiler: modpost, the assembler (`compiling`: the source of
/// the object kbuild compiles now), make's "No rule to make target", objtool.
std::optional<Diagnostic> tool_line(const std::string& line, const ParseOptions& options, const std::string& compiling) {
  static const std::regex k_modpost_undef(R"(^(ERROR|WARNING): modpost: \"([^\"]+)\" \[([^\]]+)\] undefined!$)");
  static const std::regex k_modpost_other(R"(^(ERROR|WARNING): modpost: (.*)$)");
  // objtool checks each object after it is compiled and linked ("lime.o: error: objtool:
  // init_module(): Magic init_module() function name is deprecated, use module_init(fn) instead").
  static const std::regex k_objtool(R"(^(\S+\.o): (error|warning): objtool: (.*)$)");
  static const std::regex k_objtool_fn(R"(^([A-Za-z_]\w*)\(\)(?:\+0x[0-9a-f]+)?:)");
  // The assembler fails on what the compiler emitted from a file-scope macro (an export in a
  // namespace written the old way): "/tmp/ccX.s:7: Error: junk at end of line, ...".
  static const std::regex k_as(R"(^\S+\.s:\d+: (Error|Warning): (.*)$)");
  // A Makefile naming a file that is not there (a sibling folder the copy did not include):
  // "make[2]: *** No rule to make target '../common/x.o', needed by 'drv.o'.  Stop."
  static const std::regex k_no_rule(
      R"(^make(?:\[\d+\])?: \*\*\* No rule to make target [`']([^']+)'(?:, needed by [`']([^']+)')?\..*$)");
  std::smatch m;
  if (std::regex_match(line, m, k_modpost_undef)) {
    Diagnostic d;
    d.tool = "modpost";
    d.file = relativize(m[3].str(), options.tree_root, options.subdir);
    d.severity = m[1].str() == "ERROR" ? Severity::error : Severity::warning;
    d.kind = DiagKind::modpost_undefined_symbol;
    d.symbols = {m[2].str()};
    d.message = "\"" + m[2].str() + "\" undefined";
    d.raw = line + "\n";
    return d;
  }
  if (std::regex_match(line, m, k_as)) {
    Diagnostic d;
    d.tool = "as";
    d.file = compiling;
    d.severity = m[1].str() == "Error" ? Severity::error : Severity::warning;
    d.kind = DiagKind::other;
    d.message = "assembler: " + m[2].str();
    d.raw = line + "\n";
    return d;
  }
  if (std::regex_match(line, m, k_no_rule)) {
    Diagnostic d;
    d.tool = "make";
    d.file = relativize(m[1].str(), options.tree_root, options.subdir);
    d.severity = Severity::error;
    d.kind = DiagKind::other;
    d.message = fmt::format(
        "the build needs '{}', which is not there{}{}", d.file,
        m[2].matched ? fmt::format(" (needed by '{}')", relativize(m[2].str(), options.tree_root, options.subdir)) : "",
        d.file.starts_with("../") ? ": it lies outside the folder copied; give --root, a folder holding both" : "");
    d.symbols = {d.file};
    d.raw = line + "\n";
    return d;
  }
  if (std::regex_match(line, m, k_objtool)) {
    Diagnostic d;
    d.tool = "objtool";
    d.file = relativize(m[1].str(), options.tree_root, options.subdir);
    d.severity = m[2].str() == "error" ? Severity::error : Severity::warning;
    d.kind = DiagKind::other;
    d.message = m[3].str();
    std::smatch f;
    if (std::regex_search(d.message, f, k_objtool_fn)) d.function = f[1].str();
    d.symbols = quoted_words(d.message);
    if (!d.function.empty()) d.symbols.insert(d.symbols.begin(), d.function);
    d.raw = line + "\n";
    return d;
  }
  if (std::regex_match(line, m, k_modpost_other)) {
    Diagnostic d;
    d.tool = "modpost";
    d.severity = m[1].str() == "ERROR" ? Severity::error : Severity::warning;
    d.kind = DiagKind::modpost_other;
    d.message = m[2].str();
    d.symbols = quoted_words(d.message);
    d.raw = line + "\n";
    return d;
  }
  return std::nullopt;
}

} // namespace

std::vector<Diagnostic> parse_build_output(std::string_view text, const ParseOptions& options) {
  std::vector<Diagnostic> out;
  std::string current_function;
  std::string include_context;
  bool last_is_open = false; // source excerpt lines attach to the last diagnostic
  static const std::regex k_in_function(R"(^(.+?): In function '([^']+)':$)");
  static const std::regex k_top_level(R"(^(.+?): At top level:$)");
  static const std::regex k_included(R"(^(?:In file included|                 from) .*[,:]$)");
  // kbuild's "CC [M]  dir/file.o": the object being compiled (the assembler's errors are its).
  static const std::regex k_cc(R"(^\s+CC \[M\]\s+(\S+)\.o$)");
  std::string compiling; // the source file of the object kbuild compiles now (relative)

  for (auto line_view : util::split_lines(text)) {
    std::string line(util::parsed_line(line_view));
    std::smatch m;
    Loc loc;
    if (std::regex_match(line, m, k_in_function)) {
      current_function = m[2].str();
      last_is_open = false;
      continue;
    }
    if (std::regex_match(line, m, k_top_level)) {
      current_function.clear();
      last_is_open = false;
      continue;
    }
    if (std::regex_match(line, k_included)) {
      include_context += line + "\n";
      last_is_open = false;
      continue;
    }
    if (parse_location_line(line, loc)) {
      std::string file = relativize(loc.file, options.tree_root, options.subdir);
      if (loc.severity == "note" && !out.empty()) {
        auto& prev = out.back();
        prev.notes.push_back({file, loc.line, loc.column, loc.message});
        prev.raw += include_context + line + "\n";
        include_context.clear();
        last_is_open = true;
        continue;
      }
      Diagnostic d;
      d.tool = options.tool;
      d.file = file;
      d.line = loc.line;
      d.column = loc.column;
      d.severity = loc.severity == "warning"       ? Severity::warning
                   : loc.severity == "note"        ? Severity::note
                   : loc.severity == "fatal error" ? Severity::fatal
                                                   : Severity::error;
      d.flag = strip_flag(loc.message);
      d.message = loc.message;
      d.function = current_function;
      d.kind = classify_message(d.message, d.symbols);
      if (d.severity == Severity::fatal && d.kind == DiagKind::other && d.message.find("No such file") != std::string::npos)
        d.kind = DiagKind::missing_header;
      if (options.tool == "sparse") d.kind = DiagKind::sparse;
      d.raw = include_context + line + "\n";
      include_context.clear();
      out.push_back(std::move(d));
      last_is_open = true;
      continue;
    }
    if (std::regex_match(line, m, k_cc)) {
      compiling = relativize(m[1].str() + ".c", options.tree_root, options.subdir);
      last_is_open = false;
      continue;
    }
    if (auto d = tool_line(line, options, compiling)) {
      out.push_back(std::move(*d));
      last_is_open = false;
      continue;
    }
    // gcc's source excerpt ("  12 |   foo();" and the caret line) belongs to the diagnostic above it.
    if (last_is_open && !out.empty() && line.find(" | ") != std::string::npos) {
      out.back().raw += line + "\n";
      continue;
    }
    if (last_is_open && !out.empty() && line.find('|') != std::string::npos && util::trim(line).front() == '|') {
      out.back().raw += line + "\n";
      continue;
    }
    last_is_open = false;
  }
  return out;
}

} // namespace autodriver::gate
