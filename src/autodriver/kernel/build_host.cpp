#include "autodriver/kernel/build_host.hpp"

#include "autodriver/kernel/target.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <unistd.h>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

namespace {

// `uname` as on a machine running the target: its release for -r and inside -a, the rest the real
// uname's. POSIX sh (the root's dash), nothing else.
std::string uname_script(const std::string& release) {
  return fmt::format(R"(#!/bin/sh
# autodriver: uname as on a machine running {0} (the release DKMS builds with as kernelver)
real=/usr/bin/uname
[ -x "$real" ] || real=/bin/uname
[ "$#" = 1 ] && case "$1" in -r|--kernel-release) echo '{0}'; exit 0;; esac
out=$("$real" "$@") || exit $?
host=$("$real" -r)
case "$out" in *"$host"*) out="${{out%%"$host"*}}{0}${{out#*"$host"}}";; esac
printf '%s\n' "$out"
)",
                     release);
}

bool in_root(const fs::path& root, const fs::path& inside) {
  std::error_code ec;
  return fs::exists((root.empty() ? fs::path("/") : root) / inside.relative_path(), ec);
}

void add_compiler(std::vector<HostEntry>& out, const core::Kernel& k) {
  // "gcc-14" -> its version suffix; the plain names a build or a configure probe calls.
  if (!k.compiler.starts_with("gcc-")) return;
  const std::string ver = k.compiler.substr(4);
  const fs::path& root = k.toolchain_root;
  const std::vector<std::pair<std::string, std::string>> names = {{"gcc", "gcc"},
                                                                  {"cc", "gcc"},
                                                                  {"c89-gcc", "gcc"},
                                                                  {"c99-gcc", "gcc"},
                                                                  {"cpp", "cpp"},
                                                                  {"gcc-ar", "gcc-ar"},
                                                                  {"gcc-nm", "gcc-nm"},
                                                                  {"gcc-ranlib", "gcc-ranlib"},
                                                                  {"gcov", "gcov"},
                                                                  {"x86_64-linux-gnu-gcc", "gcc"},
                                                                  {"x86_64-linux-gnu-cpp", "cpp"}};
  for (const auto& [name, tool] : names) {
    fs::path target = fs::path("/usr/bin") / fmt::format("{}-{}", tool, ver);
    if (in_root(root, target)) out.push_back({fs::path("bin") / name, target, {}, false});
  }
  // binutils under their plain names where the root has only the triplet's.
  for (const char* tool : {"ld", "ld.bfd", "as", "objcopy", "objdump", "nm", "ar", "ranlib", "strip", "readelf", "size",
                           "strings", "addr2line", "c++filt", "elfedit"}) {
    fs::path plain = fs::path("/usr/bin") / tool, triplet = fs::path("/usr/bin") / fmt::format("x86_64-linux-gnu-{}", tool);
    if (!in_root(root, plain) && in_root(root, triplet)) out.push_back({fs::path("bin") / tool, triplet, {}, false});
  }
}

void add_modules(std::vector<HostEntry>& out, const core::Kernel& k) {
  std::error_code ec;
  const fs::path dir = fs::path("modules") / k.release;
  // A Debian kernel: its image's module folder, with the build and source links its packages made.
  fs::path mods = k.modules_dir;
  // Headers without the image: Debian's headers package makes the same links (root/lib/modules/R
  // beside root/usr/src/linux-headers-R).
  if (mods.empty()) mods = (k.build_dir / "../../../lib/modules" / k.release).lexically_normal();
  if (fs::exists(mods / "build" / "Makefile", ec)) {
    out.push_back({dir, mods, {}, false});
    return;
  }
  if (k.build_dir.empty()) return;
  out.push_back({dir / "build", k.build_dir, {}, false});
  fs::path source = k.build_dir;
  if (fs::is_symlink(k.build_dir / "source", ec))
    if (auto t = fs::canonical(k.build_dir / "source", ec); !ec) source = t;
  out.push_back({dir / "source", source, {}, false});
}

std::string describe(const std::vector<HostEntry>& entries) {
  std::string s = "autodriver build host v1\n";
  for (const auto& e : entries)
    s += fmt::format("{}\t{}\t{}\t{}\n", e.path.string(), e.target.string(), e.executable, util::fnv1a_64(e.text));
  return s;
}

// Where the root's /lib/modules is (a merged-/usr root: usr/lib/modules), made if the root is ours.
void ensure_modules_mount_point(const core::Kernel& k) {
  if (k.toolchain_root.empty()) return; // the host's own /: never written
  std::error_code ec;
  fs::path lib = k.toolchain_root / "lib";
  fs::path dir = fs::is_symlink(lib, ec) ? k.toolchain_root / "usr/lib/modules" : lib / "modules";
  if (!fs::exists(dir, ec)) fs::create_directories(dir, ec);
}

} // namespace

std::vector<HostEntry> build_host_entries(const core::Kernel& k) {
  std::vector<HostEntry> out;
  add_compiler(out, k);
  if (!k.release.empty()) out.push_back({"bin/uname", {}, uname_script(k.release), true});
  add_modules(out, k);
  return out;
}

util::Expected<fs::path> ensure_build_host(const core::Kernel& k) {
  auto entries = build_host_entries(k);
  const std::string desc = describe(entries);
  const fs::path parent = cache_root() / "build-host";
  const fs::path dir = parent / fmt::format("{}-{:016x}", k.release, util::fnv1a_64(desc));
  std::error_code ec;
  ensure_modules_mount_point(k);
  if (fs::exists(dir / "contents", ec)) return dir;
  auto tmp = util::TempDir::create(parent, ".partial-");
  if (!tmp) return unexpected(tmp.error());
  const fs::path stage = tmp->path() / "host";
  for (const auto& e : entries) {
    fs::path p = stage / e.path;
    fs::create_directories(p.parent_path(), ec);
    if (!e.target.empty()) {
      fs::create_symlink(e.target, p, ec);
      if (ec) return unexpected(ErrorKind::io, fmt::format("cannot make {}: {}", p.string(), ec.message()));
    } else {
      if (auto w = util::write_file(p, e.text); !w) return unexpected(w.error());
      if (e.executable)
        fs::permissions(p,
                        fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec,
                        ec);
    }
  }
  fs::create_directories(stage / "bin", ec);
  fs::create_directories(stage / "modules", ec);
  if (auto w = util::write_file(stage / "contents", desc); !w) return unexpected(w.error());
  fs::rename(stage, dir, ec);
  // Another run made the same folder first: its contents are these.
  if (ec && !fs::exists(dir / "contents"))
    return unexpected(ErrorKind::io, fmt::format("cannot make {}: {}", dir.string(), ec.message()));
  return dir;
}

core::Kernel with_build_host(core::Kernel k) {
  if (k.build_dir.empty()) return k;
  auto h = ensure_build_host(k);
  if (h) k.build_host = *h;
  else util::log_debug("no build host for {}: {}", k.release, h.error().message);
  return k;
}

} // namespace autodriver::kernel
