#include "autodriver/gate/build_root.hpp"

#include "autodriver/util/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fnmatch.h>
#include <set>

namespace autodriver::gate {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

namespace {

bool is_build_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name == "Makefile" || name == "Kbuild" || name == "makefile" || name == "GNUmakefile" || name.starts_with("Makefile.") ||
         name.starts_with("Kbuild.") || name.ends_with(".mk");
}

bool separator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '=' || c == ':' || c == '"' || c == '\'' || c == '(' || c == ',';
}

bool path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-' || c == '+' || c == '*' ||
         c == '%' || c == '$' || c == '{' || c == '}';
}

/// True when `p` is `base` or below it (both normal and absolute).
bool inside(const fs::path& p, const fs::path& base) {
  auto rel = p.lexically_relative(base);
  return !rel.empty() && *rel.begin() != "..";
}

bool has_pattern(const std::string& s) { return s.find_first_of("*%$?[") != std::string::npos; }

/// The part of a normal path before its first component with a wildcard or a make variable;
/// `cut` gets that component ("" when the path has none).
fs::path literal_prefix(const fs::path& p, std::string& cut) {
  fs::path out;
  cut.clear();
  for (const auto& c : p) {
    std::string s = c.string();
    if (has_pattern(s)) {
      cut = s;
      break;
    }
    out /= c;
  }
  return out;
}

/// A path component with make variables ("$(VER)", "${V}", "$V") and '%' read as shell wildcards.
std::string as_glob(const std::string& component) {
  std::string out;
  for (std::size_t i = 0; i < component.size(); ++i) {
    char c = component[i];
    if (c == '$' && i + 1 < component.size() && (component[i + 1] == '(' || component[i + 1] == '{')) {
      const char close = component[i + 1] == '(' ? ')' : '}';
      std::size_t e = component.find(close, i + 2);
      i = e == std::string::npos ? component.size() : e;
      out += '*';
    } else if (c == '$') {
      ++i; // "$V": one-letter variable
      out += '*';
    } else if (c == '%') {
      out += '*';
    } else {
      out += c;
    }
  }
  return out;
}

/// True when folder `p` holds an entry matching `component` (a pattern) other than `dir` or
/// a folder holding it: "../tp-$(VER).tgz" names nothing outside when no such file is there.
bool holds_match(const fs::path& p, const std::string& component, const fs::path& dir) {
  const std::string glob = as_glob(component);
  std::error_code ec;
  for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path entry = it->path();
    if (entry == dir || inside(dir, entry)) continue;
    if (::fnmatch(glob.c_str(), entry.filename().c_str(), 0) == 0) return true;
  }
  return false;
}

} // namespace

std::vector<std::string> outside_references(const std::string& text) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    // A comment runs to the end of the line (make has no '#' inside paths worth reading).
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    for (std::size_t i = line.find("../"); i != std::string::npos; i = line.find("../", i + 3)) {
      // Where the path starts: "../" after a separator, after "-I", or after a leading
      // "$(var)/" or "${var}/" that itself follows a separator.
      std::size_t start = i;
      bool begins = i == 0 || separator(line[i - 1]);
      if (!begins && i >= 2 && line.compare(i - 2, 2, "-I") == 0) begins = i == 2 || separator(line[i - 3]);
      if (!begins && i >= 2 && line[i - 1] == '/' && (line[i - 2] == ')' || line[i - 2] == '}')) {
        char open = line[i - 2] == ')' ? '(' : '{';
        std::size_t o = line.rfind(open, i - 2);
        if (o != std::string::npos && o >= 1 && line[o - 1] == '$') {
          std::string var = line.substr(o + 1, i - 2 - o - 1);
          bool plain = !var.empty() && std::all_of(var.begin(), var.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
          });
          begins = plain && (o == 1 || separator(line[o - 2]) || (o >= 3 && line.compare(o - 3, 2, "-I") == 0));
        }
      }
      if (!begins) continue;
      std::size_t end = start;
      while (end < line.size() && path_char(line[end])) ++end;
      std::string ref = line.substr(start, end - start);
      while (ref.size() > 3 && (ref.back() == '.' && ref[ref.size() - 2] == '/')) ref.pop_back();
      if (seen.insert(ref).second) out.push_back(ref);
      i = end > i + 3 ? end - 3 : i;
    }
  }
  return out;
}

util::Expected<BuildRoot> find_build_root(const fs::path& driver, const fs::path& given_root) {
  std::error_code ec;
  if (!fs::is_directory(driver, ec))
    return unexpected(ErrorKind::not_found, fmt::format("{}: no such directory", driver.string()));
  const fs::path dir = fs::weakly_canonical(fs::absolute(driver), ec);
  BuildRoot out;
  fs::path root_given;
  if (!given_root.empty()) {
    if (!fs::is_directory(given_root, ec))
      return unexpected(ErrorKind::not_found, fmt::format("--root {}: no such directory", given_root.string()));
    const fs::path root = fs::weakly_canonical(fs::absolute(given_root), ec);
    if (root != dir && !inside(dir, root))
      return unexpected(ErrorKind::config, fmt::format("{} is not inside --root {}: give the folder that holds the driver",
                                                       driver.string(), given_root.string()));
    root_given = root;
  }
  out.root = dir;
  std::vector<fs::path> needed;
  std::set<std::string> seen_outside, seen_unresolved;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (util::entry_is_dir(*it) && it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (!util::entry_is_file(*it) || !is_build_file(it->path())) continue;
    auto text = util::read_file(it->path());
    if (!text) continue;
    const fs::path base = it->path().parent_path();
    for (const auto& ref : outside_references(*text)) {
      // "$(src)/../common/x.o" is "../common/x.o" relative to the build file's folder.
      std::string cut;
      fs::path p = literal_prefix((base / ref).lexically_normal(), cut);
      if (p.empty() || inside(p, dir) || p == dir) continue;
      fs::path found;
      if (!cut.empty()) {
        // A pattern names something outside when the folder holds a match, or a folder of its
        // own that is there; in a folder holding the driver with no match it is a file the build
        // writes ("TGZ = ../pkg-$(VER).tgz"), nothing to copy.
        if (fs::is_directory(p, ec)) {
          if (holds_match(p, cut, dir) || !inside(dir, p)) found = p;
          else continue;
        }
      } else if (fs::exists(p, ec)) {
        found = p;
      } else if (p.extension() == ".o") {
        for (const char* ext : {".c", ".S"})
          if (fs::exists(fs::path(p).replace_extension(ext), ec)) found = p;
      }
      // A file the build would generate or that is missing, in a folder that is there.
      const fs::path folder = p.parent_path();
      if (found.empty() && cut.empty() && fs::is_directory(folder, ec) && !inside(folder, dir) && folder != dir &&
          !inside(dir, folder))
        found = folder;
      if (found.empty()) {
        if (seen_unresolved.insert(ref).second) out.unresolved.push_back(ref);
        continue;
      }
      // outside[i] names needed[i].
      if (seen_outside.insert(ref + '\n' + found.string()).second) {
        out.outside.push_back(ref);
        needed.push_back(found);
      }
    }
  }
  if (!root_given.empty()) {
    // The user's root: what its build files name is only told, and what lies outside it is missing.
    out.root = root_given;
    if (root_given != dir) out.subdir = dir.lexically_relative(root_given);
    std::vector<std::string> inside_given;
    for (std::size_t i = 0; i < needed.size(); ++i)
      if (needed[i] == root_given || inside(needed[i], root_given)) inside_given.push_back(out.outside[i]);
      else out.unresolved.push_back(out.outside[i]);
    out.outside = std::move(inside_given);
    return out;
  }
  if (needed.empty()) return out;
  fs::path root = dir;
  int levels = 0;
  auto holds_all = [&](const fs::path& r) {
    return std::all_of(needed.begin(), needed.end(), [&](const fs::path& p) { return p == r || inside(p, r); });
  };
  while (!holds_all(root) && root.has_parent_path() && root.parent_path() != root) {
    root = root.parent_path();
    ++levels;
  }
  if (!holds_all(root) || levels > k_max_root_levels || root == root.root_path()) {
    for (const auto& o : out.outside) out.unresolved.push_back(o);
    out.outside.clear();
    return out;
  }
  out.root = root;
  out.subdir = dir.lexically_relative(root);
  return out;
}

std::vector<std::string> describe(const BuildRoot& r, const fs::path& driver) {
  std::vector<std::string> out;
  auto listed = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < 4; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 4) s += fmt::format(" and {} more", v.size() - 4);
    return s;
  };
  if (!r.subdir.empty() && !r.outside.empty())
    out.push_back(fmt::format("{}: its build names files outside its folder ({}): copying {} with it (the driver is {} there; "
                              "--root chooses another folder)",
                              driver.string(), listed(r.outside), r.root.string(), r.subdir.string()));
  else if (!r.subdir.empty())
    out.push_back(
        fmt::format("{}: copied with its root {} (the driver is {} there)", driver.string(), r.root.string(), r.subdir.string()));
  if (!r.unresolved.empty())
    out.push_back(fmt::format("{}: its build names {} outside its folder, which is not there (or more than {} folders up): "
                              "the build may fail; give --root, the folder that holds the driver and them",
                              driver.string(), listed(r.unresolved), k_max_root_levels));
  return out;
}

} // namespace autodriver::gate
