// `autodriver apidiff DIR --from K0 --to K [--build-cmd CMD] [--json]`: the API changes between two
// kernels for the symbols a driver uses (docs/apidiff.md).

#include "autodriver/apidiff/apidiff.hpp"
#include "autodriver/cli/commands.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"

#include <fmt/format.h>

#include <iostream>

namespace autodriver::cli {

namespace {

struct ApidiffOptions {
  std::string dir, from = "6.1", to = "6.12", build_cmd;
  std::vector<std::string> build_deps;
  int build_timeout = 300;
  std::uintmax_t max_bytes = 1024 * 1024;
  bool json = false;
};

core::Kernel kernel_or_throw(const std::string& name, const char* option, const std::vector<std::string>& build_deps) {
  auto k = kernel::resolve_kernel(name);
  if (k) k = kernel::with_build_deps(std::move(*k), build_deps, [](const std::string& m) { util::log_info("{}", m); });
  if (!k)
    throw util::FatalError{util::make_error(util::ErrorKind::config, fmt::format("{} {}: {}", option, name, k.error().message))};
  return *k;
}

void print_human(const apidiff::ApidiffReport& r) {
  for (const auto& f : r.files)
    fmt::print("{}: {} identifiers; {} declarations on {} ({} clang errors), {} on {} ({} clang errors)\n", f.file, f.identifiers,
               f.from.declarations, f.from.release, f.from.parse_errors, f.to.declarations, f.to.release, f.to.parse_errors);
  for (const auto& s : r.skipped) fmt::print("skipped {}\n", s);
  for (const auto& c : r.changes) fmt::print("  {:<22} {}\n", core::to_string(c.kind), c.summary);
  fmt::print("{} API changes between {} and {} in {:.1f} s\n", r.changes.size(), r.from.release, r.to.release,
             r.elapsed.count() / 1000.0);
}

} // namespace

Command apidiff_command() {
  return {
      "apidiff",
      "API differences between two kernels for the symbols a driver uses: prototypes, macros, struct members, "
      "ops callbacks, enums, typedefs and their headers, parsed with libclang using kbuild's own flags",
      [](CLI::App& sub) -> std::function<int()> {
        auto o = std::make_shared<ApidiffOptions>();
        sub.add_option("dir", o->dir, "Driver source tree with a kbuild Makefile (never written)")->required();
        sub.add_option("--from", o->from, "Kernel the driver builds on: 6.1, 6.12 or a kernel build dir")->capture_default_str();
        sub.add_option("--to", o->to, "Target kernel")->capture_default_str();
        sub.add_option("--build-cmd", o->build_cmd,
                       "Build command run in a copy of the tree instead of kbuild M= ({kdir}, {kver}); "
                       "make gets -k and V=1 so the compile commands can be read");
        add_build_deps_option(sub, o->build_deps);
        sub.add_option("--build-timeout", o->build_timeout, "Seconds before a build is killed")
            ->capture_default_str()
            ->check(positive());
        sub.add_option("--max-file-bytes", o->max_bytes, "Driver C files larger than this are not parsed")->capture_default_str();
        sub.add_flag("--json", o->json, "Print the versioned JSON document (docs/apidiff.md)");
        return [o]() -> int {
          apidiff::ApidiffRequest req;
          req.tree = o->dir;
          req.from = kernel_or_throw(o->from, "--from", o->build_deps);
          req.to = kernel_or_throw(o->to, "--to", o->build_deps);
          req.build_cmd = o->build_cmd;
          req.build_timeout = std::chrono::seconds(o->build_timeout);
          req.parse.max_source_bytes = o->max_bytes;
          if (o->json && util::log_level() != util::LogLevel::debug) util::set_log_level(util::LogLevel::quiet);
          auto report = apidiff::run_apidiff(req);
          if (!report) {
            std::fprintf(stderr, "autodriver: error: %s\n", report.error().message.c_str());
            return report.error().kind == util::ErrorKind::interrupted ? k_exit_interrupted : k_exit_error;
          }
          if (o->json) std::cout << apidiff::to_json(*report).dump(2, ' ', false, util::json_bytes) << "\n";
          else print_human(*report);
          return k_exit_ok;
        };
      }};
}

} // namespace autodriver::cli
