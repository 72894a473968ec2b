#include "autodriver/core/diagnostic.hpp"
#include "autodriver/util/json_text.hpp"

#include <array>
#include <utility>

namespace autodriver::core {

namespace {
constexpr std::array<std::pair<DiagKind, std::string_view>, 22> k_kind_names{{
    {DiagKind::other, "other"},
    {DiagKind::implicit_function_declaration, "implicit-function-declaration"},
    {DiagKind::too_few_arguments, "too-few-arguments"},
    {DiagKind::too_many_arguments, "too-many-arguments"},
    {DiagKind::no_member, "no-member"},
    {DiagKind::incompatible_pointer_type, "incompatible-pointer-type"},
    {DiagKind::incompatible_return_type, "incompatible-return-type"},
    {DiagKind::unknown_type, "unknown-type"},
    {DiagKind::undeclared_identifier, "undeclared-identifier"},
    {DiagKind::incomplete_type, "incomplete-type"},
    {DiagKind::conflicting_types, "conflicting-types"},
    {DiagKind::missing_header, "missing-header"},
    {DiagKind::modpost_undefined_symbol, "modpost-undefined-symbol"},
    {DiagKind::incompatible_type, "incompatible-type"},
    {DiagKind::int_conversion, "int-conversion"},
    {DiagKind::syntax_error, "syntax-error"},
    {DiagKind::deprecated, "deprecated"},
    {DiagKind::modpost_other, "modpost-other"},
    {DiagKind::sparse, "sparse"},
    {DiagKind::linker, "linker"},
    {DiagKind::const_qualifier, "const-qualifier"},
    {DiagKind::read_only_member, "read-only-member"},
}};
} // namespace

std::string_view to_string(DiagKind kind) {
  for (const auto& [k, name] : k_kind_names)
    if (k == kind) return name;
  return "other";
}

std::optional<DiagKind> diag_kind_from_string(std::string_view s) {
  for (const auto& [k, name] : k_kind_names)
    if (name == s) return k;
  return std::nullopt;
}

std::string_view to_string(Severity s) {
  switch (s) {
  case Severity::error: return "error";
  case Severity::warning: return "warning";
  case Severity::note: return "note";
  case Severity::fatal: return "fatal";
  }
  return "error";
}

std::string Diagnostic::signature() const {
  std::string sig = std::string(to_string(kind)) + "|" + file + "|" + message;
  return sig;
}

nlohmann::json to_json(const Diagnostic& d) {
  nlohmann::json notes = nlohmann::json::array();
  for (const auto& n : d.notes)
    notes.push_back({{"file", n.file}, {"line", n.line}, {"column", n.column}, {"message", n.message}});
  return {{"tool", d.tool},
          {"file", d.file},
          {"line", d.line},
          {"column", d.column},
          {"severity", to_string(d.severity)},
          {"kind", to_string(d.kind)},
          {"symbols", d.symbols},
          {"message", d.message},
          {"function", d.function},
          {"flag", d.flag},
          {"notes", notes},
          {"raw", d.raw}};
}

Diagnostic diagnostic_from_json(const nlohmann::json& j) {
  using util::json_get;
  Diagnostic d;
  d.tool = json_get(j, "tool", "gcc");
  d.file = json_get(j, "file", "");
  d.line = json_get(j, "line", 0);
  d.column = json_get(j, "column", 0);
  std::string sev = json_get(j, "severity", "error");
  d.severity = sev == "warning" ? Severity::warning
               : sev == "note"  ? Severity::note
               : sev == "fatal" ? Severity::fatal
                                : Severity::error;
  d.kind = diag_kind_from_string(json_get(j, "kind", "other")).value_or(DiagKind::other);
  d.symbols = json_get(j, "symbols", std::vector<std::string>{});
  d.message = json_get(j, "message", "");
  d.function = json_get(j, "function", "");
  d.flag = json_get(j, "flag", "");
  auto notes = json_get(j, "notes", nlohmann::json::array());
  if (notes.is_array())
    for (const auto& n : notes)
      d.notes.push_back({json_get(n, "file", ""), json_get(n, "line", 0), json_get(n, "column", 0), json_get(n, "message", "")});
  d.raw = json_get(j, "raw", "");
  return d;
}

} // namespace autodriver::core
