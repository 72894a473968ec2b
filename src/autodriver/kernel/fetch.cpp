#include "autodriver/kernel/fetch.hpp"

#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
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

util::Expected<void> run_checked(std::vector<std::string> argv, const fs::path& cwd, std::chrono::seconds timeout,
                                 ErrorKind kind, const std::string& what) {
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
    return unexpected(r->timed_out ? ErrorKind::timeout : kind,
                      fmt::format("{} failed ({}): {}", what, r->status_text(), tail));
  }
  return {};
}

bool looks_like_network_failure(const std::string& msg) {
  for (const char* s : {"Temporary failure resolving", "Could not resolve", "Failed to fetch", "Unable to connect",
                        "Connection failed", "Could not connect"})
    if (msg.find(s) != std::string::npos) return true;
  return false;
}

util::Expected<void> ensure_headers(const core::Kernel& k, const ProgressFn& progress) {
  if (k.has_headers() || k.headers_package.empty()) return {};
  if (geteuid() != 0)
    return unexpected(ErrorKind::config, fmt::format("{} is not installed and installing it needs root: "
                                                     "run `apt-get install {}` as root, then retry",
                                                     k.headers_package, k.headers_package));
  progress(fmt::format("installing {} (apt-get)", k.headers_package));
  auto apt = system_tool("apt-get");
  auto r = run_checked({apt.string(), "install", "-y", "-q", "--no-install-recommends", k.headers_package}, {},
                       900s, ErrorKind::network, "apt-get install " + k.headers_package);
  if (!r) {
    if (looks_like_network_failure(r.error().message))
      return unexpected(ErrorKind::network, fmt::format("cannot install {}: the Debian package mirror is not "
                                                        "reachable (check /etc/apt/sources.list and the network)",
                                                        k.headers_package));
    return r;
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
      {std::string_view("\xfd" "7zXZ\x00", 6), {"xz", "-dc", "--single-stream"}},
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
      if (r && r->out.size() > 4 && r->out.compare(0, 4, "\x7f" "ELF") == 0) {
        return util::write_file_atomic(out, r->out);
      }
      break; // first occurrence of a magic is the payload; later ones are noise
    }
  }
  return unexpected(ErrorKind::parse, fmt::format("no compressed ELF kernel found in {}", bzimage.string()));
}

util::Expected<core::Kernel> fetch_kernel(const std::string& name, const ProgressFn& progress) {
  auto k = resolve_kernel(name);
  if (!k) return k;
  if (auto h = ensure_headers(*k, progress); !h) return unexpected(h.error());
  if (!k->has_headers())
    return unexpected(ErrorKind::not_found, fmt::format("no kbuild Makefile in {}", k->build_dir.string()));

  fs::path final_dir = kernel_cache_dir(k->release);
  auto lock = util::FileLock::acquire(cache_root() / "locks" / (k->release + ".lock"), 1800s);
  if (!lock) return unexpected(lock.error());
  if (fs::exists(final_dir / "complete.json")) return resolve_kernel(name);

  std::error_code ec;
  fs::path kernels = final_dir.parent_path();
  fs::create_directories(kernels, ec);
  // A previous fetch was interrupted: its partial directory is discarded and the work redone.
  for (const auto& e : fs::directory_iterator(kernels, ec))
    if (e.path().filename().string().starts_with(".partial-" + k->release + "-")) fs::remove_all(e.path(), ec);
  fs::remove_all(final_dir, ec);

  fs::path partial = kernels / fmt::format(".partial-{}-{}", k->release, getpid());
  fs::create_directories(partial, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", partial.string(), ec.message()));

  std::string pkg = k->image_package.empty() ? "linux-image-" + k->release : k->image_package;
  progress(fmt::format("downloading {} (apt-get download)", pkg));
  auto dl = run_checked({system_tool("apt-get").string(), "download", "-q", pkg}, partial, 900s, ErrorKind::network,
                        "apt-get download " + pkg);
  if (!dl) {
    fs::remove_all(partial, ec);
    if (looks_like_network_failure(dl.error().message))
      return unexpected(ErrorKind::network,
                        fmt::format("cannot download {}: the Debian package mirror is not reachable", pkg));
    return unexpected(dl.error());
  }
  fs::path deb;
  for (const auto& e : fs::directory_iterator(partial, ec))
    if (e.path().extension() == ".deb") deb = e.path();
  if (deb.empty()) return unexpected(ErrorKind::not_found, "apt-get download produced no .deb for " + pkg);

  progress(fmt::format("unpacking {}", deb.filename().string()));
  if (auto x = run_checked({system_tool("dpkg").string(), "-x", deb.string(), (partial / "image").string()}, partial,
                           600s, ErrorKind::io, "dpkg -x");
      !x)
    return unexpected(x.error());
  fs::remove(deb, ec);

  progress("running depmod on the image's module tree");
  if (auto d = run_checked({system_tool("depmod").string(), "-b", (partial / "image").string(), k->release}, partial,
                           300s, ErrorKind::io, "depmod");
      !d)
    return unexpected(d.error());

  progress("extracting vmlinux");
  fs::path bz = partial / "image/boot" / ("vmlinuz-" + k->release);
  if (auto v = extract_vmlinux(bz, partial / "vmlinux"); !v) return unexpected(v.error());

  nlohmann::json stamp = {{"schema_version", 1},
                          {"release", k->release},
                          {"package", pkg},
                          {"deb", deb.filename().string()},
                          {"fetched_at", static_cast<long long>(std::time(nullptr))}};
  if (auto w = util::write_file_atomic(partial / "complete.json", stamp.dump(2) + "\n"); !w) return unexpected(w.error());
  fs::rename(partial, final_dir, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot move {} into place: {}", partial.string(), ec.message()));
  return resolve_kernel(name);
}

} // namespace autodriver::kernel
