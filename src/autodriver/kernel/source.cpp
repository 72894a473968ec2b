#include "autodriver/kernel/source.hpp"

#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <unistd.h>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using util::ErrorKind;
using util::unexpected;

fs::path source_tarball(const core::Kernel& k) {
  return fs::path("/usr/src") / ("linux-source-" + k.line + ".tar.xz");
}

static fs::path source_dir(const core::Kernel& k) { return cache_root() / "source" / k.line; }

fs::path cached_source(const core::Kernel& k) {
  fs::path dir = source_dir(k);
  if (!fs::exists(dir / "complete.json")) return {};
  return dir / ("linux-source-" + k.line);
}

util::Expected<fs::path> ensure_source(const core::Kernel& k, const ProgressFn& progress) {
  if (auto c = cached_source(k); !c.empty()) return c;
  fs::path tarball = source_tarball(k);
  if (!fs::exists(tarball)) {
    std::string pkg = "linux-source-" + k.line;
    if (geteuid() != 0)
      return unexpected(ErrorKind::not_found, fmt::format("{} is missing: run `apt-get install {}` as root", tarball.string(), pkg));
    progress(fmt::format("installing {} (apt-get)", pkg));
    util::RunRequest req;
    req.argv = {"apt-get", "install", "-y", "-q", "--no-install-recommends", pkg};
    req.timeout = 900s;
    req.stderr_mode = util::Stderr::merge;
    req.env_set = {{"DEBIAN_FRONTEND", "noninteractive"}};
    auto r = util::run(req);
    if (!r || !r->ok() || !fs::exists(tarball))
      return unexpected(ErrorKind::network, fmt::format("cannot install {} (is the Debian mirror reachable?)", pkg));
  }
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
  progress(fmt::format("decompressing {} (once; ~10 s)", tarball.filename().string()));
  util::RunRequest req;
  req.argv = {"tar", "-xf", tarball.string(), "-C", partial.string()};
  req.timeout = 900s;
  req.stderr_mode = util::Stderr::merge;
  auto r = util::run(req);
  if (!r) return unexpected(r.error());
  if (!r->ok()) {
    fs::remove_all(partial, ec);
    std::string why(util::trim(util::tail_capped(r->out, 300)));
    if (why.find("No space left") != std::string::npos)
      return unexpected(ErrorKind::io, fmt::format("disk full while extracting {} into {}", tarball.string(), dir.string()));
    return unexpected(ErrorKind::io, fmt::format("{} is corrupt or truncated ({}): reinstall with `apt-get install "
                                                 "--reinstall linux-source-{}`",
                                                 tarball.string(), why, k.line));
  }
  if (!fs::exists(partial / ("linux-source-" + k.line) / "Makefile")) {
    fs::remove_all(partial, ec);
    return unexpected(ErrorKind::parse, fmt::format("{} does not contain linux-source-{}/Makefile", tarball.string(), k.line));
  }
  nlohmann::json stamp = {{"schema_version", 1}, {"tarball", tarball.string()},
                          {"extracted_at", static_cast<long long>(std::time(nullptr))}};
  if (auto w = util::write_file_atomic(partial / "complete.json", stamp.dump(2) + "\n"); !w) return unexpected(w.error());
  fs::rename(partial, dir, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot move {} into place: {}", partial.string(), ec.message()));
  return cached_source(k);
}

} // namespace autodriver::kernel
