// `autodriver kernel list | fetch K... | info K`

#include "autodriver/cli/commands.hpp"
#include "autodriver/kernel/archive.hpp"
#include "autodriver/kernel/fetch.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>

namespace autodriver::cli {

namespace fs = std::filesystem;

static nlohmann::json kernel_json(const core::Kernel& k) {
  return {{"name", k.name},
          {"release", k.release},
          {"line", k.line},
          {"build_dir", k.build_dir.string()},
          {"headers_fetched", k.has_headers()},
          {"image_cached", k.has_image()},
          {"vmlinux", k.vmlinux.string()},
          {"modules_dir", k.modules_dir.string()},
          {"cache_dir", kernel::kernel_cache_dir(k.release).string()},
          {"headers_package", k.headers_package},
          {"image_package", k.image_package},
          {"source_package", k.source_package},
          {"version", k.version},
          {"suite", k.suite},
          {"compiler", k.compiler},
          {"toolchain_root", k.toolchain_root.string()}};
}

static void print_error(const util::Error& e) { std::fprintf(stderr, "autodriver: error: %s\n", e.message.c_str()); }

Command kernel_command() {
  return {
      "kernel", "List, fetch and describe target kernels (headers, image, vmlinux, modules)",
      [](CLI::App& sub) -> std::function<int()> {
        sub.require_subcommand(1);
        struct Opts {
          bool json = false;
          bool available = false;
          bool refresh = false;
          std::vector<std::string> names;
          std::string name;
        };
        auto o = std::make_shared<Opts>();
        auto* list = sub.add_subcommand("list", "Fetched kernels; with --available, every kernel line Debian's archive has");
        list->add_flag("--available", o->available,
                       "Kernel lines in Debian's archive (bullseye .. sid) with their newest ABI, read through a "
                       "private apt configuration in the cache (refreshed when older than a day)");
        list->add_flag("--refresh", o->refresh, "With --available: re-read the archive's package lists now");
        list->add_flag("--json", o->json, "Machine-readable output");
        auto* fetch = sub.add_subcommand(
            "fetch", "Download a Debian kernel's headers, kbuild, image and modules into the cache (apt-get download + "
                     "dpkg -x with a private apt configuration: nothing is installed, no root needed), and make the "
                     "toolchain root its config names once per suite (mmdebstrap). Idempotent and safe to run twice at once.");
        fetch
            ->add_option("kernels", o->names,
                         "a line (5.10, 6.1, 6.12, 7.2, 7.3), a Debian release string, host, or a kernel build dir")
            ->required();
        fetch->add_flag("--json", o->json, "Machine-readable output");
        auto* info = sub.add_subcommand("info", "Paths and status of one kernel target");
        info->add_option("kernel", o->name, "a line (7.3), a Debian release string, host, or a kernel build dir")->required();
        info->add_flag("--json", o->json, "Machine-readable output");
        auto* source = sub.add_subcommand(
            "source", "Download Debian's linux-source-<line> and decompress it into the cache once; print the tree's path");
        source->add_option("kernel", o->name, "a kernel line (5.10 .. 7.3) or release")->required();
        source->add_flag("--json", o->json, "Machine-readable output");
        return [o, list, fetch, info, source]() -> int {
          if (source->parsed()) {
            auto k = kernel::resolve_kernel(o->name);
            if (!k) {
              print_error(k.error());
              return k_exit_error;
            }
            auto dir = kernel::ensure_source(*k, [&](const std::string& msg) { util::log_info("{}: {}", o->name, msg); });
            if (!dir) {
              print_error(dir.error());
              return util::interrupted() ? k_exit_interrupted : k_exit_error;
            }
            if (o->json)
              std::cout << nlohmann::json{{"schema_version", 1}, {"kernel", o->name}, {"source", dir->string()}}.dump(
                               2, ' ', false, util::json_bytes)
                        << "\n";
            else std::cout << dir->string() << "\n";
            return k_exit_ok;
          }
          if (list->parsed() && o->available) {
            auto archive = kernel::Archive::open(
                o->refresh ? kernel::Archive::Refresh::always : kernel::Archive::Refresh::if_stale, [&](const std::string& m) {
                  if (!o->json) util::log_info("{}", m);
                });
            if (!archive) {
              print_error(archive.error());
              return util::interrupted() ? k_exit_interrupted : k_exit_error;
            }
            auto sources = archive->source_lines();
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& line : archive->lines()) {
              auto k = archive->newest(line);
              if (!k) continue;
              nlohmann::json releases = nlohmann::json::array();
              for (const auto& r : archive->kernels())
                if (r.line == line) releases.push_back({{"release", r.release}, {"version", r.version}, {"suite", r.suite}});
              arr.push_back({{"line", line},
                             {"release", k->release},
                             {"version", k->version},
                             {"suite", k->suite},
                             {"source", std::find(sources.begin(), sources.end(), line) != sources.end()},
                             {"fetched", kernel::fetched_kernel(k->release).has_value()},
                             {"releases", releases}});
            }
            if (o->json) {
              std::cout << nlohmann::json{{"schema_version", 1}, {"mirror", kernel::Archive::mirror()}, {"lines", arr}}.dump(
                               2, ' ', false, util::json_bytes)
                        << "\n";
            } else {
              fmt::print("{:<6} {:<24} {:<18} {:<7} {:<8} {}\n", "LINE", "NEWEST RELEASE", "SUITE", "SOURCE", "FETCHED",
                         "RELEASES");
              for (const auto& l : arr)
                fmt::print("{:<6} {:<24} {:<18} {:<7} {:<8} {}\n", l["line"].get<std::string>(), l["release"].get<std::string>(),
                           l["suite"].get<std::string>(), l["source"].get<bool>() ? "yes" : "no",
                           l["fetched"].get<bool>() ? "yes" : "no", l["releases"].size());
              fmt::print("mirror: {}\n", kernel::Archive::mirror());
            }
            return k_exit_ok;
          }
          if (list->parsed()) {
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& f : kernel::fetched_kernels())
              if (auto k = kernel::resolve_kernel(f.release)) arr.push_back(kernel_json(*k));
            if (o->json) {
              std::cout << nlohmann::json{{"schema_version", 2}, {"cache", kernel::cache_root().string()}, {"kernels", arr}}.dump(
                               2, ' ', false, util::json_bytes)
                        << "\n";
            } else {
              fmt::print("{:<6} {:<24} {:<18} {:<8} {:<6}\n", "LINE", "RELEASE", "SUITE", "COMPILER", "IMAGE");
              for (const auto& k : arr)
                fmt::print("{:<6} {:<24} {:<18} {:<8} {:<6}\n", k["line"].get<std::string>(), k["release"].get<std::string>(),
                           k["suite"].get<std::string>(), k["compiler"].get<std::string>(),
                           k["image_cached"].get<bool>() ? "yes" : "no");
              if (arr.empty())
                fmt::print("no kernel fetched yet: `autodriver kernel list --available`, then `autodriver kernel fetch LINE`\n");
              fmt::print("cache: {}\n", kernel::cache_root().string());
            }
            return k_exit_ok;
          }
          if (fetch->parsed()) {
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& name : o->names) {
              auto k = kernel::fetch_kernel(name, [&](const std::string& msg) {
                if (!o->json) util::log_info("{}: {}", name, msg);
              });
              if (!k) {
                print_error(k.error());
                return util::interrupted() ? k_exit_interrupted : k_exit_error;
              }
              arr.push_back(kernel_json(*k));
              if (!o->json) util::log_info("{}: ready ({})", name, k->release);
            }
            if (o->json)
              std::cout << nlohmann::json{{"schema_version", 1}, {"kernels", arr}}.dump(2, ' ', false, util::json_bytes) << "\n";
            return k_exit_ok;
          }
          auto k = kernel::resolve_kernel(o->name);
          if (!k) {
            print_error(k.error());
            return k_exit_error;
          }
          auto j = kernel_json(*k);
          if (o->json) {
            j["schema_version"] = 1;
            std::cout << j.dump(2, ' ', false, util::json_bytes) << "\n";
          } else {
            for (auto& [key, v] : j.items())
              fmt::print("{:<18} {}\n", key, v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, util::json_bytes));
          }
          return k_exit_ok;
        };
      }};
}

} // namespace autodriver::cli
