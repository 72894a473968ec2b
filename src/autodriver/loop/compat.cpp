#include "autodriver/loop/compat.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <vector>

namespace autodriver::loop {

std::string kernel_version_macro(const std::string& version) {
  int a = 0, b = 0, c = 0;
  std::sscanf(version.c_str(), "%d.%d.%d", &a, &b, &c);
  return fmt::format("KERNEL_VERSION({}, {}, {})", a, b, c);
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (auto l : util::split_lines(text)) out.emplace_back(l);
  return out;
}

struct Hunk {
  std::size_t a_first, a_count, b_first, b_count;
};

/// Line LCS diff with common prefix/suffix trimmed first (ports change few lines).
std::vector<Hunk> diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  std::size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  std::size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<Hunk> out;
  if (n == 0 && m == 0) return out;
  if (n * m > 16'000'000) return {{pre, n, pre, m}};
  std::vector<std::uint32_t> t((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return t[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = a[pre + i] == b[pre + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  std::size_t i = 0, j = 0;
  bool open = false;
  Hunk cur{};
  while (i < n || j < m) {
    if (i < n && j < m && a[pre + i] == b[pre + j]) {
      if (open) out.push_back(cur), open = false;
      ++i, ++j;
      continue;
    }
    if (!open) cur = {pre + i, 0, pre + j, 0}, open = true;
    if (j < m && (i == n || at(i, j + 1) >= at(i + 1, j))) ++cur.b_count, ++j;
    else ++cur.a_count, ++i;
  }
  if (open) out.push_back(cur);
  return out;
}

} // namespace

std::string compat_merge(const std::string& original, const std::string& ported, const std::string& version) {
  if (original == ported) return ported;
  auto a = lines_of(original), b = lines_of(ported);
  auto hunks = diff_lines(a, b);
  std::string kv = kernel_version_macro(version);
  std::vector<std::string> out;
  std::size_t ai = 0;
  for (const auto& h : hunks) {
    while (ai < h.a_first) out.push_back(a[ai++]);
    if (h.b_count && h.a_count) {
      out.push_back(fmt::format("#if LINUX_VERSION_CODE >= {}", kv));
      for (std::size_t k = 0; k < h.b_count; ++k) out.push_back(b[h.b_first + k]);
      out.push_back("#else");
      for (std::size_t k = 0; k < h.a_count; ++k) out.push_back(a[h.a_first + k]);
      out.push_back("#endif");
    } else if (h.b_count) {
      out.push_back(fmt::format("#if LINUX_VERSION_CODE >= {}", kv));
      for (std::size_t k = 0; k < h.b_count; ++k) out.push_back(b[h.b_first + k]);
      out.push_back("#endif");
    } else {
      out.push_back(fmt::format("#if LINUX_VERSION_CODE < {}", kv));
      for (std::size_t k = 0; k < h.a_count; ++k) out.push_back(a[h.a_first + k]);
      out.push_back("#endif");
    }
    ai = h.a_first + h.a_count;
  }
  while (ai < a.size()) out.push_back(a[ai++]);
  // LINUX_VERSION_CODE comes from <linux/version.h>, which kbuild does not force-include.
  static const std::regex k_version_h(R"(^\s*#\s*include\s*<(linux|generated/uapi/linux)/version\.h>)");
  static const std::regex k_include(R"(^\s*#\s*include\s*[<"])");
  bool has = std::any_of(out.begin(), out.end(), [](const auto& l) { return std::regex_search(l, k_version_h); });
  if (!has) {
    auto it = std::find_if(out.begin(), out.end(), [](const auto& l) { return std::regex_search(l, k_include); });
    out.insert(it == out.end() ? out.begin() : it, "#include <linux/version.h>");
  }
  std::string s;
  for (const auto& l : out) s += l + "\n";
  return s;
}

} // namespace autodriver::loop
