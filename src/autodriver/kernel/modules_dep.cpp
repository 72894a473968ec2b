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
  return parse(*text);
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

std::string ModulesDep::path_of(std::string_view module) const {
  auto it = m_path.find(normalize_module_name(module));
  return it == m_path.end() ? std::string() : it->second;
}

std::vector<std::string> ModulesDep::load_order(const std::vector<std::string>& names,
                                                std::vector<std::string>& missing) const {
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
    for (const auto& d : it->second) visit(d);
    order.push_back(name);
  };
  for (const auto& n : names) visit(n);
  return order;
}

} // namespace autodriver::kernel
