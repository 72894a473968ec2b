#include "autodriver/kernel/target.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <regex>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

const std::vector<KnownKernel>& known_kernels() {
  // Debian 12's two kernel lines and their current ABIs (../shared/FACTS.md).
  static const std::vector<KnownKernel> k_known = {
      {"6.1", "6.1.0-57-amd64", "linux-source-6.1"},
      {"6.12", "6.12.117+deb12-amd64", "linux-source-6.12"},
  };
  return k_known;
}

fs::path cache_root() {
  if (const char* c = std::getenv("AUTODRIVER_CACHE"); c && *c) return fs::path(c);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "autodriver";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "autodriver";
}

fs::path kernel_cache_dir(const std::string& release) { return cache_root() / "kernels" / release; }

util::Expected<std::string> read_build_release(const fs::path& build_dir) {
  if (auto r = util::read_file(build_dir / "include/config/kernel.release"); r) {
    auto rel = std::string(util::trim(*r));
    if (!rel.empty()) return rel;
  }
  if (auto u = util::read_file(build_dir / "include/generated/utsrelease.h"); u) {
    std::smatch m;
    static const std::regex k_re(R"re(UTS_RELEASE\s+"([^"]+)")re");
    if (std::regex_search(*u, m, k_re)) return m[1].str();
  }
  return unexpected(ErrorKind::not_found,
                    fmt::format("{} is not a kernel build directory (no include/config/kernel.release)",
                                build_dir.string()));
}

static std::string line_of(const std::string& release) {
  std::smatch m;
  static const std::regex k_re(R"(^(\d+)\.(\d+))");
  if (std::regex_search(release, m, k_re)) return m[1].str() + "." + m[2].str();
  return release;
}

static void fill_image_paths(core::Kernel& k) {
  fs::path dir = kernel_cache_dir(k.release);
  if (fs::exists(dir / "complete.json")) {
    k.image_root = dir / "image";
    k.vmlinux = dir / "vmlinux";
    k.modules_dir = k.image_root / "lib/modules" / k.release;
  }
}

util::Expected<core::Kernel> resolve_kernel(const std::string& name) {
  if (name.empty()) return unexpected(ErrorKind::config, "empty kernel name");
  for (const auto& known : known_kernels()) {
    if (name == known.name || name == known.release) {
      core::Kernel k;
      k.name = known.name;
      k.release = known.release;
      k.line = known.name;
      k.build_dir = fs::path("/usr/src") / ("linux-headers-" + known.release);
      k.headers_package = "linux-headers-" + known.release;
      k.image_package = "linux-image-" + known.release;
      k.source_package = known.source_package;
      fill_image_paths(k);
      return k;
    }
  }
  fs::path p(name);
  if (name.find('/') != std::string::npos || fs::exists(p)) {
    std::error_code ec;
    if (!fs::is_directory(p, ec))
      return unexpected(ErrorKind::not_found, fmt::format("kernel directory {} does not exist", name));
    auto rel = read_build_release(p);
    if (!rel) return unexpected(rel.error());
    core::Kernel k;
    k.name = name;
    k.release = *rel;
    k.line = line_of(*rel);
    k.build_dir = fs::canonical(p, ec);
    fill_image_paths(k);
    return k;
  }
  std::string names;
  for (const auto& known : known_kernels()) names += (names.empty() ? "" : ", ") + known.name;
  return unexpected(ErrorKind::config, fmt::format("unknown kernel '{}': use one of {} or a path to a kernel "
                                                   "build/headers directory (see: autodriver kernel list)",
                                                   name, names));
}

} // namespace autodriver::kernel
