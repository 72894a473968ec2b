#include "autodriver/propose/shared/version_cond.hpp"

#include "autodriver/util/strings.hpp"

#include <map>
#include <regex>

namespace autodriver::propose {

bool VersionCond::eval(long code) const {
  const long x = v.code();
  if (op == "<") return code < x;
  if (op == "<=") return code <= x;
  if (op == ">") return code > x;
  if (op == ">=") return code >= x;
  if (op == "==") return code == x;
  return code != x;
}

namespace {

/// `s` without one pair of parentheses enclosing all of it; unchanged otherwise.
std::string_view strip_outer_parens(std::string_view s) {
  s = util::trim(s);
  while (s.size() >= 2 && s.front() == '(' && s.back() == ')') {
    int depth = 0;
    bool encloses = true;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '(') ++depth;
      if (s[i] == ')' && --depth == 0 && i + 1 < s.size()) encloses = false;
    }
    if (!encloses) break;
    s = util::trim(s.substr(1, s.size() - 2));
  }
  return s;
}

} // namespace

std::optional<VersionCond> parse_version_condition(std::string_view cond) {
  static const std::regex k_comment(R"(/\*.*?\*/|//.*$)");
  const std::string text = std::regex_replace(std::string(cond), k_comment, " ");
  const std::string c(strip_outer_parens(text));
  static const std::regex k_fwd(
      R"(^LINUX_VERSION_CODE\s*(<=|>=|<|>|==|!=)\s*KERNEL_VERSION\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$)");
  static const std::regex k_rev(
      R"(^KERNEL_VERSION\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)\s*(<=|>=|<|>|==|!=)\s*LINUX_VERSION_CODE$)");
  std::smatch m;
  VersionCond r;
  if (std::regex_match(c, m, k_fwd)) {
    r.op = m[1].str();
    r.v = {std::stoi(m[2].str()), std::stoi(m[3].str()), std::stoi(m[4].str())};
    return r;
  }
  if (std::regex_match(c, m, k_rev)) {
    static const std::map<std::string, std::string> k_mirror = {{">=", "<="}, {">", "<"},   {"<=", ">="},
                                                                {"<", ">"},   {"==", "=="}, {"!=", "!="}};
    r.op = k_mirror.at(m[4].str());
    r.v = {std::stoi(m[1].str()), std::stoi(m[2].str()), std::stoi(m[3].str())};
    return r;
  }
  return std::nullopt;
}

} // namespace autodriver::propose
