#include "autodriver/kernel/modules_dep.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <functional>
#include <set>

namespace autodriver::kernel {

std::string normalize_module_name(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

std::string module_name_from_path(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto dot = base.find(".ko");
  return normalize_module_name(base.substr(0, dot));
}

util::Expected<ModulesDep> ModulesDep::load(const std::filesystem::path& modules_dir) {
  auto text = util::read_file(modules_dir / "modules.dep");
  if (!text) return util::unexpected(text.error());
  ModulesDep md = parse(*text);
  auto soft = util::read_file(modules_dir / "modules.softdep");
  auto alias = util::read_file(modules_dir / "modules.alias");
  if (soft && alias) md.add_softdeps(*soft, *alias);
  return md;
}

ModulesDep ModulesDep::parse(std::string_view text) {
  ModulesDep md;
  for (auto line : util::split_lines(text)) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string path(util::trim(line.substr(0, colon)));
    std::string name = module_name_from_path(path);
    md.m_path[name] = path;
    auto& deps = md.m_deps[name];
    for (const auto& w : util::split_words(line.substr(colon + 1))) deps.push_back(module_name_from_path(w));
  }
  return md;
}

void ModulesDep::add_softdeps(std::string_view softdep_text, std::string_view alias_text) {
  // Only plain aliases (no wildcards) matter for softdeps such as "crc32c" or "crypto-crc32c".
  std::map<std::string, std::vector<std::string>> alias;
  for (auto line : util::split_lines(alias_text)) {
    auto w = util::split_words(line);
    if (w.size() == 3 && w[0] == "alias" && w[1].find_first_of("*?[") == std::string::npos)
      alias[normalize_module_name(w[1])].push_back(normalize_module_name(w[2]));
  }
  for (auto line : util::split_lines(softdep_text)) {
    auto w = util::split_words(line);
    if (w.size() < 4 || w[0] != "softdep") continue;
    std::string mod = normalize_module_name(w[1]);
    bool pre = false;
    for (std::size_t i = 2; i < w.size(); ++i) {
      if (w[i] == "pre:") {
        pre = true;
        continue;
      }
      if (w[i] == "post:") {
        pre = false;
        continue;
      }
      if (!pre) continue;
      std::string name = normalize_module_name(w[i]);
      if (m_path.count(name)) m_soft_pre[mod].push_back(name);
      else if (auto it = alias.find(name); it != alias.end())
        for (const auto& target : it->second)
          if (m_path.count(target)) {
            m_soft_pre[mod].push_back(target);
            break;
          }
    }
  }
}

std::string ModulesDep::path_of(std::string_view module) const {
  auto it = m_path.find(normalize_module_name(module));
  return it == m_path.end() ? std::string() : it->second;
}

std::vector<std::string> ModulesDep::load_order(const std::vector<std::string>& names, std::vector<std::string>& missing) const {
  std::vector<std::string> order;
  std::set<std::string> seen;
  std::function<void(const std::string&)> visit = [&](const std::string& raw) {
    std::string name = normalize_module_name(raw);
    if (!seen.insert(name).second) return;
    auto it = m_deps.find(name);
    if (it == m_deps.end()) {
      missing.push_back(name);
      return;
    }
    if (auto soft = m_soft_pre.find(name); soft != m_soft_pre.end())
      for (const auto& d : soft->second) visit(d);
    for (const auto& d : it->second) visit(d);
    order.push_back(name);
  };
  for (const auto& n : names) visit(n);
  return order;
}

} // namespace autodriver::kernel
