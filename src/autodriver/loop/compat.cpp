#include "autodriver/loop/compat.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
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

std::string compat_merge(const std::string& original, const std::string& ported, const GuardFor& guard_for,
                         std::vector<Guard>* guards) {
  if (original == ported) return ported;
  auto a = lines_of(original), b = lines_of(ported);
  auto hunks = diff_lines(a, b);
  std::vector<std::string> out;
  std::size_t ai = 0;
  for (const auto& h : hunks) {
    while (ai < h.a_first) out.push_back(a[ai++]);
    std::vector<std::string> olds(a.begin() + static_cast<std::ptrdiff_t>(h.a_first),
                                  a.begin() + static_cast<std::ptrdiff_t>(h.a_first + h.a_count));
    std::vector<std::string> news(b.begin() + static_cast<std::ptrdiff_t>(h.b_first),
                                  b.begin() + static_cast<std::ptrdiff_t>(h.b_first + h.b_count));
    GuardChoice g = guard_for(olds, news);
    std::string kv = kernel_version_macro(g.version);
    if (guards) guards->push_back({static_cast<int>(out.size()) + 1, g});
    if (h.b_count && h.a_count) {
      out.push_back(fmt::format("#if LINUX_VERSION_CODE >= {}", kv));
      out.insert(out.end(), news.begin(), news.end());
      out.push_back("#else");
      out.insert(out.end(), olds.begin(), olds.end());
      out.push_back("#endif");
    } else if (h.b_count) {
      out.push_back(fmt::format("#if LINUX_VERSION_CODE >= {}", kv));
      out.insert(out.end(), news.begin(), news.end());
      out.push_back("#endif");
    } else {
      out.push_back(fmt::format("#if LINUX_VERSION_CODE < {}", kv));
      out.insert(out.end(), olds.begin(), olds.end());
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
    auto at = it == out.end() ? out.begin() : it;
    int inserted_at = static_cast<int>(at - out.begin()) + 1;
    out.insert(at, "#include <linux/version.h>");
    if (guards)
      for (auto& g : *guards)
        if (g.line >= inserted_at) ++g.line;
  }
  std::string s;
  for (const auto& l : out) s += l + "\n";
  return s;
}

std::string compat_merge(const std::string& original, const std::string& ported, const std::string& version) {
  return compat_merge(original, ported, [&](const auto&, const auto&) { return GuardChoice{version, "target"}; });
}

namespace {

std::set<std::string> identifiers(const std::vector<std::string>& lines) {
  static const std::regex k_ident(R"([A-Za-z_][A-Za-z0-9_]*)");
  std::set<std::string> out;
  for (const auto& l : lines)
    for (auto it = std::sregex_iterator(l.begin(), l.end(), k_ident); it != std::sregex_iterator(); ++it) out.insert(it->str());
  return out;
}

} // namespace

GuardFor kb_guards(const propose::Kb& kb, long after_code, long to_code, std::string fallback) {
  // old-side symbol (first in KbChange::symbols) -> its entries.
  auto by_symbol = std::make_shared<std::map<std::string, std::vector<const propose::KbEntry*>>>();
  for (const auto& e : kb.entries)
    if (!e.change.symbols.empty()) (*by_symbol)[e.change.symbols.front()].push_back(&e);
  return [by_symbol, after_code, to_code, fallback](const std::vector<std::string>& olds,
                                                    const std::vector<std::string>& news) -> GuardChoice {
    auto io = identifiers(olds), in = identifiers(news);
    std::set<std::string> changed;
    std::set_symmetric_difference(io.begin(), io.end(), in.begin(), in.end(), std::inserter(changed, changed.end()));
    // Votes per boundary from the entries whose old-side symbol the hunk names: twice when the
    // hunk removes or adds that identifier (a rename), once when it stays (its arguments or
    // members changed: class_create(THIS_MODULE, n) -> class_create(n)). Each entry sits under
    // one symbol, so it votes once.
    std::set<std::string> named = io;
    named.insert(in.begin(), in.end());
    std::map<std::string, std::pair<int, const propose::KbEntry*>> votes;
    for (const auto& id : named) {
      auto it = by_symbol->find(id);
      if (it == by_symbol->end()) continue;
      for (const auto* e : it->second) {
        auto v = propose::parse_kversion(e->boundary);
        if (v.code() <= after_code || v.code() > to_code) continue;
        bool strong = changed.count(id) > 0;
        auto& slot = votes[v.str()];
        slot.first += strong ? 2 : 1;
        if (!slot.second) slot.second = e;
      }
    }
    if (votes.empty()) return {fallback, "target"};
    auto best = std::max_element(votes.begin(), votes.end(), [](const auto& x, const auto& y) {
      if (x.second.first != y.second.first) return x.second.first < y.second.first;
      return propose::parse_kversion(x.first) < propose::parse_kversion(y.first);
    });
    const auto* e = best->second.second;
    return {best->first, fmt::format("kb:{} ({})", e->id, e->provenance.package)};
  };
}

} // namespace autodriver::loop
