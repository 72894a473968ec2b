#include "autodriver/util/sandbox.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <mutex>
#include <set>

namespace autodriver::util {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Top-level folders of a root that hold programs and their configuration; the rest (home, root,
// var, tmp, run, ...) stays out so nothing of the user's is visible and bind targets can be made.
const std::set<std::string>& system_dirs() {
  static const std::set<std::string> k_dirs = {"usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
  return k_dirs;
}

fs::path absolute_of(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? fs::absolute(p).lexically_normal() : c;
}

} // namespace

Expected<void> sandbox_available() {
  static std::once_flag once;
  static Expected<void> result;
  std::call_once(once, [] {
    auto bwrap = find_program("bwrap");
    if (bwrap.empty()) {
      result = unexpected(ErrorKind::not_found,
                          "bubblewrap is not installed (apt-get install bubblewrap): every build runs in its sandbox");
      return;
    }
    RunRequest req;
    req.argv = {bwrap.string(), "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"};
    req.timeout = 20s;
    req.stderr_mode = Stderr::merge;
    auto r = run(req);
    if (!r) {
      result = unexpected(r.error());
      return;
    }
    if (!r->ok())
      result = unexpected(ErrorKind::config,
                          fmt::format("bubblewrap cannot make a sandbox on this machine ({}): user namespaces are "
                                      "disabled or restricted; enable them (as root: `sysctl -w "
                                      "kernel.unprivileged_userns_clone=1` and `sysctl -w user.max_user_namespaces=15000`, "
                                      "or an AppArmor profile allowing bwrap) and retry",
                                      std::string(trim(tail_capped(r->out, 300)))));
  });
  return result;
}

std::vector<std::string> sandbox_argv(const SandboxSpec& spec, const std::vector<std::string>& argv, const fs::path& cwd) {
  std::vector<std::string> out = {find_program("bwrap").string()};
  if (out[0].empty()) out[0] = "bwrap";
  fs::path root = spec.root.empty() ? fs::path("/") : spec.root;
  std::error_code ec;
  std::vector<fs::directory_entry> entries;
  for (const auto& e : fs::directory_iterator(root, ec)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
  for (const auto& e : entries) {
    std::string name = e.path().filename().string();
    if (!system_dirs().count(name)) continue;
    if (e.is_symlink(ec)) {
      out.insert(out.end(), {"--symlink", fs::read_symlink(e.path(), ec).string(), "/" + name});
    } else if (e.is_directory(ec)) {
      out.insert(out.end(), {"--ro-bind", e.path().string(), "/" + name});
    }
  }
  out.insert(out.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/var/tmp"});
  for (const auto& p : spec.read_only) {
    auto a = absolute_of(p).string();
    out.insert(out.end(), {"--ro-bind", a, a});
  }
  for (const auto& p : spec.writable) {
    auto a = absolute_of(p).string();
    out.insert(out.end(), {"--bind", a, a});
  }
  for (const auto& [host, inside] : spec.moved) out.insert(out.end(), {"--bind", absolute_of(host).string(), inside.string()});
  out.insert(out.end(),
             {"--unshare-all", "--die-with-parent", "--new-session", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"});
  if (!cwd.empty()) {
    fs::path dir = absolute_of(cwd);
    for (const auto& [host, inside] : spec.moved) {
      fs::path rel = dir.lexically_relative(absolute_of(host));
      if (!rel.empty() && *rel.begin() != "..") {
        dir = (inside / rel).lexically_normal();
        break;
      }
    }
    out.insert(out.end(), {"--chdir", dir.string()});
  }
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Expected<void> sandbox_request(RunRequest& req, const SandboxSpec& spec) {
  if (auto a = sandbox_available(); !a) return a;
  req.argv = sandbox_argv(spec, req.argv, req.cwd);
  return {};
}

} // namespace autodriver::util
