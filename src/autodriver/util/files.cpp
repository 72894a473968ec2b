#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace autodriver::util {

Expected<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unexpected(ErrorKind::io, fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Expected<void> write_file(const fs::path& path, std::string_view content) {
  // POSIX calls: the error says why (a full disk is ENOSPC, not a guess).
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return unexpected(ErrorKind::io, fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      ::close(fd);
      return unexpected(ErrorKind::io, fmt::format("cannot write {}: {}", path.string(), std::strerror(e)));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return unexpected(ErrorKind::io, fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  return {};
}

Expected<void> write_file_atomic(const fs::path& path, std::string_view content) {
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}", getpid());
  std::error_code ec;
  if (auto r = write_file(tmp, content); !r) {
    fs::remove(tmp, ec); // a full disk leaves a partial temporary behind
    return r;
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return unexpected(ErrorKind::io, fmt::format("cannot rename into {}: {}", path.string(), ec.message()));
  }
  return {};
}

static bool is_build_product(const fs::path& p) {
  std::string name = p.filename().string();
  std::string ext = p.extension().string();
  if (ext == ".o" || ext == ".ko" || ext == ".mod" || ext == ".order" || ext == ".symvers") return true;
  if (name.size() > 4 && name.ends_with(".mod.c")) return true;
  if (name.starts_with(".") && name.ends_with(".cmd")) return true;
  // gcc's dependency files of an interrupted compile (".x.o.d") and kbuild's temporaries.
  if (name.starts_with(".") && (name.ends_with(".d") || name.starts_with(".tmp_") || name == ".cache.mk")) return true;
  if (ext == ".dwo") return true;
  if (name == ".tmp_versions" || name == ".git") return true;
  return false;
}

Expected<void> copy_file(const fs::path& from, const fs::path& to) {
  // Not std::filesystem::copy_file: libstdc++ reports a destination that fills up mid-copy as
  // "Input/output error"; a plain read/write loop keeps the real errno (ENOSPC, EDQUOT).
  auto fail = [&](const char* what, int err) {
    return unexpected(ErrorKind::io,
                      fmt::format("cannot copy {} to {}: {}: {}", from.string(), to.string(), what, std::strerror(err)));
  };
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return fail("open", errno);
  struct stat st {};
  if (::fstat(in, &st) != 0) {
    int err = errno;
    ::close(in);
    return fail("stat", err);
  }
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
  if (out < 0) {
    int err = errno;
    ::close(in);
    return fail("create", err);
  }
  std::vector<char> buf(1 << 17);
  int err = 0;
  const char* what = "";
  for (;;) {
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno, what = "read";
      break;
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        err = errno, what = "write";
        break;
      }
      done += w;
    }
    if (err) break;
  }
  ::close(in);
  if (!err) {
    // The source's modification time (never one in the future): a copy of a built tree keeps
    // its objects newer than their sources, so make rebuilds only what changes afterwards.
    struct timespec now {};
    clock_gettime(CLOCK_REALTIME, &now);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    for (auto& t : times)
      if (t.tv_sec > now.tv_sec || (t.tv_sec == now.tv_sec && t.tv_nsec > now.tv_nsec)) t = now;
    if (::futimens(out, times) != 0) err = errno, what = "set the time of";
  }
  if (::close(out) != 0 && !err) err = errno, what = "write";
  if (err) {
    ::unlink(to.c_str());
    return fail(what, err);
  }
  return {};
}

Expected<void> copy_tree(const fs::path& from, const fs::path& to, SkipBuildProducts skip) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", to.string(), ec.message()));
  for (auto it = fs::recursive_directory_iterator(from, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& src = it->path();
    if (skip == SkipBuildProducts::yes && is_build_product(src)) {
      if (entry_is_dir(*it)) it.disable_recursion_pending();
      continue;
    }
    fs::path dst = to / src.lexically_relative(from); // not fs::relative: it follows symlinks
    if (entry_is_link(*it)) {
      // Symlinks could point outside the tree; copy them as links, never follow.
      fs::copy_symlink(src, dst, ec);
      ec.clear();
    } else if (entry_is_dir(*it)) {
      fs::create_directories(dst, ec);
    } else if (entry_is_file(*it)) {
      if (auto r = util::copy_file(src, dst); !r) return r;
    }
    if (ec) return unexpected(ErrorKind::io, fmt::format("cannot copy {}: {}", src.string(), ec.message()));
  }
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot walk {}: {}", from.string(), ec.message()));
  return {};
}

Expected<void> stage_tree(const fs::path& sources, const fs::path& built, const fs::path& dst) {
  std::error_code ec;
  if (built.empty() || !fs::is_directory(built, ec)) return copy_tree(sources, dst, SkipBuildProducts::yes);
  if (auto c = copy_tree(built, dst, SkipBuildProducts::no); !c) return c;
  std::set<fs::path> wanted;
  for (auto it = fs::recursive_directory_iterator(sources, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& src = it->path();
    if (is_build_product(src)) {
      if (entry_is_dir(*it)) it.disable_recursion_pending();
      continue;
    }
    fs::path rel = src.lexically_relative(sources);
    fs::path to = dst / rel;
    wanted.insert(rel);
    std::error_code e;
    if (entry_is_link(*it)) {
      if (fs::is_symlink(fs::symlink_status(to, e)) && fs::read_symlink(to, e) == fs::read_symlink(src, e)) continue;
      fs::remove_all(to, e);
      fs::copy_symlink(src, to, e);
    } else if (entry_is_dir(*it)) {
      if (fs::is_symlink(fs::symlink_status(to, e)) || (fs::exists(fs::symlink_status(to, e)) && !fs::is_directory(to, e)))
        fs::remove(to, e);
      fs::create_directories(to, e);
    } else if (entry_is_file(*it)) {
      auto text = read_file(src);
      if (!text) return unexpected(text.error());
      auto st = fs::symlink_status(to, e);
      if (fs::is_regular_file(st))
        if (auto built_text = read_file(to); built_text && *built_text == *text) continue;
      if (fs::exists(st)) fs::remove_all(to, e);
      e.clear();
      // Written now, so it is newer than every object built from the old content.
      if (auto w = write_file(to, *text); !w) return w;
      fs::permissions(to, fs::status(src, e).permissions(), e);
    }
    if (e) return unexpected(ErrorKind::io, fmt::format("cannot stage {}: {}", src.string(), e.message()));
  }
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot walk {}: {}", sources.string(), ec.message()));
  // What the built tree has and the sources no longer do (not its build products) goes.
  std::vector<fs::path> doomed;
  for (auto it = fs::recursive_directory_iterator(dst, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (is_build_product(it->path())) {
      if (entry_is_dir(*it)) it.disable_recursion_pending();
      continue;
    }
    fs::path rel = it->path().lexically_relative(dst);
    if (!wanted.count(rel)) {
      doomed.push_back(it->path());
      if (entry_is_dir(*it)) it.disable_recursion_pending();
    }
  }
  for (const auto& p : doomed) fs::remove_all(p, ec);
  return {};
}

namespace {

constexpr const char* k_owner_file = ".autodriver-owner";

/// "<pid> <start time in clock ticks since boot>" of a process, empty when it is gone: a pid
/// alone can be reused by an unrelated process.
std::string process_identity(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!in || !std::getline(in, stat)) return {};
  // Field 2 (comm) may hold spaces and parentheses: fields resume after the last ')'.
  auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int k = 3; k <= 22 && rest >> field; ++k)
    if (k == 22) return fmt::format("{} {}", pid, field);
  return {};
}

} // namespace

std::size_t remove_orphaned_scratch(const fs::path& root) {
  std::size_t removed = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!entry_is_dir(*it)) continue;
    auto stamp = read_file(it->path() / k_owner_file);
    if (!stamp) continue; // not ours to judge (an older version's folder, or one being created)
    std::istringstream in(*stamp);
    long pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    std::string owner = std::string(trim(*stamp));
    if (process_identity(static_cast<pid_t>(pid)) == owner) continue; // its run is still going
    std::error_code rm;
    // Read-only folders inside (a copied tree) must not stop the removal.
    for (auto f = fs::recursive_directory_iterator(it->path(), rm); !rm && f != fs::recursive_directory_iterator();
         f.increment(rm))
      if (f->is_directory(rm)) fs::permissions(f->path(), fs::perms::owner_all, fs::perm_options::add, rm);
    rm.clear();
    if (fs::remove_all(it->path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

Expected<TempDir> TempDir::create(const fs::path& parent, std::string_view prefix) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  // Scratch folders of runs that were killed (-9, a power cut) are removed by the next run.
  static std::once_flag swept;
  if (parent == scratch_root()) std::call_once(swept, [&] { remove_orphaned_scratch(parent); });
  std::string templ = (parent / (std::string(prefix) + "XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    return unexpected(ErrorKind::io,
                      fmt::format("cannot create a directory under {}: {}", parent.string(), std::strerror(errno)));
  TempDir dir{fs::path(buf.data())};
  if (parent == scratch_root()) {
    if (auto w = write_file(dir.path() / k_owner_file, process_identity(getpid()) + "\n"); !w) return unexpected(w.error());
  }
  return dir;
}

TempDir::TempDir(TempDir&& other) noexcept : m_path(std::move(other.m_path)), m_keep(other.m_keep) { other.m_path.clear(); }

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this == &other) return *this;
  if (!m_keep && !m_path.empty()) {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  m_path = std::move(other.m_path);
  m_keep = other.m_keep;
  other.m_path.clear();
  return *this;
}

TempDir::~TempDir() {
  if (m_keep || m_path.empty()) return;
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

fs::path scratch_root() {
  const char* t = std::getenv("TMPDIR");
  // One folder per user: another user's scratch folder is neither writable nor theirs to see.
  return fs::path(t && *t ? t : "/tmp") / fmt::format("autodriver-{}", getuid());
}

bool entry_is_dir(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_directory(ec);
}

bool entry_is_file(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_regular_file(ec);
}

bool entry_is_link(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_symlink(ec);
}

Expected<void> refuse_symlink_loop(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!entry_is_link(*it)) continue;
    std::error_code e;
    (void)fs::status(it->path(), e);
    if (e == std::errc::too_many_symbolic_link_levels)
      return unexpected(ErrorKind::config,
                        fmt::format("{}: a symbolic link that loops: a driver tree must not hold one", it->path().string()));
  }
  return {};
}

std::vector<fs::path> list_files(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (entry_is_file(*it)) out.push_back(it->path().lexically_relative(root));
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace autodriver::util
