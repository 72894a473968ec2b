#include "autodriver/util/sandbox.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <unistd.h>

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

constexpr const char* k_standard_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Where `inside` (an absolute sandbox path) lands in `root`, its symlinks followed inside the root
// (`/lib/modules` is `/usr/lib/modules` in a merged-/usr root). Empty when a loop never ends.
fs::path resolve_in_root(const fs::path& root, const fs::path& inside) {
  fs::path cur = "/";
  std::vector<fs::path> rest(inside.begin(), inside.end());
  std::error_code ec;
  for (std::size_t i = 0, hops = 0; i < rest.size(); ++i) {
    const fs::path& part = rest[i];
    if (part == "/" || part.empty() || part == ".") continue;
    fs::path next = (cur / part).lexically_normal();
    fs::path host = root / next.relative_path();
    if (fs::is_symlink(host, ec)) {
      if (++hops > 40) return {};
      fs::path target = fs::read_symlink(host, ec);
      fs::path joined = target.is_absolute() ? target : cur / target;
      std::vector<fs::path> more(joined.begin(), joined.end());
      more.insert(more.end(), rest.begin() + static_cast<long>(i) + 1, rest.end());
      rest = std::move(more);
      cur = "/";
      i = static_cast<std::size_t>(-1);
      continue;
    }
    cur = next;
  }
  return cur;
}

// The unprivileged user may write the folders the sandbox makes writable, and only those. Its
// files are writable by their owner, as they are to root, whom DKMS builds as (a tree unpacked
// with read-only files still builds).
Expected<void> give_tree(const fs::path& top, const SandboxUser& user) {
  std::error_code ec;
  auto give = [&](const fs::path& p) -> Expected<void> {
    if (::lchown(p.c_str(), user.uid, user.gid) != 0)
      return unexpected(ErrorKind::io,
                        fmt::format("cannot give {} to the sandbox's uid {}: {}", p.string(), user.uid, std::strerror(errno)));
    auto st = fs::symlink_status(p, ec);
    if (st.type() == fs::file_type::directory) fs::permissions(p, fs::perms::owner_all, fs::perm_options::add, ec);
    else if (st.type() == fs::file_type::regular)
      fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add, ec);
    return {};
  };
  if (auto g = give(top); !g) return g;
  for (auto it = fs::recursive_directory_iterator(top, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (auto g = give(it->path()); !g) return g;
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot read {}: {}", top.string(), ec.message()));
  return {};
}

// As root, the command leaves root for the unprivileged uid unless the spec keeps it (QEMU).
bool drops_uid(const SandboxSpec& spec, const SandboxUser& user) {
  return user.caller_is_root && spec.root_runs == SandboxSpec::RootRuns::unprivileged;
}

fs::path setpriv_in(const fs::path& root) {
  for (const char* p : {"usr/bin/setpriv", "bin/setpriv"})
    if (::access((root / p).c_str(), X_OK) == 0) return fs::path("/") / p;
  return {};
}

} // namespace

SandboxUser sandbox_user() {
  SandboxUser u;
  u.caller_is_root = ::geteuid() == 0;
  return u;
}

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
    // The sandbox every build gets, on the host's root: namespaces, and as root the drop to an
    // unprivileged uid.
    RunRequest req;
    req.argv = sandbox_argv({}, {"true"}, {});
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

static void add_root(std::vector<std::string>& out, const fs::path& root) {
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
}

// The folders bubblewrap makes on the way to a bind's destination get mode 0755: as root it makes
// them 0700, and the unprivileged uid could not reach a kernel cached in root's home or a tree in
// a scratch folder.
static void add_parents(std::vector<std::string>& out, const std::vector<fs::path>& dests) {
  std::set<std::string> parents;
  for (const auto& d : dests)
    for (fs::path a = d.parent_path(); a.has_relative_path(); a = a.parent_path()) parents.insert(a.string());
  auto covered = [&](const std::string& a) {
    fs::path rel = fs::path(a).relative_path();
    std::string first = rel.begin() == rel.end() ? std::string() : rel.begin()->string();
    if (system_dirs().count(first) || first == "proc" || first == "dev") return true;
    if (a == "/tmp" || a == "/var" || a == "/var/tmp") return true; // made above, 1777
    for (const auto& d : dests)
      if (a == d.string() || a.starts_with(d.string() + "/")) return true;
    return false;
  };
  for (const auto& a : parents) // sorted: a parent before its children
    if (!covered(a)) out.insert(out.end(), {"--perms", "0755", "--dir", a});
}

static void add_binds(std::vector<std::string>& out, const SandboxSpec& spec, const fs::path& root) {
  std::vector<fs::path> dests;
  for (const auto& p : spec.read_only) dests.push_back(absolute_of(p));
  for (const auto& p : spec.writable) dests.push_back(absolute_of(p));
  for (const auto& m : spec.moved) dests.push_back(m.second);
  for (const auto& m : spec.read_only_at) dests.push_back(m.second);
  add_parents(out, dests);
  for (const auto& p : spec.read_only) {
    auto a = absolute_of(p).string();
    out.insert(out.end(), {"--ro-bind", a, a});
  }
  for (const auto& p : spec.writable) {
    auto a = absolute_of(p).string();
    out.insert(out.end(), {"--bind", a, a});
  }
  for (const auto& [host, inside] : spec.moved) out.insert(out.end(), {"--bind", absolute_of(host).string(), inside.string()});
  std::error_code ec;
  for (const auto& [host, inside] : spec.read_only_at) {
    const fs::path rel = inside.relative_path();
    fs::path at = inside;
    if (rel.begin() != rel.end() && system_dirs().count(rel.begin()->string())) {
      at = resolve_in_root(root, inside);
      if (at.empty() || !fs::is_directory(root / at.relative_path(), ec)) continue;
    }
    out.insert(out.end(), {"--ro-bind", absolute_of(host).string(), at.string()});
  }
}

std::vector<std::string> sandbox_argv(const SandboxSpec& spec, const std::vector<std::string>& argv, const fs::path& cwd,
                                      const SandboxUser& user) {
  std::vector<std::string> out = {find_program("bwrap").string()};
  if (out[0].empty()) out[0] = "bwrap";
  fs::path root = spec.root.empty() ? fs::path("/") : spec.root;
  add_root(out, root);
  out.insert(out.end(),
             {"--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--dir", "/var/tmp"});
  add_binds(out, spec, root);
  for (const auto& d : spec.devices) out.insert(out.end(), {"--dev-bind", d.string(), d.string()});
  const bool drop_uid = drops_uid(spec, user);
  if (user.caller_is_root && !drop_uid) {
    out.insert(out.end(),
               {"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"});
  } else if (user.caller_is_root) {
    // No user namespace: the mounts are made as root, then setpriv (below) leaves root for an
    // unprivileged uid with every capability gone; until then only the caps setpriv needs.
    out.insert(out.end(),
               {"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL",
                "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"});
  } else {
    out.insert(out.end(), {"--unshare-all", "--cap-drop", "ALL"});
  }
  out.insert(out.end(), {"--die-with-parent", "--new-session", "--clearenv"});
  std::string path;
  for (const auto& p : spec.path_first) path += p.string() + ":";
  path += k_standard_path;
  out.insert(out.end(), {"--setenv", "PATH", path, "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"});
  bool lang = false;
  for (const auto& [k, v] : spec.env) {
    if (k == "PATH" || k == "HOME" || k == "TMPDIR") continue;
    lang = lang || k == "LANG";
    out.insert(out.end(), {"--setenv", k, v});
  }
  if (!lang) out.insert(out.end(), {"--setenv", "LANG", "C"});
  fs::path dir;
  if (!cwd.empty()) {
    dir = absolute_of(cwd);
    for (const auto& [host, inside] : spec.moved) {
      fs::path rel = dir.lexically_relative(absolute_of(host));
      if (!rel.empty() && *rel.begin() != "..") {
        dir = (inside / rel).lexically_normal();
        break;
      }
    }
  }
  // No trailing '/' ("tree/" + an empty subdir): Makefiles pass `M=$(PWD)` on, and gcc would
  // print "/tree//x.c".
  if (std::string d = dir.lexically_normal().string(); d.size() > 1 && d.back() == '/') dir = d.substr(0, d.size() - 1);
  // As root the working directory is entered by the unprivileged uid that owns it (`env -C`):
  // bubblewrap's own chdir happens as root without capabilities, which may not enter it.
  // PWD names the working directory, as a shell that cd'd there exports it: Makefiles build with
  // `M=$(PWD)`.
  if (!dir.empty() && !drop_uid) out.insert(out.end(), {"--chdir", dir.string(), "--setenv", "PWD", dir.string()});
  out.push_back("--");
  if (drop_uid) {
    fs::path setpriv = setpriv_in(root);
    out.insert(out.end(),
               {setpriv.empty() ? std::string("setpriv") : setpriv.string(), fmt::format("--reuid={}", user.uid),
                fmt::format("--regid={}", user.gid), "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"});
    if (!dir.empty()) out.insert(out.end(), {"/usr/bin/env", "-C", dir.string(), "--", "PWD=" + dir.string()});
  }
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Expected<void> sandbox_request(RunRequest& req, const SandboxSpec& spec) {
  if (auto a = sandbox_available(); !a) return a;
  const SandboxUser user = sandbox_user();
  fs::path root = spec.root.empty() ? fs::path("/") : spec.root;
  const bool drop_uid = drops_uid(spec, user);
  if (drop_uid && setpriv_in(root).empty())
    return unexpected(ErrorKind::config,
                      fmt::format("{} has no setpriv (util-linux): as root, autodriver runs every build as an unprivileged "
                                  "user with it; install util-linux there",
                                  root.string()));
  if (drop_uid) {
    for (const auto& p : spec.writable)
      if (auto g = give_tree(p, user); !g) return g;
    for (const auto& m : spec.moved)
      if (auto g = give_tree(m.first, user); !g) return g;
  }
  SandboxSpec s = spec;
  for (const auto& [k, v] : req.env_set) s.env.emplace_back(k, v);
  req.argv = sandbox_argv(s, req.argv, req.cwd, user);
  return {};
}

} // namespace autodriver::util
