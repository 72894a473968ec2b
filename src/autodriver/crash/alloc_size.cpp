#include "autodriver/crash/alloc_size.hpp"

#include "autodriver/csrc/tokens.hpp"

#include <set>

namespace autodriver::crash {

namespace {

/// Tokens [first, last] as an object path `a`, `a->b.c` (identifiers joined by -> or .), or "".
std::string path_text(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last) {
  if (first > last || (last - first) % 2 != 0) return "";
  std::string out;
  for (std::size_t i = first; i <= last; ++i) {
    const bool name = (i - first) % 2 == 0;
    if (name ? t[i].kind != csrc::TokKind::ident : (t[i].text != "->" && t[i].text != ".")) return "";
    out += t[i].text;
  }
  return out;
}

} // namespace

std::vector<PointerSizedAlloc> pointer_sized_allocs(const std::vector<DriverFile>& driver) {
  // Paths the driver assigns a call's result to (`p->ring = kcalloc(...)`, also in a chain
  // `vdev->priv = vb = kzalloc(...)`): pointers to memory, whose sizeof is a pointer's.
  std::set<std::string> pointers;
  for (const auto& f : driver) {
    const auto& t = f.toks;
    for (std::size_t eq = 1; eq + 2 < t.size(); ++eq) {
      if (t[eq].text != "=" || t[eq + 1].kind != csrc::TokKind::ident || t[eq + 2].text != "(") continue;
      std::size_t j = eq - 1;
      while (j >= 2 && (t[j - 1].text == "->" || t[j - 1].text == ".") && t[j - 2].kind == csrc::TokKind::ident) j -= 2;
      if (const auto p = path_text(t, j, eq - 1); !p.empty()) pointers.insert(p);
    }
  }
  std::vector<PointerSizedAlloc> out;
  for (const auto& f : driver) {
    const auto& t = f.toks;
    for (std::size_t k = 0; k + 3 < t.size(); ++k) {
      if (t[k].text != "sizeof" || t[k + 1].text != "(") continue;
      const std::size_t close = csrc::matching_close(t, k + 1);
      if (close == std::string::npos || close < k + 3) continue;
      const std::string operand = path_text(t, k + 2, close - 1);
      if (operand.empty() || !pointers.count(operand)) continue;
      // The statement holding it sizes an allocation (`x = call(..., sizeof(p), ...)`) or keeps the
      // size in a local (`int size = sizeof(p);`).
      std::size_t s = k;
      while (s > 0 && t[s - 1].text != ";" && t[s - 1].text != "{" && t[s - 1].text != "}") --s;
      std::string callee;
      bool sized = false;
      for (std::size_t eq = s; eq < k; ++eq) {
        if (t[eq].text != "=") continue;
        if (eq + 2 < k && t[eq + 1].kind == csrc::TokKind::ident && t[eq + 2].text == "(") callee = t[eq + 1].text;
        sized = sized || !callee.empty() || eq + 1 == k;
      }
      if (!sized) continue;
      std::string function;
      for (const auto& u : f.units)
        if (u.kind == csrc::UnitKind::function && u.body < s && s < u.last) function = u.name;
      out.push_back({f.rel, function, t[k].line, operand, callee, t[k + 2].begin});
    }
  }
  return out;
}

} // namespace autodriver::crash
