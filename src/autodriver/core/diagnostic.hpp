#pragma once
// A compiler / kbuild / modpost / sparse finding, structured.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::core {

enum class Severity : int { error = 1, warning = 2, note = 3, fatal = 4 };

/// Closed set of diagnostic kinds. Numbers are persisted and never reused.
enum class DiagKind : int {
  other = 0,
  implicit_function_declaration = 1,
  too_few_arguments = 2,
  too_many_arguments = 3,
  no_member = 4,
  incompatible_pointer_type = 5,
  incompatible_return_type = 6,
  unknown_type = 7,
  undeclared_identifier = 8,
  incomplete_type = 9,
  conflicting_types = 10,
  missing_header = 11,
  modpost_undefined_symbol = 12,
  incompatible_type = 13, ///< "incompatible type for argument N of 'f'"
  int_conversion = 14,    ///< "makes pointer from integer without a cast" and friends
  syntax_error = 15,      ///< "expected ';' before ..."
  deprecated = 16,
  modpost_other = 17,
  sparse = 18,           ///< any sparse finding
  linker = 19,           ///< ld errors
  const_qualifier = 20,  ///< "discards 'const' qualifier"
  read_only_member = 21, ///< "assignment of read-only member 'vm_flags'" (an accessor replaced it)
};

std::string_view to_string(DiagKind kind);
std::optional<DiagKind> diag_kind_from_string(std::string_view s);
std::string_view to_string(Severity s);

/// A "note:" attached to a diagnostic, typically pointing into a kernel header.
struct DiagNote {
  std::string file;
  int line = 0;
  int column = 0;
  std::string message;
};

struct Diagnostic {
  std::string tool = "gcc"; ///< gcc, modpost, sparse, ld, make
  std::string file;         ///< as printed, made relative to the tree when inside it
  int line = 0;
  int column = 0;
  Severity severity = Severity::error;
  DiagKind kind = DiagKind::other;
  std::vector<std::string> symbols; ///< function, type, member, header ... the message names
  std::string message;              ///< the message text without location and severity
  std::string function;             ///< enclosing function ("In function 'x'"), if known
  std::string flag;                 ///< e.g. -Werror=implicit-function-declaration
  std::vector<DiagNote> notes;
  std::string raw; ///< the original lines, notes included

  /// Location-free identity used to compare diagnostics across trees and iterations.
  std::string signature() const;
};

nlohmann::json to_json(const Diagnostic& d);
Diagnostic diagnostic_from_json(const nlohmann::json& j);

} // namespace autodriver::core
