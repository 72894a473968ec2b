#pragma once
// The image's modules.dep: which modules must be loaded, in which order, before a module.

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::kernel {

/// Module names compare with '-' and '_' equivalent, as the kernel does.
std::string normalize_module_name(std::string_view name);

/// "kernel/drivers/net/mii.ko.xz" -> "mii"
std::string module_name_from_path(std::string_view path);

class ModulesDep {
public:
  static util::Expected<ModulesDep> load(const std::filesystem::path& modules_dir);
  static ModulesDep parse(std::string_view text);
  /// Adds `softdep X pre: a b` (modules.softdep) and `alias NAME module` (modules.alias) so that
  /// load_order() loads soft pre-dependencies (e.g. the crc32c implementation libcrc32c needs).
  void add_softdeps(std::string_view softdep_text, std::string_view alias_text);

  /// Path (relative to the modules dir) of a module, empty if unknown.
  std::string path_of(std::string_view module) const;
  bool contains(std::string_view module) const { return !path_of(module).empty(); }

  /// Modules to insmod before `names` (dependencies first, each once), resolved recursively.
  /// Unknown names are returned in `missing`.
  std::vector<std::string> load_order(const std::vector<std::string>& names, std::vector<std::string>& missing) const;

private:
  std::map<std::string, std::string> m_path;                  // name -> relative path
  std::map<std::string, std::vector<std::string>> m_deps;     // name -> dependency names
  std::map<std::string, std::vector<std::string>> m_soft_pre; // name -> soft pre-dependency module names
};

} // namespace autodriver::kernel
