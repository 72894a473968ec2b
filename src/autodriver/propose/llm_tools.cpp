#include "autodriver/propose/llm_tools.hpp"

#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/llm/answer.hpp"
#include "autodriver/propose/kb/kb_file.hpp"
#include "autodriver/propose/shared/site_index.hpp"
#include "autodriver/util/diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/memo.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>

namespace autodriver::propose {

namespace fs = std::filesystem;

namespace {

nlohmann::json one_string(const char* name, const char* what) {
  return {{"type", "object"}, {"properties", {{name, {{"type", "string"}, {"description", what}}}}}, {"required", {name}}};
}

std::string read_function(const ToolEnv& env, const std::string& name) {
  for (const auto& rel : env.editable) {
    auto text = util::read_file(env.ctx.tree / rel);
    if (!text || !csrc::has_word(*text, name)) continue;
    auto toks = csrc::tokenize(*text);
    for (const auto& u : csrc::find_units(toks))
      if (u.kind == csrc::UnitKind::function && u.name == name)
        return rel + ":\n" +
               text->substr(toks[u.first].begin, std::min<std::size_t>(toks[u.last].end - toks[u.first].begin, 8000));
  }
  return "no function " + name + " in the driver";
}

/// The apidiff entries (the verdict's `changes`) that name `symbol`, as text; empty when none.
std::string apidiff_entries(const nlohmann::json& changes, const std::string& symbol) {
  if (!changes.is_array()) return "";
  std::string out;
  std::set<std::string> seen;
  for (const auto& per_diag : changes)
    for (const auto& c : per_diag.value("changes", nlohmann::json::array())) {
      const std::string sym = c.value("symbol", "");
      const std::string member = c.value("member", "");
      if (sym != symbol && sym != "struct " + symbol && member != symbol) continue;
      std::string line = c.dump(-1, ' ', false, util::json_bytes);
      if (seen.insert(line).second && seen.size() <= 6) out += line + "\n";
    }
  return out;
}

std::string api_change(const ToolEnv& env, const std::string& symbol) {
  if (auto known = apidiff_entries(env.api_changes, symbol); !known.empty()) return "apidiff's entries:\n" + known;
  std::string out;
  auto side = [&](const fs::path& src, const std::string& label) {
    if (src.empty()) return;
    auto lines = kernel_lines(src, symbol, true, 6);
    out += fmt::format("{}:\n{}", label, lines.empty() ? "(not declared in its headers)\n" : lines);
  };
  side(env.ctx.old_src, env.ctx.from ? "the old kernel (" + env.ctx.from->release + ")" : "the older kernel");
  side(env.ctx.new_src, env.ctx.to ? "the target (" + env.ctx.to->release + ")" : "the target");
  return out.empty() ? "no kernel source to compare" : out;
}

std::shared_ptr<const Kb> load_kb_once(const fs::path& path) {
  static util::Memo<std::shared_ptr<const Kb>> memo;
  return memo.get(path.string(), [&]() -> std::shared_ptr<const Kb> {
    auto kb = load_kb(path);
    return kb ? std::make_shared<const Kb>(std::move(*kb)) : nullptr;
  });
}

std::string kb_rewrites(const ToolEnv& env, const std::string& symbol) {
  const fs::path path = env.ctx.kb_path.empty() ? default_kb_path() : env.ctx.kb_path;
  std::error_code ec;
  if (!fs::exists(path, ec)) return "no compat KB here (autodriver kb build --dkms makes one)";
  auto kb = load_kb_once(path);
  if (!kb) return "the compat KB could not be read";
  const std::set<std::string> drop(env.ctx.kb_leave_out.begin(), env.ctx.kb_leave_out.end());
  std::map<std::string, std::set<std::string>> forms; // "boundary: old -> new" -> packages
  for (const auto& e : kb->entries) {
    if (drop.count(e.provenance.package)) continue;
    const auto& s = e.change.symbols;
    if (std::find(s.begin(), s.end(), symbol) == s.end()) continue;
    forms[fmt::format("Linux {}: `{}` -> `{}`", e.boundary, e.change.old_form, e.change.new_form)].insert(e.provenance.package);
  }
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (const auto& [form, pkgs] : forms) ranked.emplace_back(pkgs.size(), form);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (std::size_t i = 0; i < ranked.size() && i < 6; ++i)
    out += fmt::format("{} (in {} package(s)' #if LINUX_VERSION_CODE blocks)\n", ranked[i].second, ranked[i].first);
  return out.empty() ? "no KB entry names " + symbol : out;
}

} // namespace

bool symbol_name(const std::string& s) {
  if (s.empty() || s.size() > 80 || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string numbered_lines(const fs::path& tree, const std::string& file, int line, int radius) {
  auto text = util::read_file(tree / file);
  if (!text) return "";
  auto lines = util::split_lines(*text);
  std::string out = file + ":\n";
  for (int l = std::max(1, line - radius); l <= std::min<int>(static_cast<int>(lines.size()), line + radius); ++l)
    out += fmt::format("{:5} {}\n", l, lines[static_cast<std::size_t>(l) - 1]);
  return out;
}

std::string kernel_lines(const fs::path& src, const std::string& symbol, bool declaration, int max) {
  if (src.empty() || !symbol_name(symbol)) return "";
  kernel::SourceGrep q;
  // Not grep -w: it wants the whole match bounded by non-word characters, and "foo(" in "foo(dev)"
  // is followed by one.
  q.options = {"-nE", "-m", "2"};
  q.all_of = {symbol};
  if (declaration) {
    q.includes = {"*.h"};
    q.dirs = kernel::k_header_dirs;
    q.pattern = "(struct|union|enum)[[:space:]]+" + symbol + "[[:space:]]*\\{|(^|[^[:alnum:]_])" + symbol +
                "[[:space:]]*\\(|#define[[:space:]]+" + symbol + "([^[:alnum:]_]|$)";
  } else {
    q.includes = {"*.c"};
    q.dirs = kernel::k_driver_dirs;
    q.pattern = "(^|[^[:alnum:]_])" + symbol + "[[:space:]]*\\(";
  }
  std::string out;
  int n = 0;
  for (const auto& line : kernel::grep_source(src, q)) {
    if (++n > max) break;
    out += line.substr(0, 300) + "\n";
  }
  return out;
}

std::string kernel_history(const PortContext& ctx, SiteIndexCache& sites, const std::string& symbol, int max_hunks) {
  if (ctx.old_src.empty() || ctx.new_src.empty()) return "no older kernel source to compare the target with";
  if (!symbol_name(symbol)) return "error: not an identifier: " + symbol;
  auto& index = sites.get(ctx);
  std::string out;
  int hunks = 0, files = 0;
  for (const auto& pair : index.pairs_using(symbol, 40, SiteIndex::Pairs::changed)) {
    const std::string rel = pair.before->rel;
    int in_file = 0;
    for (const auto& h : util::diff_hunks(util::unified_diff(ctx.old_src, ctx.new_src, rel))) {
      bool names = false;
      for (auto line : util::split_lines(h))
        if ((line.starts_with("-") || line.starts_with("+")) && csrc::has_word(line, symbol)) names = true;
      if (!names) continue;
      if (in_file++ == 0) out += "--- " + rel + "\n";
      auto lines = util::split_lines(h);
      for (std::size_t i = 0; i < lines.size() && i < 40; ++i) out += std::string(lines[i].substr(0, 300)) + "\n";
      if (++hunks >= max_hunks || in_file >= 2) break;
    }
    if (in_file) ++files;
    if (hunks >= max_hunks) break;
  }
  if (out.empty()) return fmt::format("no driver of the kernel changed a line naming {} between the two trees", symbol);
  return fmt::format("{} hunk(s) of {} kernel driver file(s), old tree -> target:\n{}", hunks, files, out);
}

std::vector<llm::Tool> agent_tools(bool can_build) {
  nlohmann::json lines = {
      {"type", "object"},
      {"properties", {{"path", {{"type", "string"}}}, {"first", {{"type", "integer"}}}, {"last", {{"type", "integer"}}}}},
      {"required", {"path", "first", "last"}}};
  std::vector<llm::Tool> out = {
      {"read_function", "The whole definition of a function of the driver, by name", one_string("name", "the function's name")},
      {"read_lines", "Lines first..last (at most 200) of one of the driver's C files", lines},
      {"kernel_declaration", "How the target kernel's headers declare a function, type or macro",
       one_string("symbol", "an identifier")},
      {"kernel_callers", "Calls of a function in the target kernel's own drivers (a few)",
       one_string("symbol", "a function name")},
      {"kernel_history",
       "How the kernel's own drivers changed their lines naming a symbol between the driver's old kernel and the target "
       "(diff hunks)",
       one_string("symbol", "an identifier")},
      {"api_change", "The API change behind a symbol: the old and the target kernel's declarations of it",
       one_string("symbol", "an identifier")},
      {"kb_rewrites", "How out-of-tree drivers' maintainers rewrote code naming a symbol for newer kernels (compat KB)",
       one_string("symbol", "an identifier")},
  };
  if (can_build)
    out.push_back({"try_build",
                   "Build the driver against the target with these edits applied (SEARCH/REPLACE blocks as in your answer) "
                   "and see the errors that remain, the new ones, and what the reviewer finds; nothing is kept",
                   one_string("edits", "SEARCH/REPLACE blocks")});
  return out;
}

std::string run_tool(const llm::ToolCall& call, const ToolEnv& env) {
  auto args = nlohmann::json::parse(call.arguments, nullptr, false);
  if (args.is_discarded() || !args.is_object()) return "error: the arguments are not a JSON object";
  auto str = [&](const char* k) {
    auto it = args.find(k);
    return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (call.name == "read_function") return read_function(env, str("name"));
  if (call.name == "read_lines") {
    const std::string path = str("path");
    if (!llm::editable_path(env.ctx.tree, path, env.editable)) return "refused: " + path + " is not a file of the driver";
    const int first = std::max(1, util::json_get(args, "first", 1));
    const int last = std::clamp(util::json_get(args, "last", first + 50), first, first + 200);
    return numbered_lines(env.ctx.tree, fs::path(path).lexically_normal().string(), (first + last) / 2, (last - first) / 2 + 1);
  }
  if (call.name == "kernel_declaration" || call.name == "kernel_callers") {
    auto found = kernel_lines(env.ctx.new_src, str("symbol"), call.name == "kernel_declaration", 8);
    return found.empty() ? "nothing found in the target kernel" : found;
  }
  const std::string symbol = str("symbol");
  if (call.name == "kernel_history") return kernel_history(env.ctx, env.sites, symbol, 6);
  if (call.name == "api_change") return symbol_name(symbol) ? api_change(env, symbol) : "error: not an identifier";
  if (call.name == "kb_rewrites") return symbol_name(symbol) ? kb_rewrites(env, symbol) : "error: not an identifier";
  if (call.name == "try_build") {
    if (!env.try_build) return "error: building is not available in this run";
    const std::string edits = str("edits");
    return edits.empty() ? "error: no edits given" : env.try_build(edits);
  }
  return "error: no tool " + call.name;
}

} // namespace autodriver::propose
