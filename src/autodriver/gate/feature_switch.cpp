#include "autodriver/gate/feature_switch.hpp"

#include <algorithm>
#include <regex>

namespace autodriver::gate {

namespace {

/// The line without comments, trimmed ("#  ifdef X /* why */" -> "#  ifdef X").
std::string strip(std::string_view l) {
  std::string s(l);
  if (auto c = s.find("//"); c != std::string::npos) s.erase(c);
  for (auto a = s.find("/*"); a != std::string::npos; a = s.find("/*")) {
    auto b = s.find("*/", a + 2);
    s.erase(a, b == std::string::npos ? std::string::npos : b + 2 - a);
  }
  auto first = s.find_first_not_of(" \t\r");
  auto last = s.find_last_not_of(" \t\r");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

bool candidate_macro(const std::string& m) {
  // kbuild's own -D macros (KBUILD_MODNAME, MODULE) and the kernel's configuration are never a
  // driver's feature switch.
  return !m.starts_with("CONFIG_") && !m.starts_with("KBUILD_") && !m.starts_with("__") && m != "MODULE" &&
         m != "LINUX_VERSION_CODE";
}

struct Frame {
  SwitchTest test;
  bool simple = false; ///< one macro, no #elif seen
  bool guard = false;  ///< the include guard (#ifndef X then #define X first thing)
};

} // namespace

std::vector<SwitchTest> switch_tests(std::string_view text) {
  static const std::regex k_dir(R"(^#\s*(ifdef|ifndef|if|elif|else|endif)\b\s*(.*)$)");
  static const std::regex k_ident(R"(^([A-Za-z_]\w*)$)");
  static const std::regex k_defined(R"(^(!\s*)?defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|\s+([A-Za-z_]\w*))$)");
  static const std::regex k_value(R"(^(!\s*)?([A-Za-z_]\w*)$)");
  std::vector<SwitchTest> out;
  std::vector<Frame> stack;
  int line_no = 0, guards = 0;
  bool seen_directive = false;
  std::size_t pos = 0;
  std::string pending_guard; // `#ifndef X` as the first directive: a guard if `#define X` follows
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    std::string l = strip(raw);
    if (l.empty() || l[0] != '#') {
      if (!l.empty()) pending_guard.clear();
      continue;
    }
    if (!pending_guard.empty()) {
      static const std::regex k_def(R"(^#\s*define\s+([A-Za-z_]\w*))");
      std::smatch dm;
      if (std::regex_search(l, dm, k_def) && dm[1].str() == pending_guard && !stack.empty()) {
        stack.back().guard = true;
        ++guards;
      }
      pending_guard.clear();
    }
    std::smatch m;
    if (!std::regex_match(l, m, k_dir)) {
      seen_directive = true;
      continue;
    }
    std::string word = m[1].str(), rest = strip(m[2].str());
    if (word == "ifdef" || word == "ifndef" || word == "if") {
      Frame f;
      f.test.if_line = line_no;
      f.test.depth = static_cast<int>(stack.size()) - guards;
      std::smatch a;
      if ((word == "ifdef" || word == "ifndef") && std::regex_match(rest, a, k_ident)) {
        f.test.macro = a[1].str();
        f.test.first_if_defined = word == "ifdef";
        f.simple = true;
        if (word == "ifndef" && !seen_directive && stack.empty()) pending_guard = f.test.macro;
      } else if (word == "if" && std::regex_match(rest, a, k_defined)) {
        f.test.macro = a[2].matched ? a[2].str() : a[3].str();
        f.test.first_if_defined = !a[1].matched;
        f.simple = true;
      } else if (word == "if" && std::regex_match(rest, a, k_value) && a[2].str() != "defined") {
        f.test.macro = a[2].str();
        f.test.first_if_defined = !a[1].matched;
        f.test.value_test = true;
        f.simple = true;
      }
      stack.push_back(std::move(f));
    } else if (word == "elif") {
      if (!stack.empty()) stack.back().simple = false;
    } else if (word == "else") {
      if (!stack.empty()) stack.back().test.else_line = line_no;
    } else if (!stack.empty()) { // endif
      Frame f = std::move(stack.back());
      stack.pop_back();
      if (f.guard) --guards;
      f.test.endif_line = line_no;
      f.test.has_else = f.test.else_line > 0;
      if (f.simple && !f.guard && candidate_macro(f.test.macro)) out.push_back(std::move(f.test));
    }
    seen_directive = true;
  }
  return out;
}

std::vector<const SwitchTest*> switches_off_at(const std::vector<SwitchTest>& tests, int line) {
  std::vector<const SwitchTest*> out;
  for (const auto& t : tests) {
    if (line <= t.if_line || line >= t.endif_line || line == t.else_line) continue;
    // a one-sided test counts when M selects between implementations elsewhere: a two-branch
    // test, or one-sided tests of both polarities (`#ifndef M` fallback, `#ifdef M` new code)
    if (!t.has_else && std::none_of(tests.begin(), tests.end(), [&](const SwitchTest& o) {
          return o.macro == t.macro && (o.has_else || o.first_if_defined != t.first_if_defined);
        }))
      continue;
    bool in_first = !t.has_else || line < t.else_line;
    // compiled while M is undefined: the first branch of `#ifndef M`, the second of `#ifdef M`
    if (in_first != t.first_if_defined) out.push_back(&t);
  }
  return out;
}

std::string defined_switch(std::string_view line) {
  static const std::regex k_def(R"(^#\s*define\s+([A-Za-z_]\w*)(?:\s+1)?$)");
  std::string l = strip(line);
  std::smatch m;
  return std::regex_match(l, m, k_def) ? m[1].str() : std::string();
}

} // namespace autodriver::gate
