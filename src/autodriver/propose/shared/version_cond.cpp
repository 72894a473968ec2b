#include "autodriver/propose/shared/version_cond.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/util/strings.hpp"

#include <map>
#include <set>

namespace autodriver::propose {

namespace {

/// `l op r` for the six C comparisons (op is one of them).
bool compare(long l, std::string_view op, long r) {
  if (op == "<") return l < r;
  if (op == "<=") return l <= r;
  if (op == ">") return l > r;
  if (op == ">=") return l >= r;
  if (op == "==") return l == r;
  return l != r;
}

bool is_comparison(const csrc::Token& t) {
  static const std::set<std::string, std::less<>> k_ops = {"<", "<=", ">", ">=", "==", "!="};
  return t.kind == csrc::TokKind::punct && k_ops.count(t.text);
}

/// The tokens of a condition, read with bounds: every accessor answers "no" past the end.
struct CondTokens {
  std::vector<csrc::Token> t;

  bool punct(std::size_t j, std::string_view p) const {
    return j < t.size() && t[j].kind == csrc::TokKind::punct && t[j].text == p;
  }
  bool word(std::size_t j, std::string_view w) const {
    return j < t.size() && t[j].kind == csrc::TokKind::ident && t[j].text == w;
  }

  /// An integer literal (suffixes u/l allowed, any base); nullopt when it is none or overflows.
  std::optional<long> number(std::size_t j) const {
    if (j >= t.size() || t[j].kind != csrc::TokKind::number) return std::nullopt;
    std::string s = t[j].text;
    while (!s.empty() && (s.back() == 'u' || s.back() == 'U' || s.back() == 'l' || s.back() == 'L')) s.pop_back();
    try {
      std::size_t used = 0;
      long v = std::stol(s, &used, 0);
      if (used != s.size() || v < 0) return std::nullopt;
      return v;
    } catch (...) {
      return std::nullopt;
    }
  }

  /// `KERNEL_VERSION(a, b, c)` at k: the version, k advanced past it.
  std::optional<KVersion> kernel_version(std::size_t& k) const {
    if (!word(k, "KERNEL_VERSION") || !punct(k + 1, "(") || !punct(k + 3, ",") || !punct(k + 5, ",") || !punct(k + 7, ")"))
      return std::nullopt;
    auto a = number(k + 2), b = number(k + 4), c = number(k + 6);
    constexpr long k_max = 1 << 16;
    if (!a || !b || !c || *a >= k_max || *b >= k_max || *c >= k_max) return std::nullopt;
    k += 8;
    return KVersion{static_cast<int>(*a), static_cast<int>(*b), static_cast<int>(*c)};
  }

  /// A version number at k: KERNEL_VERSION(a,b,c) or an integer literal; k advanced past it.
  std::optional<long> version_code(std::size_t& k) const {
    if (auto v = kernel_version(k)) return v->code();
    if (auto n = number(k)) {
      ++k;
      return n;
    }
    return std::nullopt;
  }
};

/// One version comparison in tokens [b, e): `LINUX_VERSION_CODE op V` or `V op LINUX_VERSION_CODE`
/// (V as version_code reads it), normalized to the first form. The mirrored operator is returned
/// with V's code; nullopt when the range is anything else.
std::optional<std::pair<std::string, long>> comparison(const CondTokens& ct, std::size_t b, std::size_t e) {
  static const std::map<std::string, std::string, std::less<>> k_mirror = {{">=", "<="}, {">", "<"},   {"<=", ">="},
                                                                           {"<", ">"},   {"==", "=="}, {"!=", "!="}};
  std::size_t k = b;
  if (ct.word(k, "LINUX_VERSION_CODE")) {
    ++k;
    if (k >= e || !is_comparison(ct.t[k])) return std::nullopt;
    std::string op = ct.t[k++].text;
    auto v = ct.version_code(k);
    if (!v || k != e) return std::nullopt;
    return std::pair{op, *v};
  }
  auto v = ct.version_code(k);
  if (!v || k >= e || !is_comparison(ct.t[k])) return std::nullopt;
  std::string op = k_mirror.at(ct.t[k++].text);
  if (!ct.word(k, "LINUX_VERSION_CODE") || k + 1 != e) return std::nullopt;
  return std::pair{op, *v};
}

} // namespace

bool VersionCond::eval(long code) const { return compare(code, op, v.code()); }

namespace {

/// Three-valued reading of a condition's tokens (version_condition_value): 1 true, 0 false,
/// -1 unknown.
class CondReader {
public:
  CondReader(std::vector<csrc::Token> toks, long code) : t_{std::move(toks)}, code_(code) {}

  int read() {
    int v = any();
    return i_ == t_.t.size() ? v : -1;
  }

private:
  bool at(std::string_view p) const { return t_.punct(i_, p); }

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
        if (i_ == t_.t.size() || at("&&") || at("||") || at(")")) return v;
      }
      i_ = open; // `(x) + 1 > y`: a comparison that starts with a group
    }
    return atom();
  }

  /// One operand up to the next `&&`, `||` or unmatched `)`: a version comparison or unknown.
  int atom() {
    std::size_t b = i_;
    int depth = 0;
    while (i_ < t_.t.size()) {
      if (depth == 0 && (at("&&") || at("||") || at(")"))) break;
      if (at("(")) ++depth;
      if (at(")")) --depth;
      ++i_;
    }
    auto c = comparison(t_, b, i_);
    if (!c) return -1;
    return compare(code_, c->first, c->second) ? 1 : 0;
  }

  CondTokens t_;
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
  CondTokens ct{csrc::tokenize(cond)};
  // Parentheses around all of it.
  std::size_t b = 0, e = ct.t.size();
  while (e - b >= 2 && ct.punct(b, "(") && ct.punct(e - 1, ")")) {
    int depth = 0;
    bool encloses = true;
    for (std::size_t i = b; i < e && encloses; ++i) {
      if (ct.punct(i, "(")) ++depth;
      if (ct.punct(i, ")") && --depth == 0 && i + 1 < e) encloses = false;
    }
    if (!encloses) break;
    ++b;
    --e;
  }
  // Only KERNEL_VERSION(a,b,c) on the other side: the block's boundary is a release.
  std::size_t k = ct.word(b, "LINUX_VERSION_CODE") ? b + 2 : b;
  VersionCond r;
  auto v = ct.kernel_version(k);
  auto c = comparison(ct, b, e);
  if (!v || !c) return std::nullopt;
  r.op = c->first;
  r.v = *v;
  return r;
}

} // namespace autodriver::propose
