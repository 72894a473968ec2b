#include "autodriver/kernel/fetch.hpp"

#include "autodriver/kernel/archive.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/kernel/toolchain.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <regex>
#include <unistd.h>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using util::ErrorKind;
using util::unexpected;

namespace {

fs::path system_tool(const std::string& name) {
  if (auto p = util::find_program(name); !p.empty()) return p;
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"})
    if (fs::exists(fs::path(dir) / name)) return fs::path(dir) / name;
  return {};
}

util::Expected<void> run_checked(std::vector<std::string> argv, const fs::path& cwd, std::chrono::seconds timeout, ErrorKind kind,
                                 const std::string& what) {
  util::RunRequest req;
  req.argv = std::move(argv);
  req.cwd = cwd;
  req.timeout = timeout;
  req.stderr_mode = util::Stderr::merge;
  req.env_set = {{"LC_ALL", "C"}, {"DEBIAN_FRONTEND", "noninteractive"}};
  util::log_debug("run: {}", util::render_argv(req.argv));
  auto r = util::run(req);
  if (!r) return unexpected(r.error());
  if (!r->ok()) {
    std::string tail = util::tail_capped(r->out, 600);
    return unexpected(r->timed_out ? ErrorKind::timeout : kind, fmt::format("{} failed ({}): {}", what, r->status_text(), tail));
  }
  return {};
}

} // namespace

util::Expected<void> extract_vmlinux(const fs::path& bzimage, const fs::path& out) {
  auto data = util::read_file(bzimage);
  if (!data) return unexpected(data.error());
  struct Format {
    std::string_view magic;
    std::vector<std::string> argv;
  };
  // The same payload formats and magics that the kernel's scripts/extract-vmlinux tries.
  const std::vector<Format> formats = {
      {std::string_view("\xfd"
                        "7zXZ\x00",
                        6),
       {"xz", "-dc", "--single-stream"}},
      {std::string_view("\x28\xb5\x2f\xfd", 4), {"zstd", "-dcq"}},
      {std::string_view("\x1f\x8b\x08", 3), {"gzip", "-dc"}},
      {std::string_view("\x5d\x00\x00\x00", 4), {"xz", "-dc", "--format=lzma"}},
      {std::string_view("\x02\x21\x4c\x18", 4), {"lz4", "-dc"}},
  };
  auto work = util::TempDir::create(out.parent_path(), ".vmlinux-");
  if (!work) return unexpected(work.error());
  for (const auto& f : formats) {
    for (auto pos = data->find(f.magic); pos != std::string::npos; pos = data->find(f.magic, pos + 1)) {
      fs::path payload = work->path() / "payload";
      if (auto w = util::write_file(payload, std::string_view(*data).substr(pos)); !w) return w;
      util::RunRequest req;
      req.argv = f.argv;
      req.argv.push_back(payload.string());
      req.timeout = 120s;
      req.output_cap = std::size_t(1) << 30;
      auto r = util::run(req);
      // Trailing data after the stream makes some decompressors exit non-zero; the ELF check decides.
      if (r && r->out.size() > 4 &&
          r->out.compare(0, 4,
                         "\x7f"
                         "ELF") == 0) {
        return util::write_file_atomic(out, r->out);
      }
      break; // first occurrence of a magic is the payload; later ones are noise
    }
  }
  return unexpected(ErrorKind::parse, fmt::format("no compressed ELF kernel found in {}", bzimage.string()));
}

std::size_t relocate_symlinks(const fs::path& root) {
  std::size_t n = 0;
  std::error_code ec;
  std::vector<fs::path> links;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_symlink(ec)) links.push_back(it->path());
  for (const auto& link : links) {
    fs::path target = fs::read_symlink(link, ec);
    if (ec || !target.is_absolute()) continue;
    fs::path inside = (root / target.relative_path()).lexically_normal();
    fs::path rel = inside.lexically_relative(link.parent_path());
    fs::remove(link, ec);
    fs::create_symlink(rel, link, ec);
    if (!ec) ++n;
  }
  return n;
}

namespace {

// Debian's headers Makefile is `KBUILD_OUTPUT=/usr/src/linux-headers-R` and `include
// /usr/src/linux-headers-R-common/Makefile`: point those at the unpacked copy.
util::Expected<void> relocate_makefiles(const fs::path& root, const fs::path& final_root) {
  std::error_code ec;
  static const std::regex k_abs(R"((^|[\s=])/usr/(src|lib)/)");
  for (const auto& e : fs::directory_iterator(root / "usr/src", ec)) {
    fs::path mk = e.path() / "Makefile";
    if (!fs::is_regular_file(mk, ec)) continue;
    auto text = util::read_file(mk);
    if (!text) return util::unexpected(text.error());
    std::string out = std::regex_replace(*text, k_abs, "$1" + final_root.string() + "/usr/$2/");
    if (out != *text)
      if (auto w = util::write_file(mk, out); !w) return w;
  }
  return {};
}

fs::path find_vmlinuz(const fs::path& root, const std::string& release) {
  for (fs::path p : {root / "boot" / ("vmlinuz-" + release), root / "usr/lib/modules" / release / "vmlinuz",
                     root / "lib/modules" / release / "vmlinuz"})
    if (fs::exists(p)) return p;
  return {};
}

} // namespace

util::Expected<core::Kernel> fetch_kernel(const std::string& name, const ProgressFn& progress) {
  auto k = resolve_kernel(name);
  if (!k) return k;
  if (k->suite.empty()) {
    // host or a path: nothing to download; the host's compiler builds against it.
    if (!k->has_headers())
      return unexpected(ErrorKind::not_found, fmt::format("no kbuild Makefile in {}", k->build_dir.string()));
    return k;
  }
  fs::path final_dir = kernel_cache_dir(k->release);
  auto lock = util::FileLock::acquire(cache_root() / "locks" / (k->release + ".lock"), 1800s);
  if (!lock) return unexpected(lock.error());
  if (auto f = fetched_kernel(k->release)) {
    if (auto t = ensure_toolchain(base_suite(f->suite), f->compiler, progress); !t) return unexpected(t.error());
    return resolve_kernel(name);
  }

  auto archive = Archive::open(Archive::Refresh::if_missing, progress);
  if (!archive) return unexpected(archive.error());
  std::string tag = k->release.substr(0, k->release.rfind("-amd64"));
  auto headers = archive->kernel_closure("linux-headers-" + k->release, tag);
  if (!headers) return unexpected(headers.error());
  std::vector<const PackageEntry*> packages = *headers;
  bool has_image = false;
  for (const std::string& image : {"linux-image-" + k->release, "linux-image-" + k->release + "-unsigned"}) {
    if (!archive->package(image)) continue;
    auto closure = archive->kernel_closure(image, tag);
    if (!closure) return unexpected(closure.error());
    for (const auto* p : *closure)
      if (std::find(packages.begin(), packages.end(), p) == packages.end()) packages.push_back(p);
    has_image = true;
    break;
  }
  if (!has_image) util::log_warn("the archive has no image for {}: build gates only, no boot", k->release);

  std::error_code ec;
  fs::path kernels = final_dir.parent_path();
  fs::create_directories(kernels, ec);
  // A previous fetch was interrupted: its partial directory is discarded and the work redone.
  for (const auto& e : fs::directory_iterator(kernels, ec))
    if (e.path().filename().string().starts_with(".partial-" + k->release + "-")) fs::remove_all(e.path(), ec);
  fs::remove_all(final_dir, ec);
  fs::path partial = kernels / fmt::format(".partial-{}-{}", k->release, getpid());
  fs::create_directories(partial / "debs", ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", partial.string(), ec.message()));
  struct Cleanup {
    fs::path dir;
    bool armed = true;
    ~Cleanup() {
      std::error_code e;
      if (armed) fs::remove_all(dir, e);
    }
  } cleanup{partial};

  auto debs = archive->download(packages, partial / "debs", progress);
  if (!debs) return unexpected(debs.error());
  fs::path root = partial / "root";
  for (const auto& deb : *debs) {
    progress(fmt::format("unpacking {}", deb.filename().string()));
    if (auto x = Archive::unpack(deb, root); !x) return unexpected(x.error());
  }
  fs::remove_all(partial / "debs", ec);
  // A merged-/usr image (7.x: modules and vmlinuz under usr/lib/modules) reads like the others.
  if (fs::exists(root / "usr/lib/modules") && !fs::exists(root / "lib")) fs::create_symlink("usr/lib", root / "lib", ec);
  relocate_symlinks(root);
  if (auto m = relocate_makefiles(root, final_dir / "root"); !m) return unexpected(m.error());
  fs::path build = root / "usr/src" / ("linux-headers-" + k->release);
  if (!fs::exists(build / "Makefile"))
    return unexpected(ErrorKind::parse,
                      fmt::format("{} unpacked without usr/src/linux-headers-{}/Makefile", k->headers_package, k->release));
  std::string compiler = compiler_package(config_cc_version_text(build));
  if (compiler.empty())
    return unexpected(ErrorKind::parse, fmt::format("{}'s .config names no gcc (CONFIG_CC_VERSION_TEXT=\"{}\")", k->release,
                                                    config_cc_version_text(build)));

  if (has_image) {
    progress("running depmod on the image's module tree");
    if (auto d = run_checked({system_tool("depmod").string(), "-b", root.string(), k->release}, partial, 300s, ErrorKind::io,
                             "depmod");
        !d)
      return unexpected(d.error());
    progress("extracting vmlinux");
    fs::path bz = find_vmlinuz(root, k->release);
    if (bz.empty()) return unexpected(ErrorKind::parse, fmt::format("no vmlinuz in {}'s image", k->release));
    if (auto v = extract_vmlinux(bz, partial / "vmlinux"); !v) return unexpected(v.error());
  }
  if (auto t = ensure_toolchain(base_suite(k->suite), compiler, progress); !t) return unexpected(t.error());

  nlohmann::json names = nlohmann::json::array();
  for (const auto* p : packages) names.push_back(p->name + "=" + p->version);
  nlohmann::json stamp = {
      {"schema_version", 2},    {"release", k->release}, {"line", k->line},
      {"version", k->version},  {"suite", k->suite},     {"compiler", compiler},
      {"has_image", has_image}, {"packages", names},     {"fetched_at", static_cast<long long>(std::time(nullptr))}};
  if (auto w = util::write_file_atomic(partial / "complete.json", stamp.dump(2, ' ', false, util::json_bytes) + "\n"); !w)
    return unexpected(w.error());
  fs::rename(partial, final_dir, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot move {} into place: {}", partial.string(), ec.message()));
  cleanup.armed = false;
  return resolve_kernel(name);
}

} // namespace autodriver::kernel
