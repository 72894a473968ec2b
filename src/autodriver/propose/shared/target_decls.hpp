#pragma once
// What the target kernel declares: prototypes read from its headers, the names it declares,
// struct members, and how its own code calls a function. Everything the target-only proposer
// knows comes from here (the target's headers and source tree), never from a table.

#include "autodriver/core/diagnostic.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace autodriver::propose {

struct Param {
  std::string type; ///< "const char *"
  std::string name; ///< "name" (may be empty)
};

struct Prototype {
  std::string name;
  std::string ret;
  std::vector<Param> params;
  bool is_macro = false;
  bool variadic = false;
  std::string header; ///< where it was found
  std::string text;   ///< the declaration as written
};

/// Split at commas outside parentheses/brackets/braces, trimmed ("a, f(b, c)" -> "a", "f(b, c)").
std::vector<std::string> split_top_level(const std::string& s);

/// Parse "ret name(type a, type b)" (a declaration up to ';' or '{') or "#define name(a, b)".
std::optional<Prototype> parse_prototype(const std::string& decl, const std::string& name);

/// Reads the declaration of `name` starting at `line` of `file` (a gcc "declared here" note).
std::optional<Prototype> prototype_at(const std::filesystem::path& file, int line, const std::string& name);

class TargetIndex {
public:
  /// `src` is the target's source tree (for callers and headers); `build_dir` its kbuild dir.
  TargetIndex(std::filesystem::path src, std::filesystem::path build_dir);

  /// Prototype of `name` from a diagnostic's notes, else from a search of the target headers.
  std::optional<Prototype> prototype(const std::string& name, const core::Diagnostic* d);

  /// Every function/macro name declared in the target's main include dirs (built once, cached on disk).
  const std::set<std::string>& names();

  /// Member names of `struct tag` in the target headers (empty if not found).
  std::vector<std::string> struct_members(const std::string& tag);
  /// Members of `struct tag` with their declared types ("u32 *" for `u32 *indir;`, "u8 *" for
  /// `u8 key[16];`); function-pointer members have an empty type.
  std::vector<Param> struct_member_types(const std::string& tag);
  /// The members of `struct tag` that are function pointers ("(*name)(...)").
  std::set<std::string> function_pointer_members(const std::string& tag);
  /// The parameter types of function-pointer member `name` of `struct tag` (names dropped,
  /// const kept: "struct file *", "struct dir_context *"); nullopt when it is not one.
  std::optional<std::vector<std::string>> function_member_params(const std::string& tag, const std::string& name);

  /// Argument texts the target's own callers pass, per position, for calls with `arity` arguments.
  std::vector<std::map<std::string, int>> caller_args(const std::string& name, std::size_t arity, int* calls = nullptr);
  /// How the target's callers test what `name` returned, counted (result_test.hpp).
  struct ResultTests {
    int is_err = 0; ///< `if (IS_ERR(x))` after `x = name(...);`
    int null = 0;   ///< `if (!x)`, `if (x == NULL)`
  };
  ResultTests result_tests(const std::string& name);

  /// How the target's own implementations of callback member `member` (assigned as `.member = fn`)
  /// with `arity` parameters are written.
  struct CallbackUsage {
    std::vector<std::string> param_names; ///< by majority per position ("" when none)
    /// Locals initialised at the top of their bodies from the parameters, per type (const
    /// dropped, no spaces): "structi2c_device_id*" -> {"i2c_client_get_device_id($0)": 40}.
    std::map<std::string, std::map<std::string, int>> locals;
    /// Each implementation's parameter names, by "file|function".
    std::map<std::string, std::vector<std::string>> by_function;
    /// Each implementation's body, braces included, by "file|function".
    std::map<std::string, std::string> bodies;
  };
  /// Only implementations whose parameter types are `types` (const and spaces ignored) count.
  CallbackUsage callback_usage(const std::string& member, const std::vector<std::string>& types);

  /// Some header of the target's include dirs names `name` as a whole word (enum constants,
  /// which names() does not list).
  bool in_headers(const std::string& name);

  /// The target header that defines `struct tag { ... }` (absolute path), empty when none does.
  std::filesystem::path header_defining(const std::string& tag);

  /// The replacement text of the target's first `#define name(...)` (continuations joined),
  /// empty when it defines no such macro.
  std::string macro_body(const std::string& name);

  /// The parameters, names included, of the target's function-pointer typedef `name`
  /// (`typedef void (*io_notify_fn)(unsigned long error, unsigned long unsup, void *context);`);
  /// nullopt when the target has no such typedef.
  std::optional<std::vector<Param>> function_typedef_params(const std::string& name);

  /// How many target .c files use `name` (capped grep).
  int usage_count(const std::string& name);

  /// Functions the target kernel itself declares deprecated: the section titles of
  /// Documentation/process/deprecated.rst that name functions ("strncpy() on NUL-terminated strings").
  const std::set<std::string>& deprecated();

  /// What Documentation/filesystems/porting.rst, the kernel's own porting notes, says of a
  /// name that "is gone": its replacement ("iov_iter_copy_from_user_atomic() is gone; use
  /// copy_page_from_iter_atomic()") or that a table entry naming it is simply dropped
  /// ("no_llseek is gone; don't set .llseek to that - just leave it NULL instead").
  struct PortingNote {
    std::string use;      ///< the replacement identifier, empty when the note names none
    bool drop = false;    ///< "leave it NULL" / "just remove it"
    std::string where;    ///< "Documentation/filesystems/porting.rst:917"
    std::string sentence; ///< the note's first sentence
  };
  /// Keyed by the vanished name; ops members ("->readdir() is gone") are not listed.
  const std::map<std::string, PortingNote>& porting_notes();

  /// What the target's Documentation (*.rst, *.txt) says replaced `name`, which the target no
  /// longer declares: a paragraph naming it, or the body of a `.. c:function::` directive listing
  /// it among older interfaces, that speaks of a replacement ("ktime_get_real_ts64() is a direct
  /// replacement", "use X instead"). `names` are the functions that text names (`f()`), in the
  /// order it names them, without the directive's own old names; the caller keeps those the
  /// target declares and the call fits.
  struct DocReplacement {
    std::vector<std::string> names;
    std::string where;    ///< "Documentation/core-api/timekeeping.rst:157"
    std::string sentence; ///< the text's first sentence that names a replacement
  };
  std::optional<DocReplacement> documented_replacement(const std::string& name);

private:
  std::filesystem::path m_src, m_build;
  std::map<std::string, PortingNote> m_notes;
  bool m_notes_loaded = false;
  std::set<std::string> m_names;
  bool m_names_loaded = false;
  std::set<std::string> m_deprecated;
  std::map<std::string, std::set<std::string>> m_fn_members;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> m_fn_params;
  std::map<std::string, std::vector<Param>> m_members;
  bool m_deprecated_loaded = false;
};

/// C tokens joined as a person writes them: "f(&pdev->dev, 0)", "a + b".
std::string join_c_tokens(const std::vector<std::string>& tokens);

/// A plain integer type ("int", "size_t", "unsigned long", "u8"): no pointer, struct, array or bool.
bool integer_type(const std::string& type);

/// A parameter's type without its name ("const struct ktermios *old" -> "const struct ktermios *").
std::string param_type_only(const std::string& param);

/// The parameter types of a parameter list's text (what is between its parentheses), names
/// dropped; "void" and "" are no parameters.
std::vector<std::string> param_types(const std::string& list);

/// Type tokens joined as the kernel writes a type: words apart, stars on the name's side
/// ("const", "struct", "a", "*", "*" -> "const struct a **").
std::string type_text(const std::vector<std::string>& tokens);

/// The `_`-separated words of a name, empty pieces skipped ("cpu__core_id" -> cpu, core, id).
std::vector<std::string> name_words(const std::string& n);

/// Name similarity in [0, 1]: '_'-token overlap (prefix-tolerant) blended with edit distance.
double name_similarity(const std::string& a, const std::string& b);
/// `b` is `a` with one word turned into its opposite (get/set, lock/unlock, ...): never similar.
bool opposite_names(const std::string& a, const std::string& b);

} // namespace autodriver::propose
