#pragma once
// What one kernel declares, read with libclang from a driver's translation unit compiled with
// kbuild's own flags: function prototypes, macros, struct/union members, enum constants, typedefs.

#include "autodriver/util/expected.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::apidiff {

enum class DeclKind { function, macro_function, macro_object, record, enum_constant, typedef_name, variable };
std::string_view to_string(DeclKind kind);

struct Member {
  std::string name;
  std::string type;      ///< as spelled: "int (*)(struct i2c_client *)"
  bool callback = false; ///< pointer to function (an ops/driver callback)
};

struct Decl {
  std::string name; ///< ordinary identifier, or "struct x" / "union x"
  DeclKind kind = DeclKind::function;
  std::string header; ///< include-relative path of the declaring file ("linux/i2c.h")
  unsigned line = 0;
  std::string result;              ///< function: return type
  std::vector<std::string> params; ///< function: parameter types; macro_function: parameter names
  bool variadic = false;
  std::string type;            ///< typedef: underlying type; variable: type; enum constant: value; object macro: body
  std::vector<Member> members; ///< record (anonymous struct/union members flattened)

  /// One line: "int f(struct device *, int)", "#define M(a, b)", "struct x { 12 members }", ...
  std::string signature() const;
  const Member* member(std::string_view member_name) const;
};

/// Declarations visible in one translation unit, keyed by name. Where a macro and a declaration
/// share a name the macro is kept (it is what the driver's code sees).
struct DeclSet {
  std::map<std::string, Decl> decls;
  std::set<std::string> used; ///< identifiers in the driver file itself (clang_tokenize)
  /// Header key -> header keys it #includes (every directive, also those skipped by include guards).
  std::map<std::string, std::set<std::string>> includes;
  int parse_errors = 0;                   ///< clang errors (gcc-isms clang rejects); declarations still come
  std::vector<std::string> error_samples; ///< the first few, "file:line:col: message"

  /// The declaration `identifier` refers to: the ordinary name, else "struct x", else "union x".
  const Decl* find(const std::string& identifier) const;
  /// True when including `from_header` brings in `to_header` (directly or through other headers).
  bool reaches(const std::string& from_header, const std::string& to_header) const;
};

struct ParseOptions {
  std::uintmax_t max_source_bytes = 1024 * 1024; ///< larger driver files are refused (parse is in-process)
  std::filesystem::path exclude_root;            ///< declarations in files under it are the driver's own
};

/// Parses `source` with `clang_args` (clang-compatible, without the compiler name, -c, -o or the source).
util::Expected<DeclSet> read_declarations(const std::filesystem::path& source, const std::vector<std::string>& clang_args,
                                          const ParseOptions& options);

/// ".../include/linux/i2c.h" -> "linux/i2c.h" (path after the last "/include/", without "generated/");
/// the file name when there is no include directory in the path.
std::string header_key(std::string_view path);

/// Replaces libclang's "(unnamed struct at /path:1:2)" by "(unnamed struct)" so types compare across trees.
std::string normalize_type(std::string type);

} // namespace autodriver::apidiff
