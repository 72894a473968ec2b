#include "autodriver/core/kernel.hpp"

#include <cstdio>

namespace autodriver::core {

bool Kernel::has_headers() const { return !build_dir.empty() && std::filesystem::exists(build_dir / "Makefile"); }

bool Kernel::has_image() const { return !vmlinux.empty() && std::filesystem::exists(vmlinux); }

int Kernel::version_code() const {
  int a = 0, b = 0, c = 0;
  std::sscanf(release.c_str(), "%d.%d.%d", &a, &b, &c);
  return (a << 16) + (b << 8) + (c > 255 ? 255 : c);
}

util::SandboxSpec Kernel::build_sandbox(const std::filesystem::path& writable) const {
  util::SandboxSpec spec;
  spec.root = toolchain_root;
  spec.read_only = read_paths;
  if (read_paths.empty() && !build_dir.empty()) spec.read_only.push_back(build_dir);
  spec.writable.push_back(writable);
  if (!build_host.empty()) {
    spec.read_only_at.emplace_back(build_host, k_build_host_dir);
    spec.read_only_at.emplace_back(build_host / "modules", "/lib/modules");
    spec.path_first.push_back(std::filesystem::path(k_build_host_dir) / "bin");
  }
  return spec;
}

} // namespace autodriver::core
