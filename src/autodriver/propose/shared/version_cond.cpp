#include "autodriver/propose/shared/version_cond.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/util/strings.hpp"

#include <map>
#include <regex>
#include <set>

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

/// Three-valued reading of a condition's tokens (version_condition_value): 1 true, 0 false,
/// -1 unknown.
class CondReader {
public:
  CondReader(std::vector<csrc::Token> toks, long code) : t_(std::move(toks)), code_(code) {}

  int read() {
    int v = any();
    return i_ == t_.size() ? v : -1;
  }

private:
  bool at(std::string_view p) const { return i_ < t_.size() && t_[i_].kind == csrc::TokKind::punct && t_[i_].text == p; }

  int any() {
    int v = all();
    while (at("||")) {
      ++i_;
      int w = all();
      v = (v == 1 || w == 1) ? 1 : (v == -1 || w == -1) ? -1 : 0;
    }
    return v;
  }

  int all() {
    int v = unary();
    while (at("&&")) {
      ++i_;
      int w = unary();
      v = (v == 0 || w == 0) ? 0 : (v == -1 || w == -1) ? -1 : 1;
    }
    return v;
  }

  int unary() {
    if (at("!")) {
      ++i_;
      int v = unary();
      return v == -1 ? -1 : 1 - v;
    }
    if (at("(")) {
      std::size_t open = i_++;
      int v = any();
      if (at(")")) {
        ++i_;
        if (i_ == t_.size() || at("&&") || at("||") || at(")")) return v;
      }
      i_ = open; // `(x) + 1 > y`: a comparison that starts with a group
    }
    return atom();
  }

  /// A version number: KERNEL_VERSION(a,b,c) or an integer literal; advances past it.
  std::optional<long> version_at(std::size_t& k) const {
    auto num = [&](std::size_t j) -> std::optional<long> {
      if (j >= t_.size() || t_[j].kind != csrc::TokKind::number) return std::nullopt;
      std::string s = t_[j].text;
      while (!s.empty() && (s.back() == 'u' || s.back() == 'U' || s.back() == 'l' || s.back() == 'L')) s.pop_back();
      try {
        std::size_t used = 0;
        long v = std::stol(s, &used, 0);
        if (used != s.size()) return std::nullopt;
        return v;
      } catch (...) {
        return std::nullopt;
      }
    };
    auto punct = [&](std::size_t j, std::string_view p) {
      return j < t_.size() && t_[j].text == p && t_[j].kind == csrc::TokKind::punct;
    };
    if (k < t_.size() && t_[k].text == "KERNEL_VERSION" && punct(k + 1, "(") && punct(k + 3, ",") && punct(k + 5, ",") &&
        punct(k + 7, ")")) {
      auto a = num(k + 2), b = num(k + 4), c = num(k + 6);
      if (!a || !b || !c) return std::nullopt;
      k += 8;
      return KVersion{static_cast<int>(*a), static_cast<int>(*b), static_cast<int>(*c)}.code();
    }
    if (auto n = num(k)) {
      ++k;
      return n;
    }
    return std::nullopt;
  }

  /// One operand up to the next `&&`, `||` or unmatched `)`: a version comparison or unknown.
  int atom() {
    std::size_t b = i_;
    int depth = 0;
    while (i_ < t_.size()) {
      if (depth == 0 && (at("&&") || at("||") || at(")"))) break;
      if (at("(")) ++depth;
      if (at(")")) --depth;
      ++i_;
    }
    static const std::set<std::string, std::less<>> k_ops = {"<", "<=", ">", ">=", "==", "!="};
    std::size_t k = b;
    bool code_first = k < i_ && t_[k].text == "LINUX_VERSION_CODE";
    std::optional<long> lhs;
    if (code_first) ++k;
    else if (!(lhs = version_at(k))) return -1;
    if (k >= i_ || !k_ops.count(t_[k].text)) return -1;
    std::string op = t_[k++].text;
    std::optional<long> rhs;
    if (code_first) rhs = version_at(k);
    else if (k < i_ && t_[k].text == "LINUX_VERSION_CODE") ++k;
    else return -1;
    if (k != i_ || (code_first && !rhs)) return -1;
    long l = code_first ? code_ : *lhs, r = code_first ? *rhs : code_;
    bool v = op == "<" ? l < r : op == "<=" ? l <= r : op == ">" ? l > r : op == ">=" ? l >= r : op == "==" ? l == r : l != r;
    return v ? 1 : 0;
  }

  std::vector<csrc::Token> t_;
  long code_;
  std::size_t i_ = 0;
};

} // namespace

std::optional<bool> version_condition_value(std::string_view cond, long code) {
  auto toks = csrc::tokenize(cond);
  if (toks.empty()) return std::nullopt;
  int v = CondReader(std::move(toks), code).read();
  if (v == -1) return std::nullopt;
  return v == 1;
}

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
