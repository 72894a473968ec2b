#include "autodriver/kernel/target.hpp"

#include "autodriver/kernel/archive.hpp"
#include "autodriver/kernel/build_host.hpp"
#include "autodriver/kernel/toolchain.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <regex>
#include <set>
#include <sys/utsname.h>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

fs::path cache_root() {
  if (const char* c = std::getenv("AUTODRIVER_CACHE"); c && *c) return fs::absolute(fs::path(c));
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "autodriver";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "autodriver";
}

fs::path kernel_cache_dir(const std::string& release) { return cache_root() / "kernels" / release; }

std::optional<FetchedKernel> fetched_kernel(const std::string& release) {
  auto text = util::read_file(kernel_cache_dir(release) / "complete.json");
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  // Schema 1 was the image-only layout of earlier versions: such a kernel is fetched again.
  if (!j.is_object() || j.value("schema_version", 0) != 2) return std::nullopt;
  FetchedKernel f;
  f.release = j.value("release", "");
  f.line = j.value("line", "");
  f.version = j.value("version", "");
  f.suite = j.value("suite", "");
  f.compiler = j.value("compiler", "");
  f.has_image = j.value("has_image", false);
  if (f.release != release) return std::nullopt;
  return f;
}

std::vector<FetchedKernel> fetched_kernels() {
  std::vector<FetchedKernel> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache_root() / "kernels", ec))
    if (auto f = fetched_kernel(e.path().filename().string())) out.push_back(*f);
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return compare_debian_versions(a.version, b.version) < 0; });
  return out;
}

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
                    fmt::format("{} is not a kernel build directory (no include/config/kernel.release): give the "
                                "folder `make modules_prepare` ran in, or a linux-headers-* folder",
                                build_dir.string()));
}

std::string line_of(const std::string& release) {
  auto r = core::release_numbers(release);
  return r && r->count >= 2 ? r->line() : release;
}

namespace {

// A kernel from Debian's archive (fetched or not): everything lives under its cache folder.
core::Kernel debian_kernel(const std::string& name, const std::string& release, const std::string& version,
                           const std::string& suite) {
  core::Kernel k;
  k.name = name;
  k.release = release;
  k.line = line_of(release);
  k.version = version;
  k.suite = suite;
  fs::path dir = kernel_cache_dir(release);
  k.build_dir = dir / "root/usr/src" / ("linux-headers-" + release);
  k.headers_package = "linux-headers-" + release;
  k.image_package = "linux-image-" + release;
  k.source_package = "linux-source-" + k.line;
  k.read_paths = {dir};
  if (auto f = fetched_kernel(release)) {
    k.compiler = f->compiler;
    k.toolchain_root = toolchain_root(base_suite(f->suite), f->compiler);
    if (f->has_image) {
      k.image_root = dir / "root";
      k.vmlinux = dir / "vmlinux";
      k.modules_dir = k.image_root / "lib/modules" / release;
    }
  }
  return k;
}

// A kernel build directory given by path (or the host's): built with the host's compiler.
util::Expected<core::Kernel> path_kernel(const std::string& name, const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec))
    return unexpected(ErrorKind::not_found, fmt::format("kernel directory {} does not exist", p.string()));
  auto rel = read_build_release(p);
  if (!rel) return unexpected(rel.error());
  core::Kernel k;
  k.name = name;
  k.release = *rel;
  k.line = line_of(*rel);
  k.build_dir = fs::canonical(p, ec);
  k.compiler = compiler_package(config_cc_version_text(k.build_dir));
  k.read_paths = {k.build_dir};
  // An O= build directory points at its source tree; Debian's headers at their -common and kbuild folders.
  for (const char* link : {"source", "scripts", "tools"})
    if (fs::is_symlink(k.build_dir / link, ec))
      if (auto t = fs::canonical(k.build_dir / link, ec); !ec) k.read_paths.push_back(t);
  if (auto f = fetched_kernel(k.release); f && f->has_image) {
    fs::path dir = kernel_cache_dir(k.release);
    k.image_root = dir / "root";
    k.vmlinux = dir / "vmlinux";
    k.modules_dir = k.image_root / "lib/modules" / k.release;
  }
  return k;
}

std::string running_release() {
  struct utsname u {};
  if (uname(&u) != 0) return {};
  return u.release;
}

} // namespace

namespace {

util::Expected<core::Kernel> resolve_name(const std::string& name) {
  if (name.empty()) return unexpected(ErrorKind::config, "empty kernel name");
  if (name == "host") {
    std::string rel = running_release();
    fs::path build = fs::path("/lib/modules") / rel / "build";
    std::error_code ec;
    if (!fs::exists(build / "Makefile", ec))
      return unexpected(ErrorKind::not_found,
                        fmt::format("the running kernel {} has no build directory at {} (what DKMS uses): install its "
                                    "headers (linux-headers-{}) or name a Debian kernel (autodriver kernel list --available)",
                                    rel, build.string(), rel));
    return path_kernel(name, build);
  }
  auto nums = core::release_numbers(name);
  bool is_line = nums && nums->count == 2 && nums->used == name.size();
  bool is_release = nums && nums->count == 3 &&
                    name.find_first_not_of("-+.~abcdefghijklmnopqrstuvwxyz0123456789", nums->used) == std::string::npos;
  if (!is_line && !is_release) {
    if (name.find('/') != std::string::npos || fs::exists(name)) return path_kernel(name, fs::path(name));
    return unexpected(ErrorKind::config,
                      fmt::format("'{}' is not a kernel: give a line (6.1, 7.3), a Debian release (7.3.4+deb13-amd64), "
                                  "`host` or a path to a kernel build directory (see `autodriver kernel list --available`)",
                                  name));
  }

  // The archive's lists when they are here; fetched kernels work without them (offline).
  Archive archive = Archive::open_offline();
  std::string archive_error;
  if (!archive.has_lists()) {
    if (auto a = Archive::open(Archive::Refresh::if_missing, nullptr)) archive = std::move(*a);
    else archive_error = a.error().message;
  }
  auto fetched = fetched_kernels();
  if (is_line) {
    if (auto k = archive.newest(name)) return debian_kernel(name, k->release, k->version, k->suite);
    for (auto it = fetched.rbegin(); it != fetched.rend(); ++it)
      if (it->line == name) return debian_kernel(name, it->release, it->version, it->suite);
  } else {
    if (auto f = fetched_kernel(name)) return debian_kernel(name, f->release, f->version, f->suite);
    if (auto k = archive.find_release(name)) return debian_kernel(name, k->release, k->version, k->suite);
    if (fs::exists(name)) return path_kernel(name, fs::path(name));
  }
  if (!archive.has_lists())
    return unexpected(ErrorKind::network,
                      fmt::format("kernel {} is not fetched and Debian's package lists cannot be read: {}", name, archive_error));
  std::string lines;
  for (const auto& l : archive.lines()) lines += (lines.empty() ? "" : ", ") + l;
  return unexpected(ErrorKind::not_found,
                    fmt::format("Debian's archive has no amd64 kernel {}: its kernel lines are {} (releases: "
                                "`autodriver kernel list --available`); or give `host` or a kernel build directory",
                                name, lines));
}

} // namespace

// The packages of `names` dpkg does not list as installed on this machine.
static util::Expected<std::vector<std::string>> missing_on_host(const std::vector<std::string>& names) {
  util::RunRequest req;
  req.argv = {"dpkg-query", "-W", "-f=${Package}\t${db:Status-Abbrev}\n"};
  req.argv.insert(req.argv.end(), names.begin(), names.end());
  req.timeout = std::chrono::seconds(60);
  auto r = util::run(req);
  if (!r) return unexpected(r.error());
  std::set<std::string> have;
  for (auto line : util::split_lines(r->out)) {
    auto tab = line.find('\t');
    if (tab != std::string_view::npos && line.substr(tab + 1).starts_with("ii")) have.insert(std::string(line.substr(0, tab)));
  }
  std::vector<std::string> out;
  for (const auto& n : names)
    if (!have.count(n)) out.push_back(n);
  return out;
}

util::Expected<core::Kernel> with_build_deps(core::Kernel k, const std::vector<std::string>& build_deps,
                                             const std::function<void(const std::string&)>& progress) {
  if (build_deps.empty()) return k;
  if (k.toolchain_root.empty() && k.suite.empty()) {
    auto missing = missing_on_host(build_deps);
    if (!missing) return unexpected(missing.error());
    if (!missing->empty()) {
      std::string list;
      for (const auto& m : *missing) list += (list.empty() ? "" : " ") + m;
      return unexpected(ErrorKind::not_found,
                        fmt::format("--build-deps: {} builds with this machine's own programs, which lack {} "
                                    "(`apt-get install {}`)",
                                    k.name, list, list));
    }
    return k;
  }
  if (k.compiler.empty()) return k; // not fetched: the caller's check for its headers says so
  auto root = ensure_toolchain_with(base_suite(k.suite), k.compiler, build_deps, progress);
  if (!root) return unexpected(root.error());
  k.toolchain_root = *root;
  return with_build_host(std::move(k));
}

util::Expected<core::Kernel> resolve_kernel(const std::string& name) {
  auto k = resolve_name(name);
  if (!k) return k;
  return with_build_host(std::move(*k));
}

} // namespace autodriver::kernel
