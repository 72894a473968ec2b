#include "autodriver/loop/api_changes.hpp"

#include <algorithm>

namespace autodriver::loop {

namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return !s.empty() && std::find(v.begin(), v.end(), s) != v.end();
}

std::string tag_name(const std::string& symbol) {
  for (std::string_view p : {"struct ", "union "})
    if (symbol.starts_with(p)) return symbol.substr(p.size());
  return symbol;
}

} // namespace

bool change_explains(const core::ApiChange& c, const core::Diagnostic& d) {
  using core::ChangeKind;
  if (c.kind == ChangeKind::moved_header) return has(d.symbols, c.header_from);
  if (c.member.empty()) return has(d.symbols, c.symbol);
  // Member changes: gcc names the member (no-member) or, for an initializer of a retyped
  // callback, the two function-pointer types.
  if (has(d.symbols, c.to) && has(d.symbols, c.from)) return true;
  bool names_struct =
      has(d.symbols, c.symbol) || has(d.symbols, tag_name(c.symbol)) || d.message.find(c.symbol) != std::string::npos;
  return has(d.symbols, c.member) && names_struct;
}

nlohmann::json changes_for_diagnostics(const std::vector<core::ApiChange>& changes,
                                       const std::vector<core::Diagnostic>& diagnostics) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diagnostics) {
    nlohmann::json matched = nlohmann::json::array();
    for (const auto& c : changes)
      if (change_explains(c, d)) matched.push_back(core::to_json(c));
    if (matched.empty()) continue;
    out.push_back({{"diagnostic",
                    {{"file", d.file}, {"line", d.line}, {"kind", std::string(core::to_string(d.kind))}, {"message", d.message}}},
                   {"changes", std::move(matched)}});
  }
  return out;
}

} // namespace autodriver::loop
