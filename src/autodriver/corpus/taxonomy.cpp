#include "autodriver/corpus/taxonomy.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

namespace autodriver::corpus {

namespace fs = std::filesystem;
using core::DiagKind;
using core::Diagnostic;

const std::vector<std::string>& change_types() {
  static const std::vector<std::string> k_types = {"rename",
                                                   "arguments-changed",
                                                   "return-type-changed",
                                                   "member-changed",
                                                   "callback-type-changed",
                                                   "removed-with-replacement",
                                                   "header-moved",
                                                   "other"};
  return k_types;
}

namespace {

bool is_identifier(std::string_view s) {
  static const std::regex k_id(R"(^[A-Za-z_]\w*$)");
  return std::regex_match(s.begin(), s.end(), k_id);
}

std::string bare_name(const std::string& symbol) {
  for (const char* p : {"struct ", "union ", "enum "})
    if (symbol.starts_with(p)) return symbol.substr(std::string(p).size());
  return symbol;
}

/// Cut the declaration region starting at `idx` (0-based) out of `lines`.
std::string region_at(const std::vector<std::string_view>& lines, std::size_t idx, const std::string& kind) {
  std::string out;
  std::size_t begin = idx;
  // A return type on the line before a name that starts in column 0.
  if (kind == "function" && idx > 0 && !lines[idx].empty() && lines[idx][0] != ' ' && lines[idx][0] != '\t') {
    auto prev = util::trim(lines[idx - 1]);
    if (!prev.empty() && !prev.ends_with(";") && !prev.ends_with("}") && !prev.ends_with("*/") && !prev.starts_with("#"))
      begin = idx - 1;
  }
  int depth = 0;
  bool opened = false;
  for (std::size_t i = begin; i < lines.size() && i < begin + 60; ++i) {
    std::string_view l = lines[i];
    out += std::string(l) + "\n";
    if (i < idx) continue;
    if (kind == "macro") {
      if (!l.ends_with("\\")) break;
      continue;
    }
    for (char c : l) {
      if (c == '{') {
        ++depth;
        opened = true;
      }
      if (c == '}') --depth;
    }
    if (opened && depth <= 0) break;
    if (!opened && l.find(';') != std::string_view::npos) break;
  }
  return out;
}

} // namespace

bool HeaderIndex::header_exists(const std::string& inc) const {
  std::error_code ec;
  return fs::exists(m_tree / "include" / inc, ec) || fs::exists(m_tree / "arch/x86/include" / inc, ec);
}

std::map<std::string, HeaderDecl> HeaderIndex::find(const std::vector<std::string>& symbols) const {
  std::map<std::string, HeaderDecl> out;
  std::vector<std::string> names;
  for (const auto& s : symbols)
    if (is_identifier(bare_name(s))) names.push_back(bare_name(s));
  if (names.empty()) return out;
  util::RunRequest req;
  req.argv = {"grep", "-rnwE", "--include=*.h"};
  for (const auto& n : names) {
    req.argv.push_back("-e");
    req.argv.push_back(n);
  }
  req.argv.push_back("include");
  req.argv.push_back("arch/x86/include");
  req.cwd = m_tree;
  req.timeout = std::chrono::seconds(120);
  req.output_cap = 16 * 1024 * 1024;
  auto r = util::run(req);
  if (!r) return out;
  struct Hit {
    std::string file;
    int line;
    std::string kind;
    int rank;
  };
  std::map<std::string, Hit> best; // symbol -> best hit
  for (const auto& s : symbols) {
    std::string n = bare_name(s);
    if (!is_identifier(n)) continue;
    bool is_type = s != n;
    std::regex macro(R"(^\s*#\s*define\s+)" + n + R"(\b)");
    std::regex record(R"(^\s*(struct|union|enum)\s+)" + n + R"(\s*\{?\s*$)");
    std::regex typedef_re(R"(^\s*typedef\b.*\b)" + n + R"(\s*;)");
    std::regex typedef_end(R"(^\s*\}\s*)" + n + R"(\s*;)");
    std::regex func(R"(^\s*(extern\s+|static\s+)?[A-Za-z_][\w\s\*]*[\s\*])" + n + R"(\s*\()");
    std::regex func_col0("^" + n + R"(\s*\()");
    std::regex var(R"(^\s*extern\b[^(]*\b)" + n + R"(\b)");
    for (auto line : util::split_lines(r->out)) {
      // path:line:text
      auto c1 = line.find(':');
      if (c1 == std::string_view::npos) continue;
      auto c2 = line.find(':', c1 + 1);
      if (c2 == std::string_view::npos) continue;
      std::string file(line.substr(0, c1));
      int lno = std::atoi(std::string(line.substr(c1 + 1, c2 - c1 - 1)).c_str());
      std::string text(line.substr(c2 + 1));
      if (text.find(n) == std::string::npos) continue;
      std::string kind;
      if (is_type) {
        if (std::regex_search(text, record)) kind = "struct";
        else if (std::regex_search(text, typedef_end)) kind = "typedef";
      } else if (std::regex_search(text, macro)) kind = "macro";
      else if (std::regex_search(text, typedef_re) || std::regex_search(text, typedef_end)) kind = "typedef";
      else if (std::regex_search(text, func) || std::regex_search(text, func_col0)) kind = "function";
      else if (std::regex_search(text, var)) kind = "variable";
      if (kind.empty()) continue;
      // Prefer include/linux, then other include/, then arch; uapi last.
      int rank = file.starts_with("include/linux/") ? 0 : file.starts_with("include/") ? 1 : 2;
      if (file.find("/uapi/") != std::string::npos) rank += 3;
      auto it = best.find(s);
      if (it == best.end() || rank < it->second.rank) best[s] = Hit{file, lno, kind, rank};
    }
  }
  std::map<std::string, std::string> cache;
  for (const auto& [sym, hit] : best) {
    auto& text = cache[hit.file];
    if (text.empty()) {
      auto t = util::read_file(m_tree / hit.file);
      if (!t) continue;
      text = std::move(*t);
    }
    auto lines = util::split_lines(text);
    if (hit.line < 1 || static_cast<std::size_t>(hit.line) > lines.size()) continue;
    HeaderDecl d{hit.file, hit.line, hit.kind, region_at(lines, static_cast<std::size_t>(hit.line - 1), hit.kind)};
    out[sym] = std::move(d);
  }
  return out;
}

std::string region_diff(const HeaderDecl* a, const HeaderDecl* b) {
  std::vector<std::string> x, y;
  if (a)
    for (auto l : util::split_lines(a->text)) x.emplace_back(l);
  if (b)
    for (auto l : util::split_lines(b->text)) y.emplace_back(l);
  if (a && b && a->file == b->file && x == y) return {};
  std::string out = fmt::format("--- {}\n+++ {}\n", a ? "a/" + a->file : "/dev/null", b ? "b/" + b->file : "/dev/null");
  if (a && b && a->file != b->file) {
    // Moved to another header: one removal hunk in the old file, one addition in the new one.
    HeaderDecl old_only = *a;
    HeaderDecl new_only = *b;
    std::string first = fmt::format("--- a/{}\n+++ b/{}\n@@ -{},{} +{},0 @@\n", a->file, a->file, a->line, x.size(), a->line);
    for (const auto& l : x) first += "-" + l + "\n";
    std::string second = fmt::format("--- a/{}\n+++ b/{}\n@@ -{},0 +{},{} @@\n", b->file, b->file, b->line, b->line, y.size());
    for (const auto& l : y) second += "+" + l + "\n";
    return first + second;
  }
  // LCS over the two small regions, emitted as one hunk.
  std::size_t n = x.size(), m = y.size();
  std::vector<std::vector<int>> dp(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;) dp[i][j] = x[i] == y[j] ? dp[i + 1][j + 1] + 1 : std::max(dp[i + 1][j], dp[i][j + 1]);
  int la = a ? a->line : 0, lb = b ? b->line : 0;
  if (!a) out = fmt::format("--- a/{}\n+++ b/{}\n", b->file, b->file);
  if (!b) out = fmt::format("--- a/{}\n+++ b/{}\n", a->file, a->file);
  out += fmt::format("@@ -{},{} +{},{} @@\n", la, n, lb, m);
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) {
      out += " " + x[i] + "\n";
      ++i;
      ++j;
    } else if (i < n && (j == m || dp[i + 1][j] >= dp[i][j + 1])) {
      out += "-" + x[i] + "\n";
      ++i;
    } else {
      out += "+" + y[j] + "\n";
      ++j;
    }
  }
  return out;
}

namespace {

std::string suggestion_of(const std::string& message) {
  static const std::regex k_re(R"(did you mean '([^']+)')");
  std::smatch m;
  return std::regex_search(message, m, k_re) ? m[1].str() : std::string();
}

/// The struct type of a driver variable, from "struct foo_driver bar = {" in the driver's sources.
std::string struct_of_variable(const std::string& var, const std::vector<std::string>& sources) {
  std::regex re(R"(\b(struct|union)\s+(\w+)\s+(?:__\w+\s+)*)" + var + R"(\s*=)");
  for (const auto& s : sources) {
    std::smatch m;
    if (std::regex_search(s, m, re)) return m[1].str() + " " + m[2].str();
  }
  return {};
}

struct Pending {
  ApiChange change;
  std::string lookup; ///< symbol whose declaration to compare ("" = none)
  DiagKind kind;
};

/// An incompatible type: an argument of a call, a callback assigned or initialized (the member
/// named by gcc's "near initialization" note or the assignment on the quoted line), or other.
void classify_type_mismatch(const Diagnostic& d, const std::vector<std::string>& driver_sources, Pending& p) {
  bool fnptrs =
      d.symbols.size() >= 2 && d.symbols[0].find("(*)") != std::string::npos && d.symbols[1].find("(*)") != std::string::npos;
  if (d.message.starts_with("passing argument")) {
    p.change.symbol = d.symbols.empty() ? std::string() : d.symbols.back();
    if (p.change.symbol.find('(') != std::string::npos || p.change.symbol.find(' ') != std::string::npos) {
      static const std::regex k_fn(R"(of '([A-Za-z_]\w*)')");
      std::smatch m;
      p.change.symbol = std::regex_search(d.message, m, k_fn) ? m[1].str() : std::string();
    }
    p.change.change_type = "arguments-changed";
    p.lookup = p.change.symbol;
  } else if (fnptrs || d.message.find("(*)") != std::string::npos) {
    p.change.change_type = "callback-type-changed";
    static const std::regex k_near(R"(near initialization for '([A-Za-z_]\w*)\.([^']+)')");
    for (const auto& note : d.notes) {
      std::smatch m;
      if (std::regex_search(note.message, m, k_near)) {
        auto type = struct_of_variable(m[1].str(), driver_sources);
        // 'drv.<anonymous>.remove': a member inside an anonymous union of the struct.
        std::string member = std::regex_replace(m[2].str(), std::regex(R"(<anonymous>\.)"), "");
        p.change.symbol = (type.empty() ? m[1].str() : type) + "." + member;
        p.lookup = type;
        break;
      }
    }
    if (p.change.symbol.empty()) {
      // "assignment to 'T (*)(...)'": the member assigned is on the quoted source line.
      static const std::regex k_assign(R"((->|\.)\s*([A-Za-z_]\w*)\s*=[^=])");
      std::smatch m;
      if (std::regex_search(d.raw, m, k_assign)) p.change.symbol = m[1].str() + m[2].str();
      else p.change.symbol = d.symbols.empty() ? std::string() : d.symbols[0];
    }
  } else {
    p.change.change_type = "other";
    p.change.symbol = d.symbols.empty() ? std::string() : d.symbols[0];
  }
}

/// The classification's labels (in change_types() order) and its one-line description.
void label_and_describe(Classification& c) {
  std::set<std::string> labels;
  for (const auto& ch : c.changes) labels.insert(ch.change_type);
  for (const auto& t : change_types())
    if (labels.count(t)) c.labels.push_back(t);
  std::vector<std::string> parts;
  for (const auto& ch : c.changes) {
    if (ch.change_type == "other" && c.changes.size() > 1) continue;
    std::string s = fmt::format("{}: {}", ch.symbol, ch.change_type);
    if (!ch.suggestion.empty()) s += fmt::format(" (gcc suggests {})", ch.suggestion);
    parts.push_back(s);
    if (parts.size() == 5) break;
  }
  c.description = parts.empty() ? "the driver no longer builds" : "";
  for (std::size_t i = 0; i < parts.size(); ++i) c.description += (i ? "; " : "") + parts[i];
  if (c.changes.size() > parts.size()) c.description += fmt::format("; and {} more", c.changes.size() - parts.size());
}

} // namespace

Classification classify(const std::vector<Diagnostic>& diagnostics, const HeaderIndex& from, const HeaderIndex& to,
                        const std::vector<std::string>& driver_sources) {
  std::vector<Pending> pend;
  std::set<std::string> seen_lines;
  for (const auto& d : diagnostics) {
    if (d.severity != core::Severity::error && d.severity != core::Severity::fatal) continue;
    // Later errors on a line already reported are cascades of the first one.
    if (d.tool == "gcc" && !seen_lines.insert(d.file + ":" + std::to_string(d.line)).second) continue;
    Pending p;
    p.kind = d.kind;
    p.change.evidence = d.message;
    p.change.suggestion = suggestion_of(d.message);
    const std::string first = d.symbols.empty() ? std::string() : d.symbols[0];
    switch (d.kind) {
    case DiagKind::missing_header:
      p.change.symbol = first;
      p.change.change_type = "header-moved";
      break;
    case DiagKind::no_member:
      p.change.symbol = d.symbols.size() >= 2 ? d.symbols[0] + "." + d.symbols[1] : first;
      p.change.change_type = "member-changed";
      p.lookup = first;
      break;
    case DiagKind::too_few_arguments:
    case DiagKind::too_many_arguments:
      p.change.symbol = first;
      p.change.change_type = "arguments-changed";
      p.lookup = first;
      break;
    case DiagKind::incompatible_return_type:
      p.change.symbol = first.empty() ? d.function : first;
      p.change.change_type = "return-type-changed";
      break;
    case DiagKind::conflicting_types:
      p.change.symbol = first;
      p.change.change_type = "arguments-changed"; // refined below from the declarations
      p.lookup = first;
      break;
    case DiagKind::implicit_function_declaration:
    case DiagKind::undeclared_identifier:
    case DiagKind::unknown_type:
    case DiagKind::modpost_undefined_symbol:
      p.change.symbol = first;
      p.change.change_type = "removed-with-replacement"; // refined below
      p.lookup = first;
      break;
    case DiagKind::incompatible_pointer_type:
    case DiagKind::incompatible_type:
    case DiagKind::int_conversion:
    case DiagKind::const_qualifier: classify_type_mismatch(d, driver_sources, p); break;
    default:
      p.change.change_type = "other";
      p.change.symbol = first;
      break;
    }
    pend.push_back(std::move(p));
  }

  std::vector<std::string> lookups;
  for (const auto& p : pend) {
    if (!p.lookup.empty()) lookups.push_back(p.lookup);
    if (!p.change.suggestion.empty()) lookups.push_back(p.change.suggestion);
  }
  std::sort(lookups.begin(), lookups.end());
  lookups.erase(std::unique(lookups.begin(), lookups.end()), lookups.end());
  auto old_decls = from.find(lookups);
  auto new_decls = to.find(lookups);

  Classification c;
  std::set<std::string> delta_done;
  std::set<std::pair<std::string, std::string>> seen;
  for (auto& p : pend) {
    auto o = old_decls.find(p.lookup);
    auto n = new_decls.find(p.lookup);
    const HeaderDecl* od = o == old_decls.end() ? nullptr : &o->second;
    const HeaderDecl* nd = n == new_decls.end() ? nullptr : &n->second;
    if (od) p.change.decl_from = fmt::format("{}:{}", od->file, od->line);
    if (nd) p.change.decl_to = fmt::format("{}:{}", nd->file, nd->line);
    if (p.kind == DiagKind::implicit_function_declaration || p.kind == DiagKind::undeclared_identifier ||
        p.kind == DiagKind::unknown_type || p.kind == DiagKind::modpost_undefined_symbol) {
      if (nd && od && nd->file != od->file) p.change.change_type = "header-moved";
      else if (nd) p.change.change_type = "other"; // still declared where it was: a config or include-chain change
      else if (!p.change.suggestion.empty() && new_decls.count(p.change.suggestion) && !old_decls.count(p.change.suggestion))
        p.change.change_type = "rename";
      else p.change.change_type = "removed-with-replacement";
    } else if (p.kind == DiagKind::conflicting_types && od && nd) {
      auto ret = [&](const std::string& t) { return t.substr(0, t.find(p.lookup)); };
      if (ret(od->text) != ret(nd->text)) p.change.change_type = "return-type-changed";
    }
    if (p.change.symbol.empty()) p.change.symbol = "(unnamed)";
    if (!seen.insert({p.change.symbol, p.change.change_type}).second) continue;
    if (!p.lookup.empty() && (od || nd) && delta_done.insert(p.lookup).second) {
      auto hunk = region_diff(od, nd);
      if (!hunk.empty()) c.api_delta += fmt::format("# {} ({})\n{}", p.lookup, p.change.change_type, hunk);
    }
    if (p.kind == DiagKind::missing_header && delta_done.insert(p.change.symbol).second)
      c.api_delta += fmt::format("# {}: {} in the old headers, {} in the new ones\n", p.change.symbol,
                                 from.header_exists(p.change.symbol) ? "present" : "absent",
                                 to.header_exists(p.change.symbol) ? "present" : "absent");
    c.changes.push_back(p.change);
  }
  label_and_describe(c);
  return c;
}

nlohmann::json to_json(const ApiChange& c) {
  nlohmann::json j = {{"symbol", c.symbol}, {"change_type", c.change_type}, {"evidence", c.evidence}};
  if (!c.suggestion.empty()) j["suggestion"] = c.suggestion;
  if (!c.decl_from.empty()) j["decl_from"] = c.decl_from;
  if (!c.decl_to.empty()) j["decl_to"] = c.decl_to;
  return j;
}

} // namespace autodriver::corpus
