#include "autodriver/corpus/dkms.hpp"

#include "autodriver/kernel/archive.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/file_lock.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <unistd.h>

namespace autodriver::corpus {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using util::ErrorKind;
using util::unexpected;

DkmsConf parse_dkms_conf(std::string_view text) {
  static const std::regex k_assign(R"re(^\s*([A-Z_]+)(?:\[(\d+)\])?=(?:"([^"]*)"|'([^']*)'|(\S*))\s*(?:#.*)?$)re");
  DkmsConf c;
  for (auto line : util::split_lines(text)) {
    std::string l(line);
    std::smatch m;
    if (!std::regex_match(l, m, k_assign)) continue;
    std::string key = m[1].str();
    std::string value = m[3].matched ? m[3].str() : m[4].matched ? m[4].str() : m[5].str();
    std::size_t idx = m[2].matched ? std::stoul(m[2].str()) : 0;
    auto put = [&](std::vector<std::string>& v) {
      if (v.size() <= idx) v.resize(idx + 1);
      v[idx] = value;
    };
    if (key == "PACKAGE_NAME") c.package_name = value;
    else if (key == "PACKAGE_VERSION") c.package_version = value;
    else if (key == "BUILT_MODULE_NAME") put(c.module_names);
    else if (key == "BUILT_MODULE_LOCATION") put(c.module_locations);
    else if (key == "MAKE" && idx == 0) c.make = value;
  }
  for (auto& n : c.module_names) n = std::regex_replace(n, std::regex(R"(\$\{?PACKAGE_NAME\}?)"), c.package_name);
  return c;
}

std::string dkms_build_command(const DkmsConf& conf, const std::string& build_dir) {
  if (conf.make.empty()) return {};
  std::string cmd = conf.make;
  const std::vector<std::pair<std::string, std::string>> subs = {
      {R"(\$\{?dkms_tree\}?/\$\{?PACKAGE_NAME\}?/\$\{?PACKAGE_VERSION\}?/build)", build_dir},
      {R"(\$\{?kernel_source_dir\}?)", "{kdir}"},
      {R"(\$\{?kernelver\}?)", "{kver}"},
      {R"(\$\{?PACKAGE_NAME\}?)", conf.package_name},
      {R"(\$\{?PACKAGE_VERSION\}?)", conf.package_version},
      {R"(\$\{?parallel_jobs\}?)", "1"},
      {R"(\$\{?arch\}?)", "x86_64"},
      {R"(\$\{?source_tree\}?/[^ ]*)", build_dir}};
  for (const auto& [re, value] : subs) cmd = std::regex_replace(cmd, std::regex(re), value);
  // "KERNELDIR=... make driver": environment assignments before make become make variables.
  cmd = std::regex_replace(cmd, std::regex(R"(^\s*((?:[A-Za-z_]\w*=\S*\s+)*[A-Za-z_]\w*=\S*)\s+(make)\b)"), "$2 $1");
  // Anything left that needs a shell is not ours to run.
  if (cmd.find('$') != std::string::npos || cmd.find('`') != std::string::npos || cmd.find("&&") != std::string::npos ||
      cmd.find('|') != std::string::npos || cmd.find(';') != std::string::npos)
    return {};
  return cmd;
}

namespace {
void log_progress(const std::string& m) { util::log_info("{}", m); }
} // namespace

std::string dkms_suite(std::string_view kernel_suite) {
  if (!kernel_suite.empty()) return kernel::base_suite(kernel_suite);
  if (auto h = kernel::Archive::host_suite(); !h.empty()) return h;
  auto archive = kernel::Archive::open_offline();
  auto lines = archive.lines();
  if (!lines.empty())
    if (auto k = archive.newest(lines.back())) return kernel::base_suite(k->suite);
  return {};
}

util::Expected<std::vector<std::string>> list_dkms_packages(const std::string& suite) {
  auto archive = kernel::Archive::open(kernel::Archive::Refresh::if_missing, log_progress);
  if (!archive) return unexpected(archive.error());
  auto names = archive->dkms_packages(suite);
  if (names.empty())
    return unexpected(ErrorKind::not_found, fmt::format("Debian's archive lists no *-dkms packages in '{}' (suites: {})", suite,
                                                        fmt::join(kernel::archive_suites(), ", ")));
  return names;
}

util::Expected<DkmsSource> fetch_dkms_source(const std::string& package, const std::string& suite) {
  const fs::path dir = kernel::cache_root() / "dkms" / suite / package;
  auto lock = util::FileLock::acquire(kernel::cache_root() / "locks" / ("dkms-" + suite + "-" + package + ".lock"), 600s);
  if (!lock) return unexpected(lock.error());
  if (!fs::exists(dir / "complete.json")) {
    auto archive = kernel::Archive::open(kernel::Archive::Refresh::if_missing, log_progress);
    if (!archive) return unexpected(archive.error());
    const kernel::PackageEntry* entry = archive->package_in(package, suite);
    if (!entry) return unexpected(ErrorKind::not_found, fmt::format("Debian's archive has no package {} in {}", package, suite));
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::path partial = dir.parent_path() / fmt::format(".partial-{}-{}", package, getpid());
    fs::remove_all(partial, ec);
    fs::create_directories(partial / "root", ec);
    if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", partial.string(), ec.message()));
    auto debs = archive->download({entry}, partial, nullptr);
    if (!debs || debs->empty()) {
      fs::remove_all(partial, ec);
      return unexpected(debs ? util::Error{ErrorKind::network, fmt::format("no .deb downloaded for {}", package)} : debs.error());
    }
    const fs::path deb = debs->front();
    if (auto x = kernel::Archive::unpack(deb, partial / "root"); !x) {
      fs::remove_all(partial, ec);
      return unexpected(x.error());
    }
    fs::remove(deb, ec);
    nlohmann::json stamp = {{"schema_version", 2},
                            {"package", package},
                            {"suite", entry->suite},
                            {"version", entry->version},
                            {"deb", deb.filename().string()}};
    if (auto w = util::write_file_atomic(partial / "complete.json", stamp.dump(2, ' ', false, util::json_bytes) + "\n"); !w) {
      fs::remove_all(partial, ec);
      return unexpected(w.error());
    }
    fs::rename(partial, dir, ec);
    if (ec) return unexpected(ErrorKind::io, fmt::format("cannot move {} into place: {}", dir.string(), ec.message()));
  }
  DkmsSource s;
  s.package = package;
  if (auto st = util::read_file(dir / "complete.json"); st) {
    auto j = nlohmann::json::parse(*st, nullptr, false);
    if (!j.is_discarded()) s.version = j.value("deb", "");
  }
  s.suite = suite;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "root/usr/src", ec))
    if (fs::exists(e.path() / "dkms.conf")) s.source = e.path();
  if (s.source.empty()) return unexpected(ErrorKind::not_found, fmt::format("{} has no /usr/src/*/dkms.conf", package));
  auto conf = util::read_file(s.source / "dkms.conf");
  if (!conf) return unexpected(conf.error());
  s.conf = parse_dkms_conf(*conf);
  return s;
}

} // namespace autodriver::corpus
