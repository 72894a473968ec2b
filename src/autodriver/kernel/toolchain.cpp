#include "autodriver/kernel/toolchain.hpp"

#include "autodriver/kernel/archive.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <ctime>
#include <regex>
#include <set>
#include <unistd.h>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using util::ErrorKind;
using util::unexpected;

std::string compiler_package(std::string_view text) {
  static const std::regex k_re(R"(^(?:[a-z0-9_]+-linux-gnu-)?(gcc-\d+)\b)");
  std::string s(util::trim(text));
  std::smatch m;
  return std::regex_search(s, m, k_re) ? m[1].str() : std::string();
}

std::string config_cc_version_text(const fs::path& build_dir) {
  auto text = util::read_file(build_dir / ".config");
  if (!text) return {};
  for (auto line : util::split_lines(*text)) {
    if (!line.starts_with("CONFIG_CC_VERSION_TEXT=")) continue;
    auto v = util::trim(line.substr(23));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return std::string(v);
  }
  return {};
}

static fs::path toolchain_dir(std::string_view suite, std::string_view compiler) {
  return cache_root() / "toolchains" / fmt::format("{}-{}", suite, compiler);
}

fs::path toolchain_root(std::string_view suite, std::string_view compiler) { return toolchain_dir(suite, compiler) / "root"; }

fs::path cached_toolchain(std::string_view suite, std::string_view compiler) {
  fs::path dir = toolchain_dir(suite, compiler);
  return fs::exists(dir / "complete.json") ? dir / "root" : fs::path();
}

// Makes <dir>/root once with mmdebstrap: `packages` of `suite`, `what` naming it in messages.
static util::Expected<fs::path> ensure_root(const fs::path& dir, std::string_view suite, const std::string& packages,
                                            const std::string& what, const nlohmann::json& extra_stamp,
                                            const ProgressFn& progress) {
  auto complete = [&] { return fs::exists(dir / "complete.json") ? dir / "root" : fs::path(); };
  if (auto c = complete(); !c.empty()) return c;
  auto lock = util::FileLock::acquire(cache_root() / "locks" / fmt::format("toolchain-{}.lock", dir.filename().string()), 1800s);
  if (!lock) return unexpected(lock.error());
  if (auto c = complete(); !c.empty()) return c;
  auto mmdebstrap = util::find_program("mmdebstrap");
  if (mmdebstrap.empty())
    return unexpected(ErrorKind::not_found, "mmdebstrap is not installed (apt-get install mmdebstrap): it makes the "
                                            "toolchain root each Debian kernel is built in");
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  std::string prefix = fmt::format(".partial-{}-", dir.filename().string());
  for (const auto& e : fs::directory_iterator(dir.parent_path(), ec))
    if (e.path().filename().string().starts_with(prefix)) fs::remove_all(e.path(), ec);
  fs::remove_all(dir, ec);
  fs::path partial = dir.parent_path() / fmt::format("{}{}", prefix, getpid());
  fs::create_directories(partial, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", partial.string(), ec.message()));
  auto cleanup = [&] { fs::remove_all(partial, ec); };

  bool root = geteuid() == 0;
  std::string source = fmt::format("deb {} {} main", Archive::mirror(), suite);
  // As root a directory directly; otherwise unshare mode into a tarball that this user unpacks, so
  // that every file of the root is this user's (readable, and removable later without namespaces).
  fs::path target = root ? partial / "root" : partial / "root.tar";
  util::RunRequest req;
  req.argv = {mmdebstrap.string(),
              "--variant=minbase",
              root ? "--mode=root" : "--mode=unshare",
              "--aptopt=Acquire::Check-Valid-Until \"false\"",
              "--include=" + packages,
              std::string(suite),
              target.string(),
              source};
  req.timeout = 1800s;
  req.stderr_mode = util::Stderr::merge;
  req.env_set = {{"LC_ALL", "C"}};
  if (progress) progress(fmt::format("making {} (mmdebstrap, once; about a minute)", what));
  auto r = util::run(req);
  if (!r) {
    cleanup();
    return unexpected(r.error());
  }
  if (!r->ok()) {
    cleanup();
    if (r->interrupted) return unexpected(ErrorKind::interrupted, "interrupted");
    std::string why(util::trim(util::tail_capped(r->out, 600)));
    if (!root && (why.find("subuid") != std::string::npos || why.find("newuidmap") != std::string::npos ||
                  why.find("unshare") != std::string::npos))
      return unexpected(ErrorKind::config,
                        fmt::format("mmdebstrap cannot make {} as this user: it needs user namespaces "
                                    "and a subordinate id range (as root: `usermod --add-subuids 100000-165535 "
                                    "--add-subgids 100000-165535 $USER` and `apt-get install uidmap`), or run "
                                    "`autodriver kernel fetch` once as root ({})",
                                    what, why));
    if (why.find("No space left") != std::string::npos)
      return unexpected(ErrorKind::io, fmt::format("disk full while making {} in {}", what, partial.string()));
    // apt's own words when a package does not exist in the suite.
    if (why.find("Unable to locate package") != std::string::npos ||
        why.find("has no installation candidate") != std::string::npos)
      return unexpected(ErrorKind::not_found, fmt::format("making {}: a package is not in Debian's {}: {}", what, suite, why));
    return unexpected(ErrorKind::network, fmt::format("mmdebstrap of {} failed ({}): {}", what, r->status_text(), why));
  }
  if (!root) {
    fs::create_directories(partial / "root", ec);
    util::RunRequest tar;
    tar.argv = {"tar", "-xf", target.string(), "-C", (partial / "root").string(), "--no-same-owner", "--exclude=./dev/*"};
    tar.timeout = 600s;
    tar.stderr_mode = util::Stderr::merge;
    auto t = util::run(tar);
    if (!t || !t->ok()) {
      cleanup();
      return unexpected(ErrorKind::io,
                        fmt::format("cannot unpack {}: {}", what, t ? util::tail_capped(t->out, 300) : t.error().message));
    }
    fs::remove(target, ec);
  }
  nlohmann::json stamp = {{"schema_version", 1},
                          {"suite", suite},
                          {"packages", packages},
                          {"mirror", Archive::mirror()},
                          {"made_at", static_cast<long long>(std::time(nullptr))}};
  stamp.update(extra_stamp);
  if (auto w = util::write_file_atomic(partial / "complete.json", stamp.dump(2, ' ', false, util::json_bytes) + "\n"); !w) {
    cleanup();
    return unexpected(w.error());
  }
  fs::rename(partial, dir, ec);
  if (ec) {
    cleanup();
    return unexpected(ErrorKind::io, fmt::format("cannot move {} into place: {}", partial.string(), ec.message()));
  }
  return dir / "root";
}

static std::string base_packages(std::string_view compiler) {
  return fmt::format("{},make,libc6-dev,bc,flex,bison,libelf-dev,kmod,sparse,dwarves", compiler);
}

util::Expected<fs::path> ensure_toolchain(std::string_view suite, std::string_view compiler, const ProgressFn& progress) {
  if (compiler.empty()) return unexpected(ErrorKind::config, "the kernel's configuration names no gcc version");
  return ensure_root(toolchain_dir(suite, compiler), suite, base_packages(compiler),
                     fmt::format("the {} toolchain root for {} kernels", compiler, suite), {{"compiler", compiler}}, progress);
}

util::Expected<std::vector<std::string>> build_deps_of(std::string_view text) {
  // Debian policy 5.6.1: at least two characters, lower case, digits, '+', '-', '.', starting alphanumeric.
  auto is_name = [](std::string_view n) {
    if (n.size() < 2 || !(std::islower(static_cast<unsigned char>(n[0])) || std::isdigit(static_cast<unsigned char>(n[0]))))
      return false;
    for (char c : n)
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' ||
            c == '.'))
        return false;
    return true;
  };
  std::set<std::string> names;
  std::string t(text);
  for (char& c : t)
    if (c == ',') c = ' ';
  for (const auto& name : util::split_words(t)) {
    if (!is_name(name))
      return unexpected(ErrorKind::config, fmt::format("'{}' is not a Debian package name (lower-case letters, digits, "
                                                       "'+', '-', '.'; comma-separated)",
                                                       name));
    names.insert(name);
  }
  if (names.size() > 64) return unexpected(ErrorKind::config, "more than 64 build dependencies");
  return std::vector<std::string>(names.begin(), names.end());
}

util::Expected<fs::path> ensure_toolchain_with(std::string_view suite, std::string_view compiler,
                                               const std::vector<std::string>& build_deps, const ProgressFn& progress) {
  std::string extra;
  for (const auto& p : build_deps) extra += (extra.empty() ? "" : ",") + p;
  auto names = build_deps_of(extra); // sorted and deduplicated: one root per set, whatever the order given
  if (!names) return unexpected(names.error());
  if (names->empty()) return ensure_toolchain(suite, compiler, progress);
  if (compiler.empty()) return unexpected(ErrorKind::config, "the kernel's configuration names no gcc version");
  extra.clear();
  for (const auto& p : *names) extra += (extra.empty() ? "" : ",") + p;
  fs::path dir = cache_root() / "toolchains" / fmt::format("{}-{}+{:016x}", suite, compiler, util::fnv1a_64(extra));
  return ensure_root(dir, suite, base_packages(compiler) + "," + extra,
                     fmt::format("the {} toolchain root for {} kernels with {}", compiler, suite, extra),
                     {{"compiler", compiler}, {"build_deps", *names}}, progress);
}

} // namespace autodriver::kernel
