#include "autodriver/corpus/driver_unit.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <regex>
#include <set>

namespace autodriver::corpus {

namespace fs = std::filesystem;

util::Expected<std::map<std::string, std::string>> read_kernel_config(const fs::path& build_dir) {
  auto text = util::read_file(build_dir / ".config");
  if (!text)
    return util::unexpected(util::ErrorKind::not_found, fmt::format("{} has no .config: are the kernel headers installed? "
                                                                    "(autodriver kernel fetch <kernel>)",
                                                                    build_dir.string()));
  return parse_dot_config(*text);
}

std::vector<DriverUnit> enumerate_units(const fs::path& tree, const std::vector<std::string>& roots,
                                        const std::map<std::string, std::string>& config) {
  auto lookup = [&](std::string_view sym) {
    auto it = config.find(std::string(sym));
    return it == config.end() ? std::string() : it->second;
  };
  std::vector<DriverUnit> units;
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(tree / root, ec)) continue;
    std::vector<fs::path> dirs{tree / root};
    for (auto it = fs::recursive_directory_iterator(tree / root, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (util::entry_is_dir(*it) && !util::entry_is_link(*it)) dirs.push_back(it->path());
    for (const auto& d : dirs) {
      // kbuild reads Kbuild in preference to Makefile.
      std::string name = fs::exists(d / "Kbuild") ? "Kbuild" : fs::exists(d / "Makefile") ? "Makefile" : "";
      if (name.empty()) continue;
      auto text = util::read_file(d / name);
      if (!text) continue;
      auto mk = parse_kbuild_makefile(*text, lookup);
      std::string rel = fs::relative(d, tree).generic_string();
      for (auto& m : mk.modules) {
        DriverUnit u;
        u.dir = rel;
        u.module = m.name;
        u.config = m.config;
        u.config_value = m.config.empty() ? "m" : lookup(m.config);
        u.objects = m.objects;
        u.problems = m.problems;
        u.ccflags = mk.ccflags;
        u.object_flags = mk.object_flags;
        u.dropped_flags = mk.dropped_flags;
        u.makefile = name;
        units.push_back(std::move(u));
      }
    }
  }
  std::sort(units.begin(), units.end(), [](const DriverUnit& a, const DriverUnit& b) { return a.path() < b.path(); });
  return units;
}

namespace {

std::vector<std::string> quoted_includes(std::string_view text) {
  static const std::regex k_inc(R"re(^\s*#\s*include\s+"([^"]+)")re");
  std::vector<std::string> out;
  for (auto line : util::split_lines(text)) {
    if (line.find("include") == std::string_view::npos) continue;
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(line.begin(), line.end(), m, k_inc)) out.push_back(m[1].str());
  }
  return out;
}

bool inside(const fs::path& base, const fs::path& p) {
  auto rel = p.lexically_relative(base);
  return !rel.empty() && *rel.begin() != "..";
}

} // namespace

UnitLayout plan_unit(const fs::path& tree, const DriverUnit& unit, std::string_view origin_note) {
  UnitLayout lay;
  const fs::path dir = tree / unit.dir;
  std::set<std::string> files;
  std::deque<std::string> todo;
  auto add = [&](const std::string& rel) {
    if (files.insert(rel).second) todo.push_back(rel);
  };
  for (const auto& o : unit.objects) {
    std::string stem = o.substr(0, o.size() - 2);
    if (fs::exists(dir / (stem + ".c"))) add(stem + ".c");
    else if (fs::exists(dir / (stem + ".S"))) add(stem + ".S");
    else lay.problems.push_back(fmt::format("no source for {} (generated at build time or outside the directory)", o));
  }
  // Tracepoint headers are included through TRACE_INCLUDE_FILE macros, which the scan below cannot see.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    auto n = e.path().filename().string();
    if (util::entry_is_file(e) && n.ends_with(".h") && n.find("trace") != std::string::npos) add(n);
  }
  std::vector<fs::path> search{dir};
  for (const auto& f : unit.ccflags)
    if (f.starts_with("-I$(src)/")) search.push_back((dir / f.substr(9)).lexically_normal());
  std::set<std::string> outside;
  while (!todo.empty()) {
    std::string rel = todo.front();
    todo.pop_front();
    auto text = util::read_file(dir / rel);
    if (!text) continue;
    if (rel.ends_with(".c") || rel.ends_with(".h")) lay.c_lines += std::count(text->begin(), text->end(), '\n');
    fs::path here = (dir / rel).parent_path();
    for (const auto& inc : quoted_includes(*text)) {
      std::vector<fs::path> candidates{(here / inc).lexically_normal()};
      for (const auto& s : search) candidates.push_back((s / inc).lexically_normal());
      bool found = false;
      for (const auto& c : candidates) {
        if (!fs::is_regular_file(c, ec)) continue;
        found = true;
        if (inside(dir, c)) add(c.lexically_relative(dir).generic_string());
        else outside.insert(c.lexically_relative(tree).generic_string());
        break;
      }
      (void)found; // not found anywhere near: a kernel header reached through -I include/ (fine)
    }
  }
  lay.files.assign(files.begin(), files.end());
  lay.outside.assign(outside.begin(), outside.end());

  std::string mk = fmt::format("# Generated by autodriver corpus build from {}/{} ({}).\n# Module {}{}.\n", unit.dir,
                               unit.makefile, origin_note, unit.module, unit.config.empty() ? "" : ", " + unit.config);
  mk += fmt::format("obj-m += {}.o\n", unit.module);
  bool composite = !(unit.objects.size() == 1 && unit.objects[0] == unit.module + ".o");
  if (composite) {
    mk += unit.module + "-y :=";
    for (const auto& o : unit.objects) mk += " " + o;
    mk += "\n";
  }
  mk += "ccflags-y += -I$(src)";
  for (const auto& f : unit.ccflags)
    if (f != "-I$(src)") mk += " " + f;
  mk += "\n";
  for (const auto& [obj, flags] : unit.object_flags)
    if (std::find(unit.objects.begin(), unit.objects.end(), obj) != unit.objects.end())
      mk += fmt::format("CFLAGS_{} += {}\n", obj, flags);
  lay.makefile = std::move(mk);
  return lay;
}

util::Expected<void> materialize_unit(const fs::path& tree, const DriverUnit& unit, const UnitLayout& layout,
                                      const fs::path& dest) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return util::unexpected(util::ErrorKind::io, fmt::format("cannot create {}: {}", dest.string(), ec.message()));
  for (const auto& f : layout.files) {
    fs::path to = dest / f;
    fs::create_directories(to.parent_path(), ec);
    if (auto r = util::copy_file(tree / unit.dir / f, to); !r) return r;
  }
  return util::write_file(dest / "Makefile", layout.makefile);
}

std::string subsystem_of(std::string_view dir) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : dir) {
    if (c == '/') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  std::size_t start = (!parts.empty() && parts[0] == "drivers") ? 1 : 0;
  std::string out;
  for (std::size_t i = start; i < parts.size() && i < start + 2; ++i) out += (out.empty() ? "" : "/") + parts[i];
  return out.empty() ? std::string(dir) : out;
}

nlohmann::json to_json(const DriverUnit& u) {
  return {{"path", u.path()},
          {"dir", u.dir},
          {"module", u.module},
          {"config", u.config},
          {"config_value", u.config_value},
          {"objects", u.objects},
          {"makefile", u.makefile},
          {"problems", u.problems},
          {"dropped_flags", u.dropped_flags}};
}

} // namespace autodriver::corpus
