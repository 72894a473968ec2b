#include "autodriver/apidiff/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace autodriver::apidiff {

using core::ApiChange;
using core::ChangeKind;

double name_similarity(std::string_view a, std::string_view b) {
  if (a.empty() && b.empty()) return 1.0;
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return 1.0 - static_cast<double>(row[b.size()]) / static_cast<double>(std::max(a.size(), b.size()));
}

namespace {

bool function_like(DeclKind k) { return k == DeclKind::function || k == DeclKind::macro_function; }
bool same_family(DeclKind a, DeclKind b) { return a == b || (function_like(a) && function_like(b)); }

ApiChange change(const Decl& a, const Decl* b, ChangeKind kind) {
  ApiChange c;
  c.symbol = a.name;
  c.kind = kind;
  c.from = a.signature();
  c.header_from = a.header;
  if (b) {
    c.to = b->signature();
    c.header_to = b->header;
  }
  return c;
}

const Decl* rename_candidate(const Decl& a, const DeclSet& from, const DeclSet& to) {
  const Decl* best = nullptr;
  double best_sim = k_rename_similarity;
  for (const auto& [name, d] : to.decls) {
    if (!same_family(a.kind, d.kind) || from.decls.count(name)) continue;
    if (function_like(a.kind) && (a.params.size() != d.params.size() || a.variadic != d.variadic)) continue;
    double sim = name_similarity(a.name, name);
    if (sim > best_sim || (best && sim == best_sim && name < best->name)) best = &d, best_sim = sim;
  }
  return best;
}

void diff_members(const Decl& a, const Decl& b, const std::set<std::string>& used, std::vector<ApiChange>& out) {
  for (const auto& m : a.members) {
    if (!used.count(m.name)) continue;
    const Member* n = b.member(m.name);
    auto mc = [&](ChangeKind kind, std::string to, std::string summary) {
      ApiChange c = change(a, &b, kind);
      c.member = m.name;
      c.from = m.type;
      c.to = std::move(to);
      c.summary = std::move(summary);
      out.push_back(std::move(c));
    };
    if (!n) {
      const Member* best = nullptr;
      double best_sim = 0.5;
      for (const auto& cand : b.members) {
        if (a.member(cand.name) || cand.type != m.type) continue;
        double sim = name_similarity(m.name, cand.name);
        if (sim > best_sim) best = &cand, best_sim = sim;
      }
      if (best) {
        mc(ChangeKind::member_renamed, best->type, fmt::format("{}.{} renamed to {}", a.name, m.name, best->name));
        out.back().new_name = best->name;
      } else {
        mc(ChangeKind::member_removed, "", fmt::format("{}.{} ({}) removed", a.name, m.name, m.type));
      }
    } else if (n->type != m.type) {
      bool cb = m.callback || n->callback;
      mc(cb ? ChangeKind::callback_type_changed : ChangeKind::member_retyped, n->type,
         fmt::format("{}.{}: {} -> {}", a.name, m.name, m.type, n->type));
    }
  }
}

void diff_pair(const Decl& a, const Decl& b, const DeclSet& to, const std::set<std::string>& used, std::vector<ApiChange>& out) {
  // A move the old header still covers (linux/mutex.h now includes linux/mutex_types.h) is no change
  // for the driver.
  if (!a.header.empty() && !b.header.empty() && a.header != b.header && !to.reaches(a.header, b.header)) {
    ApiChange c = change(a, &b, ChangeKind::moved_header);
    c.summary = fmt::format("{} moved from <{}> to <{}>", a.name, a.header, b.header);
    out.push_back(std::move(c));
  }
  auto push = [&](ChangeKind kind, std::string summary) {
    ApiChange c = change(a, &b, kind);
    c.summary = std::move(summary);
    out.push_back(std::move(c));
  };
  auto arity = [&](std::string_view what) {
    // A variadic side accepts every call with at least its named arguments (6.12's kzalloc(...) macro).
    bool fits = a.params.size() == b.params.size() || (b.variadic && b.params.size() <= a.params.size()) ||
                (a.variadic && a.params.size() <= b.params.size());
    if (fits) return false;
    push(a.params.size() < b.params.size() ? ChangeKind::args_added : ChangeKind::args_removed,
         fmt::format("{}: {} {} -> {} ({} -> {})", a.name, what, a.params.size(), b.params.size(), a.signature(), b.signature()));
    return true;
  };
  if (a.kind != b.kind) {
    if (function_like(a.kind) && function_like(b.kind) && arity("arguments")) return;
    // An object-like macro that became an enum constant (ethtool's TCP_V4_FLOW) is used the same way.
    auto constant = [](DeclKind k) { return k == DeclKind::macro_object || k == DeclKind::enum_constant; };
    if (constant(a.kind) && constant(b.kind)) return;
    push(ChangeKind::kind_changed,
         fmt::format("{}: {} -> {} ({} -> {})", a.name, to_string(a.kind), to_string(b.kind), a.signature(), b.signature()));
    return;
  }
  switch (a.kind) {
  case DeclKind::function: {
    if (!arity("arguments")) {
      std::string which;
      for (std::size_t i = 0; i < a.params.size(); ++i)
        if (a.params[i] != b.params[i])
          which += fmt::format("{}#{} {} -> {}", which.empty() ? "" : ", ", i + 1, a.params[i], b.params[i]);
      if (!which.empty()) push(ChangeKind::arg_retyped, fmt::format("{}: argument {}", a.name, which));
    }
    if (a.result != b.result)
      push(ChangeKind::return_type_changed, fmt::format("{}: returns {} -> {}", a.name, a.result, b.result));
    break;
  }
  case DeclKind::macro_function:
    if (a.params.size() != b.params.size() || a.variadic != b.variadic) {
      push(ChangeKind::macro_arity_changed, fmt::format("{}: macro parameters {} -> {} ({} -> {})", a.name, a.params.size(),
                                                        b.params.size(), a.signature(), b.signature()));
    }
    break;
  case DeclKind::typedef_name:
    if (a.type != b.type) push(ChangeKind::typedef_changed, fmt::format("{}: typedef {} -> {}", a.name, a.type, b.type));
    break;
  case DeclKind::record: diff_members(a, b, used, out); break;
  case DeclKind::macro_object: // bodies and values change without breaking users; not reported
  case DeclKind::enum_constant:
  case DeclKind::variable: break;
  }
}

} // namespace

std::vector<ApiChange> diff_declarations(const DeclSet& from, const DeclSet& to, const std::set<std::string>& used) {
  std::vector<ApiChange> out;
  for (const auto& ident : used) {
    for (const auto& key : {ident, "struct " + ident, "union " + ident}) {
      auto ia = from.decls.find(key);
      auto ib = to.decls.find(key);
      const Decl* a = ia == from.decls.end() ? nullptr : &ia->second;
      const Decl* b = ib == to.decls.end() ? nullptr : &ib->second;
      if (!a && !b) continue;
      if (a && b) {
        diff_pair(*a, *b, to, used, out);
      } else if (a) {
        if (const Decl* r = rename_candidate(*a, from, to)) {
          ApiChange c = change(*a, r, ChangeKind::renamed);
          c.new_name = r->name;
          c.summary = fmt::format("{} renamed to {} ({} -> {})", a->name, r->name, a->signature(), r->signature());
          out.push_back(std::move(c));
        } else {
          ApiChange c = change(*a, nullptr, ChangeKind::removed);
          c.summary = fmt::format("{} removed (was {} in <{}>)", a->name, a->signature(), a->header);
          out.push_back(std::move(c));
        }
      }
      // Only in TO: not reported; the name may as well be one of the driver's labels or locals.
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ApiChange& x, const ApiChange& y) {
    return std::tie(x.symbol, x.member) < std::tie(y.symbol, y.member);
  });
  return out;
}

} // namespace autodriver::apidiff
