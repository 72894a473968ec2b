#include "autodriver/propose/rules/rules.hpp"

#include "autodriver/core/kernel.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

namespace {

/// Header keys each kind requires beyond the common ones, and whether it needs a body.
struct KindSpec {
  std::string_view kind;
  std::vector<std::string_view> required;
  bool body;
};

const std::vector<KindSpec>& kind_specs() {
  static const std::vector<KindSpec> k = {
      {"old-definitions", {}, true},
      {"remove-statements", {"symbols"}, true},
      {"smpl", {"symbols"}, true},
      {"table-path", {"table-type", "name-member", "child-member", "table-call", "new-call", "header"}, false},
      {"typed-variant", {}, true},
  };
  return k;
}

const std::set<std::string, std::less<>>& optional_keys() {
  static const std::set<std::string, std::less<>> k = {"target-lacks", "target-from", "target-below", "path-type", "paths-call"};
  return k;
}

util::Unexpected bad(const std::string& file, int line, const std::string& what) {
  return unexpected(ErrorKind::parse, line > 0 ? fmt::format("{}:{}: {}", file, line, what) : fmt::format("{}: {}", file, what));
}

/// A typed-variant body line `NAME -> TYPED_NAME` (blanks around allowed); nullopt otherwise.
std::optional<std::pair<std::string, std::string>> typed_pair(std::string_view line) {
  static const std::regex k_pair(R"(^\s*([A-Za-z_]\w*)\s*->\s*([A-Za-z_]\w*)\s*$)");
  std::smatch m;
  std::string l(line);
  if (!std::regex_match(l, m, k_pair)) return std::nullopt;
  return std::make_pair(m[1].str(), m[2].str());
}

/// Checks of a body that can be made without applying it.
util::Expected<void> check_body(const Rule& r) {
  auto lines = util::split_lines(r.body);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto l = util::trim(lines[i]);
    int at = r.body_line + static_cast<int>(i);
    if (l.empty() || l.front() == '#') continue; // (only line-wise kinds are checked below)
    if (r.kind == "remove-statements") {
      try {
        std::regex re{std::string(l)};
      } catch (const std::regex_error& e) {
        return bad(r.file, at, fmt::format("not a regular expression: {}", e.what()));
      }
    } else if (r.kind == "typed-variant") {
      if (!typed_pair(l)) return bad(r.file, at, "expected `NAME -> TYPED_NAME`");
    }
  }
  return {};
}

} // namespace

const std::vector<std::string_view>& rule_kinds() {
  static const std::vector<std::string_view> k = [] {
    std::vector<std::string_view> v;
    for (const auto& s : kind_specs()) v.push_back(s.kind);
    return v;
  }();
  return k;
}

long version_code_of(std::string_view version) {
  auto v = util::trim(version);
  auto r = core::release_numbers(v);
  if (!r || r->count < 2 || r->used != v.size()) return -1;
  return r->code();
}

bool applies_to(const Rule& r, long version_code) {
  auto from = r.fields.find("target-from");
  auto below = r.fields.find("target-below");
  if (from == r.fields.end() && below == r.fields.end()) return true;
  if (version_code <= 0) return false; // scoped to versions, and the target's is unknown
  if (from != r.fields.end() && version_code < version_code_of(from->second)) return false;
  if (below != r.fields.end() && version_code >= version_code_of(below->second)) return false;
  return true;
}

std::string Rule::provenance() const {
  return fmt::format("{} (Linux {}; {}{})", file, kernel, source,
                     kernel_definition ? "" : "; stated by hand, not a kernel definition");
}

std::vector<std::string> Rule::words(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? std::vector<std::string>{} : util::split_words(it->second);
}

util::Expected<Rule> parse_rule(std::string_view text, const std::string& file) {
  Rule r;
  r.file = file;
  r.name = fs::path(file).stem().string();
  auto lines = util::split_lines(text);
  std::size_t i = 0;
  bool separator = false;
  std::set<std::string> seen;
  for (; i < lines.size(); ++i) {
    auto l = util::trim(lines[i]);
    int at = static_cast<int>(i) + 1;
    if (l.empty() || l.front() == '#') continue;
    if (l == "---") {
      separator = true;
      ++i;
      break;
    }
    auto colon = l.find(':');
    if (colon == std::string_view::npos) return bad(file, at, "expected `key: value` or `---` before the body");
    std::string key(util::trim(l.substr(0, colon)));
    std::string value(util::trim(l.substr(colon + 1)));
    if (!seen.insert(key).second) return bad(file, at, fmt::format("`{}` given twice", key));
    if (key == "kind") r.kind = value;
    else if (key == "kernel") r.kernel = value;
    else if (key == "source") r.source = value;
    else if (key == "why") r.why = value;
    else if (key == "symbols") r.symbols = util::split_words(value);
    else if (key == "kernel-definition") {
      if (value != "yes" && value != "no") return bad(file, at, "kernel-definition: expected yes or no");
      r.kernel_definition = value == "yes";
    } else {
      r.fields[key] = value;
    }
  }
  if (!separator) return bad(file, 0, "no `---` line: a rule is a header, a line `---`, then its body");
  r.body_line = static_cast<int>(i) + 1;
  for (; i < lines.size(); ++i) r.body += std::string(lines[i]) + "\n";
  const auto& specs = kind_specs();
  auto spec = std::find_if(specs.begin(), specs.end(), [&](const KindSpec& s) { return s.kind == r.kind; });
  if (spec == specs.end()) return bad(file, 0, fmt::format("kind `{}` is not one of: {}", r.kind, fmt::join(rule_kinds(), ", ")));
  for (const char* k : {"kernel", "source", "kernel-definition"})
    if (!seen.count(k))
      return bad(file, 0,
                 fmt::format("`{}:` is missing: every rule names the kernel version, where it is stated, "
                             "and whether its text is the kernel's own definition",
                             k));
  for (const auto& k : spec->required)
    if (!seen.count(std::string(k))) return bad(file, 0, fmt::format("kind {} needs `{}:`", r.kind, k));
  for (const auto& [k, v] : r.fields) {
    bool known = optional_keys().count(k) ||
                 std::any_of(spec->required.begin(), spec->required.end(), [&](std::string_view x) { return x == k; });
    if (!known) return bad(file, 0, fmt::format("unknown key `{}` for kind {}", k, r.kind));
  }
  if (spec->body && util::trim(r.body).empty()) return bad(file, 0, fmt::format("kind {} needs a body after `---`", r.kind));
  if (!spec->body && !util::trim(r.body).empty()) return bad(file, r.body_line, fmt::format("kind {} takes no body", r.kind));
  for (const char* k : {"target-from", "target-below"})
    if (auto it = r.fields.find(k); it != r.fields.end() && version_code_of(it->second) < 0)
      return bad(file, 0, fmt::format("{}: `{}` is not a kernel version (like 6.4)", k, it->second));
  if (auto c = check_body(r); !c) return unexpected(c.error());
  return r;
}

/// The target's LINUX_VERSION_CODE: from its release, else its build dir's version.h; 0 unknown.
long target_version_code(const PortContext& ctx) {
  if (!ctx.to) return 0;
  long version = ctx.to->version_code();
  return version != 0 ? version : linux_version_code(ctx.to->build_dir);
}

std::vector<TypedVariant> typed_variants(const PortContext& ctx) {
  std::vector<TypedVariant> out;
  if (!ctx.rules) return out;
  const long version = target_version_code(ctx);
  for (const auto& r : *ctx.rules) {
    if (r.kind != "typed-variant" || !applies_to(r, version)) continue;
    for (auto l : util::split_lines(r.body))
      if (auto p = typed_pair(l)) out.push_back({p->first, p->second, r.provenance()});
  }
  return out;
}

const std::vector<Rule>& shipped_rules() {
  static const std::vector<Rule> k = [] {
    std::vector<Rule> out;
    for (const auto& [file, text] : embedded_rule_files()) {
      auto r = parse_rule(text, std::string(file));
      // The build checks the shipped files (test_rules); a broken one is a bug, never silent.
      if (!r) throw util::FatalError{r.error()};
      out.push_back(std::move(*r));
    }
    return out;
  }();
  return k;
}

util::Expected<std::vector<Rule>> load_rules(bool shipped, const std::vector<fs::path>& dirs) {
  std::map<std::string, Rule> by_name;
  if (shipped)
    for (const auto& r : shipped_rules()) by_name[r.name] = r;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      return unexpected(ErrorKind::not_found, fmt::format("--rules {}: not a folder", dir.string()));
    std::vector<fs::path> files;
    for (const auto& ent : fs::directory_iterator(dir, ec))
      if (ent.path().extension() == ".rule") files.push_back(ent.path());
    if (ec) return unexpected(ErrorKind::io, fmt::format("--rules {}: {}", dir.string(), ec.message()));
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto text = util::read_file(f);
      if (!text) return unexpected(ErrorKind::io, fmt::format("{}: cannot read it", f.string()));
      auto r = parse_rule(*text, f.string());
      if (!r) return unexpected(r.error());
      by_name[r->name] = std::move(*r);
    }
  }
  std::vector<Rule> out;
  for (auto& [name, r] : by_name) out.push_back(std::move(r));
  return out;
}

} // namespace autodriver::propose
