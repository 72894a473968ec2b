// Number options' bounds, with messages a user reads (commands.hpp).

#include "autodriver/cli/commands.hpp"

#include <fmt/format.h>

#include <cmath>
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

} // namespace

CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        if (auto why = read_number(s, v); !why.empty()) return why;
        return v > 0 ? "" : fmt::format("{} is not above 0", s);
      },
      "NUMBER > 0", "positive");
}

CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        if (auto why = read_number(s, v); !why.empty()) return why;
        return v >= 0 ? "" : fmt::format("{} is below 0", s);
      },
      "NUMBER >= 0", "non-negative");
}

} // namespace autodriver::cli
