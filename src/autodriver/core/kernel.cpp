#include "autodriver/core/kernel.hpp"

#include <cstdio>

namespace autodriver::core {

bool Kernel::has_headers() const { return !build_dir.empty() && std::filesystem::exists(build_dir / "Makefile"); }

bool Kernel::has_image() const { return !vmlinux.empty() && std::filesystem::exists(vmlinux); }

std::optional<ReleaseNumbers> release_numbers(std::string_view s) {
  constexpr std::size_t k_max_digits = 6;
  ReleaseNumbers r;
  int* parts[3] = {&r.major, &r.minor, &r.patch};
  std::size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    std::size_t start = i;
    int n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (i - start == k_max_digits) return std::nullopt;
      n = n * 10 + (s[i++] - '0');
    }
    if (i == start) {
      if (k == 0) return std::nullopt;
      i = start - 1; // the '.' before belongs to what follows ("6." is 6)
      break;
    }
    *parts[k] = n;
    r.count = k + 1;
    if (k == 2 || i >= s.size() || s[i] != '.') break;
    ++i;
  }
  r.used = i;
  return r;
}

int Kernel::version_code() const {
  auto r = release_numbers(release);
  return r ? static_cast<int>(r->code()) : 0;
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
