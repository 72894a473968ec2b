#include "autodriver/crash/alloc_size.hpp"

#include "autodriver/csrc/tokens.hpp"

#include <set>

namespace autodriver::crash {

std::vector<PointerSizedAlloc> pointer_sized_allocs(const std::vector<DriverFile>& driver) {
  // Paths the driver assigns a call's result to (`p->ring = kcalloc(...)`, also in a chain
  // `vdev->priv = vb = kzalloc(...)`): pointers to memory, whose sizeof is a pointer's.
  std::set<std::string> pointers;
  for (const auto& f : driver) {
    const auto& t = f.toks;
    for (std::size_t eq = 1; eq + 2 < t.size(); ++eq) {
      if (t[eq].text != "=" || t[eq + 1].kind != csrc::TokKind::ident || t[eq + 2].text != "(") continue;
      if (auto p = csrc::path_ending_at(t, eq - 1); !p.empty()) pointers.insert(std::move(p));
    }
  }
  std::vector<PointerSizedAlloc> out;
  for (const auto& f : driver) {
    const auto& t = f.toks;
    for (std::size_t k = 0; k + 3 < t.size(); ++k) {
      if (t[k].text != "sizeof" || t[k + 1].text != "(") continue;
      const std::size_t close = csrc::matching_close(t, k + 1);
      if (close == std::string::npos || close < k + 3) continue;
      const auto [operand, end] = csrc::object_path(t, k + 2);
      if (operand.empty() || end + 1 != close || !pointers.count(operand)) continue;
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
