// `autodriver kernel list | fetch K... | info K`

#include "autodriver/cli/commands.hpp"
#include "autodriver/kernel/fetch.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace autodriver::cli {

namespace fs = std::filesystem;

static nlohmann::json kernel_json(const core::Kernel& k) {
  return {{"name", k.name},
          {"release", k.release},
          {"line", k.line},
          {"build_dir", k.build_dir.string()},
          {"headers_installed", k.has_headers()},
          {"image_cached", k.has_image()},
          {"vmlinux", k.vmlinux.string()},
          {"modules_dir", k.modules_dir.string()},
          {"cache_dir", kernel::kernel_cache_dir(k.release).string()},
          {"headers_package", k.headers_package},
          {"image_package", k.image_package},
          {"source_package", k.source_package}};
}

static void print_error(const util::Error& e) { std::fprintf(stderr, "autodriver: error: %s\n", e.message.c_str()); }

Command kernel_command() {
  return {"kernel", "List, fetch and describe target kernels (headers, image, vmlinux, modules)",
          [](CLI::App& sub) -> std::function<int()> {
            sub.require_subcommand(1);
            struct Opts {
              bool json = false;
              std::vector<std::string> names;
              std::string name;
            };
            auto o = std::make_shared<Opts>();
            auto* list = sub.add_subcommand("list", "Known kernels and what is installed/cached for each");
            list->add_flag("--json", o->json, "Machine-readable output");
            auto* fetch = sub.add_subcommand(
                "fetch", "Install the headers package (apt, needs root) and cache the image, vmlinux and module tree "
                         "(apt-get download + dpkg -x; the system is not changed). Idempotent and safe to run twice at once.");
            fetch->add_option("kernels", o->names, "6.1, 6.12, a release string or a kernel build dir")->required();
            fetch->add_flag("--json", o->json, "Machine-readable output");
            auto* info = sub.add_subcommand("info", "Paths and status of one kernel target");
            info->add_option("kernel", o->name, "6.1, 6.12, a release string or a kernel build dir")->required();
            info->add_flag("--json", o->json, "Machine-readable output");
            auto* source = sub.add_subcommand(
                "source", "Decompress linux-source-<line> into the cache once and print the tree's path");
            source->add_option("kernel", o->name, "6.1 or 6.12")->required();
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
                  std::cout << nlohmann::json{{"schema_version", 1}, {"kernel", o->name}, {"source", dir->string()}}.dump(2) << "\n";
                else
                  std::cout << dir->string() << "\n";
                return k_exit_ok;
              }
              if (list->parsed()) {
                nlohmann::json arr = nlohmann::json::array();
                for (const auto& known : kernel::known_kernels()) {
                  auto k = kernel::resolve_kernel(known.name);
                  if (k) arr.push_back(kernel_json(*k));
                }
                if (o->json) {
                  std::cout << nlohmann::json{{"schema_version", 1}, {"cache", kernel::cache_root().string()},
                                              {"kernels", arr}}.dump(2) << "\n";
                } else {
                  fmt::print("{:<6} {:<24} {:<9} {:<7}\n", "NAME", "RELEASE", "HEADERS", "IMAGE");
                  for (const auto& k : arr)
                    fmt::print("{:<6} {:<24} {:<9} {:<7}\n", k["name"].get<std::string>(),
                               k["release"].get<std::string>(), k["headers_installed"].get<bool>() ? "yes" : "no",
                               k["image_cached"].get<bool>() ? "cached" : "no");
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
                if (o->json) std::cout << nlohmann::json{{"schema_version", 1}, {"kernels", arr}}.dump(2) << "\n";
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
                std::cout << j.dump(2) << "\n";
              } else {
                for (auto& [key, v] : j.items()) fmt::print("{:<18} {}\n", key, v.is_string() ? v.get<std::string>() : v.dump());
              }
              return k_exit_ok;
            };
          }};
}

} // namespace autodriver::cli
