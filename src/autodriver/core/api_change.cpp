#include "autodriver/core/api_change.hpp"

#include <array>
#include <utility>

namespace autodriver::core {

namespace {
constexpr std::array<std::pair<ChangeKind, std::string_view>, 15> k_names = {{
    {ChangeKind::removed, "removed"},
    {ChangeKind::renamed, "renamed"},
    {ChangeKind::args_added, "args-added"},
    {ChangeKind::args_removed, "args-removed"},
    {ChangeKind::arg_retyped, "arg-retyped"},
    {ChangeKind::return_type_changed, "return-type-changed"},
    {ChangeKind::member_removed, "member-removed"},
    {ChangeKind::member_renamed, "member-renamed"},
    {ChangeKind::member_retyped, "member-retyped"},
    {ChangeKind::callback_type_changed, "callback-type-changed"},
    {ChangeKind::macro_arity_changed, "macro-arity-changed"},
    {ChangeKind::moved_header, "moved-header"},
    {ChangeKind::kind_changed, "kind-changed"},
    {ChangeKind::typedef_changed, "typedef-changed"},
    {ChangeKind::added, "added"},
}};
} // namespace

std::string_view to_string(ChangeKind kind) {
  for (const auto& [k, n] : k_names)
    if (k == kind) return n;
  return "unknown";
}

nlohmann::json to_json(const ApiChange& c) {
  nlohmann::json j = {{"symbol", c.symbol},  {"kind", std::string(to_string(c.kind))}, {"from", c.from},
                      {"to", c.to},          {"header_from", c.header_from},           {"header_to", c.header_to},
                      {"summary", c.summary}};
  j["member"] = c.member.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.member);
  j["new_name"] = c.new_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.new_name);
  return j;
}

} // namespace autodriver::core
