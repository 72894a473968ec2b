#include "autodriver/crash/alloc_size.hpp"

#include "autodriver/csrc/tokens.hpp"

#include <map>
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
  // How many `*` each name is declared with, by the type it is declared with (`struct rx *rxs;`:
  // rxs -> {"struct rx", 1}); a name declared more than one way is left out.
  std::map<std::string, std::pair<std::string, std::size_t>> declared;
  std::set<std::string> ambiguous;
  for (const auto& f : driver) {
    const auto& t = f.toks;
    for (std::size_t n = 2; n + 1 < t.size(); ++n) {
      // What may follow a declared name: the declaration's end, an initializer, an array, or an
      // attribute macro (`____cacheline_aligned`, `__aligned(8)`).
      const auto& next = t[n + 1].text;
      if (t[n].kind != csrc::TokKind::ident || t[n - 1].text != "*" ||
          (next != ";" && next != "," && next != "=" && next != ")" && next != "[" && !next.starts_with("__")))
        continue;
      std::size_t k = n - 1, stars = 0;
      while (k > 0 && t[k].text == "*") --k, ++stars;
      if (t[k].kind != csrc::TokKind::ident) continue;
      std::string type = t[k].text;
      if (k > 0 && (t[k - 1].text == "struct" || t[k - 1].text == "union")) type = t[k - 1].text + " " + type;
      auto [it, fresh] = declared.try_emplace(t[n].text, type, stars);
      if (!fresh && it->second != std::make_pair(type, stars)) ambiguous.insert(t[n].text);
    }
  }
  for (const auto& a : ambiguous) declared.erase(a);
  std::vector<PointerSizedAlloc> out;
  for (const auto& f : driver) {
    const auto& t = f.toks;
    for (std::size_t k = 0; k + 3 < t.size(); ++k) {
      if (t[k].text != "sizeof" || t[k + 1].text != "(") continue;
      const std::size_t close = csrc::matching_close(t, k + 1);
      if (close == std::string::npos || close < k + 3) continue;
      const auto [operand, end] = csrc::object_path(t, k + 2);
      // `sizeof(T *)`: the type's tokens, then only stars.
      std::size_t star = close - 1, stars = 0;
      while (star > k + 2 && t[star].text == "*") --star, ++stars;
      std::string type;
      if (stars && t[star].kind == csrc::TokKind::ident &&
          (star == k + 2 || (star == k + 3 && (t[k + 2].text == "struct" || t[k + 2].text == "union"))))
        type = star == k + 2 ? t[star].text : t[k + 2].text + " " + t[star].text;
      if (type.empty() && (operand.empty() || end + 1 != close || !pointers.count(operand))) continue;
      // The statement holding it sizes an allocation (`x = call(..., sizeof(p), ...)`) or keeps the
      // size in a local (`int size = sizeof(p);`).
      std::size_t s = k;
      while (s > 0 && t[s - 1].text != ";" && t[s - 1].text != "{" && t[s - 1].text != "}") --s;
      std::string callee, assigned;
      bool sized = false;
      for (std::size_t eq = s; eq < k; ++eq) {
        if (t[eq].text != "=") continue;
        if (eq + 2 < k && t[eq + 1].kind == csrc::TokKind::ident && t[eq + 2].text == "(") {
          callee = t[eq + 1].text;
          assigned = csrc::path_ending_at(t, eq - 1);
        }
        sized = sized || !callee.empty() || eq + 1 == k;
      }
      if (!sized) continue;
      PointerSizedAlloc a{f.rel, "", t[k].line, operand, callee, t[k + 2].begin};
      if (!type.empty()) {
        // The memory goes to a pointer declared with as many stars as the sizeof's type: its
        // elements are what the type points to, not pointers.
        auto d = declared.find(csrc::last_member(assigned));
        if (callee.empty() || assigned.empty() || d == declared.end() || d->second != std::make_pair(type, stars)) continue;
        a.target = assigned;
        a.star_at = t[close - 1].begin;
        a.type = type + " " + std::string(stars, '*');
      }
      for (const auto& u : f.units)
        if (u.kind == csrc::UnitKind::function && u.body < s && s < u.last) a.function = u.name;
      out.push_back(std::move(a));
    }
  }
  return out;
}

} // namespace autodriver::crash
