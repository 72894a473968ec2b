// Number options' bounds, with messages a user reads (commands.hpp).

#include "autodriver/cli/commands.hpp"

#include "autodriver/kernel/toolchain.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>

namespace autodriver::cli {

namespace {

/// `s` as a finite number, or the reason it is not one.
std::string read_number(const std::string& s, double& out) {
  try {
    std::size_t used = 0;
    out = std::stod(s, &used);
    if (used == s.size() && std::isfinite(out)) return "";
  } catch (const std::exception&) {}
  return fmt::format("'{}' is not a number", s);
}

/// A validator of numbers that `holds`, else "`s` `broken`".
CLI::Validator number_check(bool (*holds)(double), const char* broken, const char* desc, const char* name) {
  return CLI::Validator(
      [holds, broken](std::string& s) -> std::string {
        double v = 0;
        if (auto why = read_number(s, v); !why.empty()) return why;
        return holds(v) ? "" : fmt::format("{} {}", s, broken);
      },
      desc, name);
}

} // namespace

CLI::Option* add_build_deps_option(CLI::App& sub, std::vector<std::string>& out) {
  return sub
      .add_option("--build-deps", out,
                  "Debian packages the driver's own build needs beyond the kernel's (its configure script's "
                  "pkg-config, perl, a library's headers; a DKMS package's Depends), comma-separated or repeated: "
                  "installed with the kernel's compiler into a toolchain root of their own, made once per set (mmdebstrap, "
                  "about a minute); "
                  "with a host or path kernel they must be installed on this machine")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            auto r = kernel::build_deps_of(s);
            return r ? std::string() : r.error().message;
          },
          "PKG", "package"));
}

CLI::Validator jobs_cap() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        if (auto why = read_number(s, v); !why.empty()) return why;
        if (v < 1 || v != std::floor(v)) return fmt::format("{} is not a whole number of at least 1", s);
        const int cap = k_jobs_per_cpu * util::available_cpus();
        if (v > cap) {
          std::fprintf(stderr,
                       "autodriver: note: -j %s is more than %d times the %d CPUs this process may use; "
                       "running %d at a time\n",
                       s.c_str(), k_jobs_per_cpu, util::available_cpus(), cap);
          s = std::to_string(cap);
        }
        return "";
      },
      "1 <= N", "jobs");
}

CLI::Validator at_least_one() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        if (auto why = read_number(s, v); !why.empty()) return why;
        return v >= 1 && v == std::floor(v) ? "" : fmt::format("must be a whole number of at least 1, not {}", s);
      },
      "N >= 1", "at-least-one");
}

CLI::Validator positive() {
  return number_check([](double v) { return v > 0; }, "is not above 0", "NUMBER > 0", "positive");
}

CLI::Validator non_negative() {
  return number_check([](double v) { return v >= 0; }, "is below 0", "NUMBER >= 0", "non-negative");
}

} // namespace autodriver::cli
