#include "autodriver/loop/trial_objects.hpp"

#include "autodriver/gate/kbuild.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <algorithm>
#include <map>

namespace autodriver::loop {

namespace fs = std::filesystem;

std::string tree_relative(const std::string& path, const std::string& prefix) {
  std::string p = path;
  if (!prefix.empty() && p.starts_with(prefix + "/")) p = p.substr(prefix.size() + 1);
  auto n = fs::path(p).lexically_normal().string();
  return n == "." ? std::string() : n;
}

std::string reporting_unit(const core::Diagnostic& d, const std::string& prefix, const fs::path& subdir) {
  // "In file included from A:1,\n                 from B.c:2:\n": the last "from" is the unit.
  std::string unit;
  for (auto line : util::split_lines(d.raw)) {
    auto l = util::trim(line);
    std::string_view rest;
    if (l.starts_with("In file included from ")) rest = l.substr(22);
    else if (l.starts_with("from ")) rest = l.substr(5);
    else continue;
    auto colon = rest.find(':');
    if (colon != std::string_view::npos) unit = std::string(rest.substr(0, colon));
  }
  if (unit.empty()) return tree_relative(d.file, prefix); // the parser made it tree-relative
  // kbuild of 6.13 and later names the chain's files relative to M= (the driver's folder).
  if (!subdir.empty() && fs::path(unit).is_relative()) return tree_relative((subdir / unit).string(), "");
  return tree_relative(unit, prefix);
}

namespace {

bool is_c(const std::string& f) { return f.ends_with(".c") && !f.ends_with(".mod.c"); }

/// The tree's C files and headers, each with the file names it includes.
std::map<std::string, std::set<std::string>> include_names(const fs::path& work) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& rel : util::list_files(work)) {
    std::string r = rel.string();
    if (!is_c(r) && !r.ends_with(".h")) continue;
    auto text = util::read_file(work / rel);
    if (!text) continue;
    auto& names = out[r];
    for (auto line : util::split_lines(*text)) {
      auto l = util::trim(line);
      if (!l.starts_with("#")) continue;
      l = util::trim(l.substr(1));
      if (!l.starts_with("include")) continue;
      l = util::trim(l.substr(7));
      if (l.size() < 3 || (l[0] != '"' && l[0] != '<')) continue;
      auto close = l.find(l[0] == '"' ? '"' : '>', 1);
      if (close == std::string_view::npos) continue;
      names.insert(fs::path(std::string(l.substr(1, close - 1))).filename().string());
    }
  }
  return out;
}

/// C files that include `header` directly or through other headers (matched by file name: a
/// driver's include paths are its own business, and a name shared by two headers only widens).
std::set<std::string> users_of(const std::string& header, const std::map<std::string, std::set<std::string>>& includes) {
  std::set<std::string> out, seen_names, todo{fs::path(header).filename().string()};
  while (!todo.empty()) {
    std::string name = *todo.begin();
    todo.erase(todo.begin());
    if (!seen_names.insert(name).second) continue;
    for (const auto& [file, names] : includes) {
      if (!names.count(name)) continue;
      if (is_c(file)) out.insert(file);
      else todo.insert(fs::path(file).filename().string());
    }
  }
  return out;
}

} // namespace

std::set<std::string> compiled_units(const fs::path& work, const std::vector<core::Diagnostic>& diags, const fs::path& subdir) {
  std::set<std::string> out;
  for (const auto& rel : util::list_files(work)) {
    std::string name = rel.filename().string();
    if (!name.starts_with(".") || !name.ends_with(".o.cmd")) continue;
    fs::path c = rel.parent_path() / (name.substr(1, name.size() - 1 - 6) + ".c");
    std::error_code ec;
    if (fs::exists(work / c, ec) && !c.string().ends_with(".mod.c")) out.insert(c.lexically_normal().string());
  }
  for (const auto& d : diags) {
    // The assembler's too: it rejects the unit's compiler output (EXPORT_SYMBOL_NS_GPL(f, NS)
    // on 7.x), so kbuild kept no record of the object either, and the unit is what a rule must read.
    if (d.tool != "gcc" && d.tool != "as") continue;
    // The unit compiled, and a C file it includes where the diagnostic points ("#include "x.c"").
    for (auto u : {reporting_unit(d, gate::k_sandbox_tree, subdir), tree_relative(d.file, gate::k_sandbox_tree)})
      if (is_c(u) && !u.starts_with("../") && !fs::path(u).is_absolute()) out.insert(u);
  }
  return out;
}

TrialObjects trial_objects(const std::set<std::string>& changed, const std::vector<core::Diagnostic>& errors,
                           const fs::path& work, const fs::path& subdir) {
  const std::string prefix = gate::k_sandbox_tree;
  TrialObjects none;
  if (errors.empty() || changed.empty()) return none;
  std::set<std::string> error_files, own_error_units;
  for (const auto& d : errors) {
    if (d.tool != "gcc" || d.file.empty() || fs::path(d.file).is_absolute()) return none;
    std::string f = tree_relative(d.file, prefix);
    if (f.empty() || f.starts_with("../") || (!is_c(f) && !f.ends_with(".h"))) return none;
    error_files.insert(f);
    if (is_c(f)) own_error_units.insert(f);
  }
  bool header = std::any_of(changed.begin(), changed.end(), [](const std::string& f) { return f.ends_with(".h"); });
  // Without errors in other files and no header changed, a full build compiles only the changed
  // files anyway (the rest is built) and links: judging by the objects first would add a make run.
  if (!header && std::all_of(error_files.begin(), error_files.end(), [&](const auto& f) { return changed.count(f) > 0; }))
    return none;
  auto includes = include_names(work);
  std::set<std::string> units;
  TrialObjects out;
  for (const auto& f : changed) {
    fs::path p(f);
    if (p.is_absolute()) return none;
    if (is_c(f)) {
      fs::path record = work / p.parent_path() / ("." + p.stem().string() + ".o.cmd");
      std::error_code ec;
      if (!error_files.count(f) && !fs::exists(record, ec)) return none;
      // A C file another file includes is compiled there too: the whole module decides.
      std::string name = p.filename().string();
      for (const auto& [file, names] : includes)
        if (file != f && names.count(name)) return none;
      units.insert(f);
    } else if (f.ends_with(".h")) {
      auto users = users_of(f, includes);
      std::vector<std::string> sample;
      for (const auto& u : users)
        if (own_error_units.count(u) && sample.size() < 8) sample.push_back(u);
      std::set<std::string> reporters;
      const std::string changed_header = tree_relative(f, "");
      for (const auto& d : errors)
        if (tree_relative(d.file, prefix) == changed_header) reporters.insert(reporting_unit(d, prefix, subdir));
      int taken = 0;
      for (const auto& r : reporters)
        if (users.count(r) && taken < 2 && std::find(sample.begin(), sample.end(), r) == sample.end()) {
          sample.push_back(r);
          ++taken;
        }
      if (sample.empty()) {
        // No file with an error includes the header, and none of its errors are in it: the change
        // cannot remove an error. The files with errors judge it (quickly: it will not help); the
        // header's users are rebuilt by the full build that follows a kept trial.
        for (const auto& u : own_error_units)
          if (sample.size() < 8) sample.push_back(u);
        if (sample.empty()) return none;
      } else if (2 * sample.size() >= users.size()) {
        return none;
      }
      units.insert(sample.begin(), sample.end());
      out.sampled = true;
    } else {
      return none;
    }
  }
  for (const auto& u : units) {
    fs::path p(u);
    if (!subdir.empty()) {
      auto rel = p.lexically_relative(subdir);
      if (rel.empty() || *rel.begin() == "..") return none;
    }
    out.objects.push_back((p.parent_path() / (p.stem().string() + ".o")).string());
  }
  out.units = std::move(units);
  return out;
}

} // namespace autodriver::loop
