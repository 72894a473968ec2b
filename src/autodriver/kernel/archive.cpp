#include "autodriver/kernel/archive.hpp"

#include "autodriver/core/kernel.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <set>

namespace autodriver::kernel {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using util::ErrorKind;
using util::unexpected;

// ---- dpkg version ordering -------------------------------------------------------------------

namespace {

int order(char c) {
  if (std::isdigit(static_cast<unsigned char>(c))) return 0;
  if (std::isalpha(static_cast<unsigned char>(c))) return c;
  if (c == '~') return -1;
  if (c) return static_cast<unsigned char>(c) + 256;
  return 0;
}

// dpkg's verrevcmp: non-digit runs compared by order(), digit runs numerically.
int verrevcmp(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  auto at = [](std::string_view s, std::size_t k) { return k < s.size() ? s[k] : '\0'; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() || j < b.size()) {
    int first_diff = 0;
    while ((at(a, i) && !digit(at(a, i))) || (at(b, j) && !digit(at(b, j)))) {
      int ac = order(at(a, i)), bc = order(at(b, j));
      if (ac != bc) return ac - bc;
      ++i, ++j;
    }
    while (at(a, i) == '0') ++i;
    while (at(b, j) == '0') ++j;
    while (digit(at(a, i)) && digit(at(b, j))) {
      if (!first_diff) first_diff = at(a, i) - at(b, j);
      ++i, ++j;
    }
    if (digit(at(a, i))) return 1;
    if (digit(at(b, j))) return -1;
    if (first_diff) return first_diff;
  }
  return 0;
}

struct SplitVersion {
  long epoch = 0;
  std::string_view upstream, revision;
};

SplitVersion split_version(std::string_view v) {
  SplitVersion s;
  if (auto c = v.find(':'); c != std::string_view::npos) {
    s.epoch = std::strtol(std::string(v.substr(0, c)).c_str(), nullptr, 10);
    v.remove_prefix(c + 1);
  }
  if (auto d = v.rfind('-'); d != std::string_view::npos) {
    s.upstream = v.substr(0, d);
    s.revision = v.substr(d + 1);
  } else {
    s.upstream = v;
  }
  return s;
}

} // namespace

int compare_debian_versions(std::string_view a, std::string_view b) {
  auto x = split_version(a), y = split_version(b);
  if (x.epoch != y.epoch) return x.epoch < y.epoch ? -1 : 1;
  if (int c = verrevcmp(x.upstream, y.upstream)) return c < 0 ? -1 : 1;
  int c = verrevcmp(x.revision, y.revision);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

static bool satisfies(std::string_view have, std::string_view op, std::string_view want) {
  if (op.empty()) return true;
  int c = compare_debian_versions(have, want);
  if (op == "=") return c == 0;
  if (op == ">=") return c >= 0;
  if (op == "<=") return c <= 0;
  if (op == ">>" || op == ">") return c > 0;
  if (op == "<<" || op == "<") return c < 0;
  return false;
}

// ---- Packages indexes -------------------------------------------------------------------------

std::vector<PackageEntry> parse_packages(std::string_view text, std::string_view suite,
                                         const std::function<bool(std::string_view)>& keep) {
  std::vector<PackageEntry> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find("\n\n", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view stanza = text.substr(pos, end - pos);
    pos = end + 2;
    while (!stanza.empty() && stanza.front() == '\n') stanza.remove_prefix(1);
    if (!stanza.starts_with("Package: ")) continue;
    auto nl = stanza.find('\n');
    std::string_view name = util::trim(stanza.substr(9, nl == std::string_view::npos ? stanza.size() - 9 : nl - 9));
    if (!keep(name)) continue;
    PackageEntry e;
    e.name = std::string(name);
    e.suite = std::string(suite);
    for (auto line : util::split_lines(stanza)) {
      if (line.starts_with("Version: ")) e.version = std::string(util::trim(line.substr(9)));
      else if (line.starts_with("Depends: ")) e.depends = std::string(util::trim(line.substr(9)));
    }
    if (!e.version.empty()) out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::vector<DependsAtom>> parse_depends(std::string_view field) {
  std::vector<std::vector<DependsAtom>> out;
  static const std::regex k_atom(R"(^\s*([a-z0-9][a-z0-9+.~-]*)(?::[a-z0-9]+)?\s*(?:\(\s*([<>=]+)\s*([^)\s]+)\s*\))?)");
  std::size_t start = 0;
  while (start <= field.size()) {
    std::size_t comma = field.find(',', start);
    std::string_view group = field.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::vector<DependsAtom> alts;
    std::size_t a = 0;
    while (a <= group.size()) {
      std::size_t bar = group.find('|', a);
      std::string alt(group.substr(a, bar == std::string_view::npos ? std::string_view::npos : bar - a));
      std::smatch m;
      if (std::regex_search(alt, m, k_atom)) alts.push_back({m[1].str(), m[2].str(), m[3].str()});
      if (bar == std::string_view::npos) break;
      a = bar + 1;
    }
    if (!alts.empty()) out.push_back(std::move(alts));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string base_suite(std::string_view suite) {
  for (std::string_view suffix : {"-backports", "-security", "-updates", "-proposed-updates"})
    if (suite.ends_with(suffix)) return std::string(suite.substr(0, suite.size() - suffix.size()));
  return std::string(suite);
}

const std::vector<std::string>& archive_suites() {
  // Debian's suites that carry amd64 kernels with linux-source from 5.10 on (../shared/FACTS.md).
  static const std::vector<std::string> k_suites = {"bullseye", "bookworm",         "bookworm-security",
                                                    "trixie",   "trixie-backports", "sid"};
  return k_suites;
}

// ---- the private apt configuration -------------------------------------------------------------

namespace {

std::string env_or(const char* name, std::string fallback) {
  if (const char* v = std::getenv(name); v && *v) return v;
  return fallback;
}

std::string security_mirror() {
  // A mirror of .../debian has its security archive next to it (deb.debian.org, snapshot.debian.org).
  std::string m = Archive::mirror();
  std::string fallback = m.ends_with("/debian") ? m + "-security" : "http://deb.debian.org/debian-security";
  return env_or("AUTODRIVER_SECURITY_MIRROR", fallback);
}

std::string host_codename() {
  auto text = util::read_file("/etc/os-release");
  if (!text) return {};
  for (auto line : util::split_lines(*text))
    if (line.starts_with("VERSION_CODENAME=")) return std::string(util::trim(line.substr(17)));
  return {};
}

fs::path apt_dir() { return cache_root() / "apt"; }

util::Expected<void> write_config(const fs::path& dir) {
  std::error_code ec;
  for (const char* sub : {"lists/partial", "archives/partial", "etc/apt.conf.d", "etc/preferences.d", "state"})
    fs::create_directories(dir / sub, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  if (!fs::exists(dir / "state/status"))
    if (auto w = util::write_file(dir / "state/status", ""); !w) return w;
  std::string keyring = "/usr/share/keyrings/debian-archive-keyring.gpg";
  std::string sources;
  for (const auto& s : archive_suites())
    sources += fmt::format("deb [signed-by={}] {} {} main\n", keyring,
                           s.ends_with("-security") ? security_mirror() : Archive::mirror(), s);
  std::string d = dir.string() + "/";
  std::string conf = fmt::format("// autodriver's private apt configuration: never the system's sources, lists or status.\n"
                                 "Dir \"{0}\";\n"
                                 "Dir::State \"{0}state/\";\n"
                                 "Dir::State::Lists \"{0}lists/\";\n"
                                 "Dir::State::status \"{0}state/status\";\n"
                                 "Dir::Cache \"{0}\";\n"
                                 "Dir::Cache::Archives \"{0}archives/\";\n"
                                 "Dir::Etc \"{0}etc/\";\n"
                                 "Dir::Etc::SourceList \"{0}etc/sources.list\";\n"
                                 "Dir::Etc::SourceParts \"{0}etc/sources.list.d/\";\n"
                                 "Dir::Etc::Parts \"{0}etc/apt.conf.d/\";\n"
                                 "Dir::Etc::Preferences \"{0}etc/preferences\";\n"
                                 "Dir::Etc::PreferencesParts \"{0}etc/preferences.d/\";\n"
                                 "Dir::Log \"{0}log/\";\n"
                                 "Acquire::Check-Valid-Until \"false\";\n"
                                 "Acquire::Languages \"none\";\n"
                                 "Acquire::Retries \"2\";\n"
                                 "APT::Architecture \"amd64\";\n"
                                 "APT::Architectures {{ \"amd64\"; }};\n"
                                 "{1}",
                                 d, geteuid() == 0 ? "APT::Sandbox::User \"root\";\n" : "");
  fs::create_directories(dir / "etc/sources.list.d", ec);
  if (auto w = util::write_file_atomic(dir / "etc/sources.list", sources); !w) return w;
  return util::write_file_atomic(dir / "apt.conf", conf);
}

util::Expected<util::RunResult> run_apt(const fs::path& dir, std::vector<std::string> argv, const fs::path& cwd,
                                        std::chrono::seconds timeout) {
  util::RunRequest req;
  req.argv = std::move(argv);
  req.cwd = cwd;
  req.timeout = timeout;
  req.stderr_mode = util::Stderr::merge;
  req.env_set = {{"APT_CONFIG", (dir / "apt.conf").string()}, {"LC_ALL", "C"}, {"DEBIAN_FRONTEND", "noninteractive"}};
  util::log_debug("run: APT_CONFIG={} {}", (dir / "apt.conf").string(), util::render_argv(req.argv));
  return util::run(req);
}

// The suites whose index apt could not fetch ("W: Failed to fetch http://m/debian/dists/sid/InRelease ...").
std::vector<std::string> failed_suites(const std::string& out) {
  std::vector<std::string> suites;
  static const std::regex k_re(R"(Failed to fetch \S*/dists/([^/\s]+)/)");
  for (std::sregex_iterator it(out.begin(), out.end(), k_re), end; it != end; ++it)
    if (std::find(suites.begin(), suites.end(), (*it)[1].str()) == suites.end()) suites.push_back((*it)[1].str());
  return suites;
}

bool network_failure(const std::string& out) {
  for (const char* s : {"Temporary failure resolving", "Could not resolve", "Failed to fetch", "Unable to connect",
                        "Connection failed", "Could not connect", "Connection timed out", "No route to host"})
    if (out.find(s) != std::string::npos) return true;
  return false;
}

std::string suite_of_list(const std::string& file) {
  // deb.debian.org_debian_dists_trixie-backports_main_binary-amd64_Packages
  auto d = file.find("_dists_");
  if (d == std::string::npos) return {};
  auto start = d + 7;
  auto end = file.find('_', start);
  return end == std::string::npos ? std::string() : file.substr(start, end - start);
}

std::string line_of_release(std::string_view release) {
  auto r = core::release_numbers(release);
  return r && r->count >= 2 ? r->line() : std::string();
}

} // namespace

std::string Archive::mirror() { return env_or("AUTODRIVER_MIRROR", "http://deb.debian.org/debian"); }

Archive Archive::open_offline() {
  Archive a;
  a.m_dir = apt_dir();
  if (fs::exists(a.m_dir / "lists/updated")) (void)a.load_lists();
  return a;
}

util::Expected<Archive> Archive::open(Refresh refresh, const ProgressFn& progress) {
  Archive a;
  a.m_dir = apt_dir();
  auto lock = util::FileLock::acquire(cache_root() / "locks" / "apt.lock", 1800s);
  if (!lock) return unexpected(lock.error());
  fs::path stamp = a.m_dir / "lists/updated";
  bool have = fs::exists(stamp);
  bool stale = false;
  if (have) {
    std::error_code ec;
    auto age = fs::file_time_type::clock::now() - fs::last_write_time(stamp, ec);
    stale = ec || age > std::chrono::hours(24);
  }
  bool update = !have || refresh == Refresh::always || (refresh == Refresh::if_stale && stale);
  if (update) {
    if (auto w = write_config(a.m_dir); !w) return unexpected(w.error());
    if (progress) progress(fmt::format("reading Debian's package lists from {} (private apt configuration)", mirror()));
    auto r = run_apt(a.m_dir, {"apt-get", "update", "-q"}, {}, 900s);
    if (!r) return unexpected(r.error());
    if (r->interrupted) return unexpected(ErrorKind::interrupted, "interrupted");
    // apt-get update exits 0 with "W: Failed to fetch" for a suite it could not read; an index
    // missing for every suite is the failure that matters.
    bool failed = !r->ok() || network_failure(r->out);
    if (failed) {
      std::string why;
      for (const auto& suite : failed_suites(r->out)) why += (why.empty() ? "cannot read " : ", ") + suite;
      if (why.empty()) why = std::string(util::trim(util::tail_capped(r->out, 300)));
      for (auto& c : why)
        if (c == '\n') c = ' ';
      if (have) {
        util::log_warn("could not refresh Debian's package lists ({}); using the ones from the last update", why);
      } else {
        bool any = false;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(a.m_dir / "lists", ec))
          if (e.path().filename().string().ends_with("_Packages")) any = true;
        if (!any)
          return unexpected(ErrorKind::network,
                            fmt::format("the Debian archive at {} is not reachable ({}): check the network or set "
                                        "AUTODRIVER_MIRROR to a reachable Debian mirror",
                                        mirror(), why));
        util::log_warn("{} from {}: kernels of those suites are not listed", why, mirror());
      }
    }
    if (!failed || !have)
      if (auto w = util::write_file_atomic(stamp, fmt::format("{}\n", mirror())); !w) return unexpected(w.error());
  }
  if (auto l = a.load_lists(); !l) return unexpected(l.error());
  return a;
}

util::Expected<void> Archive::load_lists() {
  m_packages.clear();
  m_kernels.clear();
  std::error_code ec;
  // The linux-* and *-dkms stanzas of every suite, kept as a small index next to the lists (the lists are
  // ~200 MB; a kernel name is resolved by every command).
  fs::path index = m_dir / "packages-linux-dkms.tsv";
  fs::path stamp = m_dir / "lists/updated";
  bool fresh = fs::exists(index, ec) && fs::exists(stamp, ec) && fs::last_write_time(index, ec) >= fs::last_write_time(stamp, ec);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(m_dir / "lists", ec))
    if (e.path().filename().string().ends_with("_Packages")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (fresh) {
    auto text = util::read_file(index);
    if (!text) return unexpected(text.error());
    for (auto line : util::split_lines(*text)) {
      std::vector<std::string> f;
      std::size_t a = 0;
      while (true) {
        auto t = line.find('\t', a);
        f.emplace_back(line.substr(a, t == std::string_view::npos ? std::string_view::npos : t - a));
        if (t == std::string_view::npos) break;
        a = t + 1;
      }
      if (f.size() == 4) m_packages.push_back({f[0], f[1], f[3], f[2]});
    }
  } else {
    auto keep = [](std::string_view n) { return n.starts_with("linux-") || n.ends_with("-dkms"); };
    for (const auto& f : files) {
      std::string suite = suite_of_list(f.filename().string());
      auto text = util::read_file(f);
      if (!text) return unexpected(text.error());
      auto entries = parse_packages(*text, suite, keep);
      m_packages.insert(m_packages.end(), std::make_move_iterator(entries.begin()), std::make_move_iterator(entries.end()));
    }
    std::string out;
    for (const auto& p : m_packages) out += fmt::format("{}\t{}\t{}\t{}\n", p.name, p.version, p.suite, p.depends);
    (void)util::write_file_atomic(index, out);
  }
  m_has_lists = !files.empty();
  static const std::regex k_generic(R"(^linux-headers-(\d+\.\d+\.\d+[^ ]*)-amd64$)");
  for (const auto& p : m_packages) {
    std::smatch m;
    if (!std::regex_match(p.name, m, k_generic)) continue;
    std::string stem = m[1].str();
    if (stem.ends_with("-rt") || stem.ends_with("-cloud")) continue;
    m_kernels.push_back({stem + "-amd64", line_of_release(stem), p.version, p.suite});
  }
  return {};
}

static bool line_less(const std::string& a, const std::string& b) { return compare_debian_versions(a, b) < 0; }

std::vector<std::string> Archive::source_lines() const {
  std::set<std::string> s;
  for (const auto& p : m_packages)
    if (p.name.starts_with("linux-source-") && std::isdigit(static_cast<unsigned char>(p.name[13]))) s.insert(p.name.substr(13));
  std::vector<std::string> out(s.begin(), s.end());
  std::sort(out.begin(), out.end(), line_less);
  return out;
}

std::vector<std::string> Archive::lines() const {
  std::set<std::string> s;
  for (const auto& k : m_kernels) s.insert(k.line);
  std::vector<std::string> out(s.begin(), s.end());
  std::sort(out.begin(), out.end(), line_less);
  return out;
}

std::vector<std::string> Archive::dkms_packages(std::string_view suite) const {
  std::set<std::string> names;
  for (const auto& p : m_packages)
    if (p.name.ends_with("-dkms") && p.name != "dh-dkms" && base_suite(p.suite) == suite) names.insert(p.name);
  return {names.begin(), names.end()};
}

const PackageEntry* Archive::package_in(std::string_view name, std::string_view suite) const {
  const PackageEntry* best = nullptr;
  for (const auto& p : m_packages)
    if (p.name == name && base_suite(p.suite) == suite && (!best || compare_debian_versions(p.version, best->version) > 0))
      best = &p;
  return best;
}

std::string Archive::host_suite() {
  std::string h = host_codename();
  const auto& all = archive_suites();
  return std::find(all.begin(), all.end(), h) != all.end() ? h : std::string();
}

util::Expected<void> Archive::unpack(const fs::path& deb, const fs::path& dest) {
  util::RunRequest req;
  req.argv = {"dpkg-deb", "-x", deb.string(), dest.string()};
  req.timeout = 900s;
  req.stderr_mode = util::Stderr::merge;
  req.env_set = {{"LC_ALL", "C"}};
  auto r = util::run(req);
  if (!r) return unexpected(r.error());
  if (r->ok()) return {};
  std::string why(util::trim(util::tail_capped(r->out, 300)));
  if (why.find("No space left") != std::string::npos)
    return unexpected(ErrorKind::io, fmt::format("disk full while unpacking {} into {}", deb.filename().string(), dest.string()));
  return unexpected(r->timed_out ? ErrorKind::timeout : ErrorKind::io,
                    fmt::format("dpkg-deb -x {} failed ({}): {}", deb.filename().string(), r->status_text(), why));
}

std::optional<ArchiveKernel> Archive::newest(std::string_view line) const {
  const ArchiveKernel* best = nullptr;
  static const std::string host = host_codename();
  auto suite_rank = [&](const std::string& suite) {
    if (base_suite(suite) == host) return 1000;
    const auto& all = archive_suites();
    return static_cast<int>(std::find(all.begin(), all.end(), suite) - all.begin());
  };
  for (const auto& k : m_kernels) {
    if (k.line != line) continue;
    if (!best) {
      best = &k;
      continue;
    }
    int c = compare_debian_versions(k.version, best->version);
    // "7.3.4-1~bpo13+1" and "7.3.4-1": compare the upstream part first so a rebuild for another
    // suite is not taken for a newer kernel.
    int u = compare_debian_versions(split_version(k.version).upstream, split_version(best->version).upstream);
    if (u > 0 || (u == 0 && suite_rank(k.suite) > suite_rank(best->suite)) ||
        (u == 0 && suite_rank(k.suite) == suite_rank(best->suite) && c > 0))
      best = &k;
  }
  if (!best) return std::nullopt;
  return *best;
}

std::optional<ArchiveKernel> Archive::find_release(std::string_view release) const {
  for (const auto& k : m_kernels)
    if (k.release == release) return k;
  return std::nullopt;
}

const PackageEntry* Archive::package(std::string_view name, std::string_view op, std::string_view version) const {
  const PackageEntry* best = nullptr;
  for (const auto& p : m_packages)
    if (p.name == name && satisfies(p.version, op, version) && (!best || compare_debian_versions(p.version, best->version) > 0))
      best = &p;
  return best;
}

util::Expected<std::vector<const PackageEntry*>> Archive::kernel_closure(std::string_view name, std::string_view tag) const {
  std::vector<const PackageEntry*> out;
  const PackageEntry* root = package(name);
  if (!root) return unexpected(ErrorKind::not_found, fmt::format("the archive has no package {}", name));
  bool image = name.starts_with("linux-image-");
  std::vector<const PackageEntry*> todo = {root};
  std::set<std::string> seen = {root->name};
  while (!todo.empty()) {
    const PackageEntry* p = todo.back();
    todo.pop_back();
    out.push_back(p);
    for (const auto& alts : parse_depends(p->depends)) {
      for (const auto& a : alts) {
        bool ours =
            a.name.find(tag) != std::string::npos || a.name.starts_with("linux-kbuild-") || a.name.starts_with("linux-headers-");
        if (!ours || (!image && a.name.starts_with("linux-image-"))) continue;
        if (a.name.starts_with("linux-image-") && a.name != name) continue;
        const PackageEntry* dep = package(a.name, a.op, a.version);
        if (!dep && !a.op.empty()) dep = package(a.name); // a newer build of the same tools
        if (!dep) continue;                               // try the next alternative
        if (seen.insert(dep->name).second) todo.push_back(dep);
        break;
      }
    }
  }
  return out;
}

util::Expected<std::vector<fs::path>> Archive::download(const std::vector<const PackageEntry*>& packages, const fs::path& dir,
                                                        const ProgressFn& progress) const {
  if (auto w = write_config(m_dir); !w) return unexpected(w.error());
  std::vector<std::string> argv = {"apt-get", "download", "-q"};
  std::string names;
  for (const auto* p : packages) {
    argv.push_back(p->name + "=" + p->version);
    names += (names.empty() ? "" : ", ") + p->name;
  }
  if (progress) progress(fmt::format("downloading {} (apt-get download, private configuration)", names));
  auto r = run_apt(m_dir, argv, dir, 1800s);
  if (!r) return unexpected(r.error());
  if (r->interrupted) return unexpected(ErrorKind::interrupted, "interrupted");
  if (!r->ok()) {
    std::string why(util::trim(util::tail_capped(r->out, 500)));
    if (why.find("No space left") != std::string::npos)
      return unexpected(ErrorKind::io, fmt::format("disk full while downloading into {}", dir.string()));
    if (network_failure(r->out))
      return unexpected(ErrorKind::network, fmt::format("cannot download {} from {}: {}", names, mirror(), why));
    return unexpected(ErrorKind::io, fmt::format("apt-get download {} failed: {}", names, why));
  }
  std::vector<fs::path> debs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".deb") debs.push_back(e.path());
  std::sort(debs.begin(), debs.end());
  if (debs.size() < packages.size())
    return unexpected(ErrorKind::io,
                      fmt::format("apt-get download produced {} of {} packages ({})", debs.size(), packages.size(), names));
  return debs;
}

} // namespace autodriver::kernel
