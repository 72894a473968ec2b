#include "autodriver/kernel/source.hpp"

#include "autodriver/kernel/archive.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <unistd.h>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using util::ErrorKind;
using util::unexpected;

fs::path source_tarball(const core::Kernel& k) { return fs::path("/usr/src") / ("linux-source-" + k.line + ".tar.xz"); }

static fs::path source_dir(const core::Kernel& k) { return cache_root() / "source" / k.line; }

fs::path cached_source(const core::Kernel& k) {
  fs::path dir = source_dir(k);
  if (!fs::exists(dir / "complete.json")) return {};
  return dir / ("linux-source-" + k.line);
}

std::vector<core::Kernel> reference_chain(const core::Kernel& target) {
  std::vector<std::string> lines = Archive::open_offline().source_lines();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache_root() / "source", ec))
    if (fs::exists(e.path() / "complete.json")) lines.push_back(e.path().filename().string());
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return compare_debian_versions(a, b) > 0; });
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  std::vector<core::Kernel> out;
  for (const auto& l : lines)
    if (compare_debian_versions(l, target.line) < 0)
      if (auto k = resolve_kernel(l)) out.push_back(*k);
  return out;
}

std::optional<core::Kernel> reference_kernel(const core::Kernel& target) {
  auto chain = reference_chain(target);
  if (chain.empty()) return std::nullopt;
  return chain.front();
}

namespace {

// linux-source-<line> from the archive (the version of the kernel's own build when the archive has
// it): the .deb is unpacked in `work`, and the path of its tarball returned.
util::Expected<fs::path> download_source(const core::Kernel& k, const fs::path& work, const ProgressFn& progress) {
  auto archive = Archive::open(Archive::Refresh::if_missing, progress);
  if (!archive) return unexpected(archive.error());
  std::string pkg = "linux-source-" + k.line;
  const PackageEntry* p = k.version.empty() ? nullptr : archive->package(pkg, "=", k.version);
  if (!p) p = archive->package(pkg);
  if (!p) {
    std::string lines;
    for (const auto& l : archive->source_lines()) lines += (lines.empty() ? "" : ", ") + l;
    return unexpected(ErrorKind::not_found, fmt::format("Debian's archive has no {} (kernel sources exist for {})", pkg, lines));
  }
  std::error_code ec;
  fs::create_directories(work / "debs", ec);
  auto debs = archive->download({p}, work / "debs", progress);
  if (!debs) return unexpected(debs.error());
  auto x = Archive::unpack(debs->front(), work / "pkg");
  fs::remove_all(work / "debs", ec);
  if (!x) return unexpected(x.error());
  fs::path tarball = work / "pkg/usr/src" / (pkg + ".tar.xz");
  if (!fs::exists(tarball)) return unexpected(ErrorKind::parse, fmt::format("{} holds no {}.tar.xz", pkg, pkg));
  return tarball;
}

} // namespace

util::Expected<fs::path> ensure_source(const core::Kernel& k, const ProgressFn& progress) {
  if (auto c = cached_source(k); !c.empty()) return c;
  fs::path dir = source_dir(k);
  auto lock = util::FileLock::acquire(cache_root() / "locks" / ("source-" + k.line + ".lock"), 1800s);
  if (!lock) return unexpected(lock.error());
  if (auto c = cached_source(k); !c.empty()) return c;
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  for (const auto& e : fs::directory_iterator(dir.parent_path(), ec))
    if (e.path().filename().string().starts_with(".partial-" + k.line + "-")) fs::remove_all(e.path(), ec);
  fs::remove_all(dir, ec);
  fs::path partial = dir.parent_path() / fmt::format(".partial-{}-{}", k.line, getpid());
  fs::create_directories(partial, ec);
  struct Cleanup {
    fs::path dir;
    bool armed = true;
    ~Cleanup() {
      std::error_code e;
      if (armed) fs::remove_all(dir, e);
    }
  } cleanup{partial};
  // A tarball the user installed (linux-source-X) saves the download; otherwise the archive's.
  fs::path tarball = source_tarball(k);
  if (!fs::exists(tarball, ec)) {
    auto t = download_source(k, partial, progress);
    if (!t) return unexpected(t.error());
    tarball = *t;
  }
  if (progress) progress(fmt::format("decompressing {} (once; ~10-20 s)", tarball.filename().string()));
  util::RunRequest req;
  req.argv = {"tar", "-xf", tarball.string(), "-C", partial.string()};
  req.timeout = 900s;
  req.stderr_mode = util::Stderr::merge;
  auto r = util::run(req);
  if (!r) return unexpected(r.error());
  fs::remove_all(partial / "pkg", ec);
  if (!r->ok()) {
    if (r->interrupted) return unexpected(ErrorKind::interrupted, "interrupted");
    std::string why(util::trim(util::tail_capped(r->out, 300)));
    if (why.find("No space left") != std::string::npos)
      return unexpected(ErrorKind::io, fmt::format("disk full while extracting {} into {}", tarball.string(), dir.string()));
    return unexpected(ErrorKind::io, fmt::format("{} is corrupt or truncated ({})", tarball.filename().string(), why));
  }
  if (!fs::exists(partial / ("linux-source-" + k.line) / "Makefile"))
    return unexpected(ErrorKind::parse, fmt::format("{} does not contain linux-source-{}/Makefile", tarball.string(), k.line));
  nlohmann::json stamp = {{"schema_version", 1},
                          {"tarball", tarball.filename().string()},
                          {"line", k.line},
                          {"extracted_at", static_cast<long long>(std::time(nullptr))}};
  if (auto w = util::write_file_atomic(partial / "complete.json", stamp.dump(2, ' ', false, util::json_bytes) + "\n"); !w)
    return unexpected(w.error());
  fs::rename(partial, dir, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot move {} into place: {}", partial.string(), ec.message()));
  cleanup.armed = false;
  return cached_source(k);
}

} // namespace autodriver::kernel
