#pragma once
// The one C reader below gate and propose: a lexer (tokens and comments), the top-level "units"
// (function definitions and initialized declarations), calls, designated initializers and brace
// nesting across #if/#else. Driver sources are data: this only reads them, and any bytes
// (binary junk, unterminated comments or literals) yield a result, never a throw.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autodriver::csrc {

enum class TokKind { ident, number, string, chr, punct, pp_line };

struct Token {
  TokKind kind;
  std::string text;
  int line = 0;          ///< 1-based
  std::size_t begin = 0; ///< byte offsets into the source
  std::size_t end = 0;
  bool later_branch = false; ///< inside an #elif / #else branch of a preprocessor conditional
};

/// A comment: bytes [begin, end) of the source, its delimiters included.
struct Comment {
  std::size_t begin = 0;
  std::size_t end = 0;
  int line = 0; ///< 1-based line of its start
};

/// The one lexical pass over C source.
struct Lexed {
  std::vector<Token> tokens;     ///< comments dropped; a directive with its continuations is one pp_line token
  std::vector<Comment> comments; ///< every comment in source order, those inside directives too
};

/// Lexes C source: tokens and comments. String and character literals are skipped as a whole (a
/// quote or "//" inside one is no comment), also inside directives; a backslash before the end of
/// a directive's line (trailing blanks allowed) continues it.
Lexed lex(std::string_view src);

/// A character that may start a C identifier, and one that may continue it.
inline bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
/// `s` starts like a C identifier.
inline bool starts_ident(std::string_view s) { return !s.empty() && ident_start(s[0]); }

/// The tokens of lex(src).
std::vector<Token> tokenize(std::string_view src);

enum class UnitKind { function, initializer };

/// A top-level function definition or an initialized top-level declaration (`struct x y = {...};`).
struct Unit {
  UnitKind kind;
  std::string name;      ///< function or variable name
  std::string type;      ///< for initializers: "struct platform_driver"; for functions: return type text
  std::size_t first = 0; ///< token index range [first, last]
  std::size_t last = 0;
  std::size_t body = 0; ///< index of the '{' (or '=' for initializers)
};

std::vector<Unit> find_units(const std::vector<Token>& toks);

/// A call `name(arg, ...)` found in a token range.
struct Call {
  std::string callee;
  std::vector<std::string> args;                             ///< each argument's tokens joined with single spaces
  std::vector<std::pair<std::size_t, std::size_t>> arg_toks; ///< each argument's first and last token
  std::size_t name_tok = 0;
  std::size_t close_tok = 0;
};

std::vector<Call> find_calls(const std::vector<Token>& toks, std::size_t first, std::size_t last);

/// `.member = value` pairs of the outermost braces of an initializer unit.
struct Designated {
  std::string member;
  std::string value; ///< tokens joined with single spaces
  std::size_t dot_tok = 0;
  std::size_t end_tok = 0; ///< the ',' or '}' ending it
};

std::vector<Designated> designated_members(const std::vector<Token>& toks, const Unit& init);

/// For each token: false inside a later branch (#elif / #else) of a preprocessor conditional.
/// Counting braces only where it is true keeps the nesting right when both branches open a
/// block (`#if A` `if (x) {` `#else` `if (y) {` `#endif`).
std::vector<bool> first_branch_mask(const std::vector<Token>& toks);

/// Index of the bracket closing the '(' / '[' / '{' at `open`, or npos when unbalanced. Brackets
/// in later #elif/#else branches do not count (the first branch's nesting is the file's).
std::size_t matching_close(const std::vector<Token>& toks, std::size_t open);

/// The statements directly inside the block whose '{' is at `open`: each one's first and last
/// token (its ';' or closing '}'; `if (...) ... else ...` is one statement, a label `x:` one of
/// its own; directives are skipped). Empty when the block is unbalanced.
std::vector<std::pair<std::size_t, std::size_t>> block_statements(const std::vector<Token>& toks, std::size_t open);

/// An assignment `x = value` (a declaration's initializer too) in a token range: the index of x
/// and of the ';' or ',' that ends the value. Stores through something else (`p->x = v`,
/// `s.x = v`, `*x = v`) are not assignments of x.
struct VarAssignment {
  std::size_t var_tok = 0;
  std::size_t end_tok = 0;
};
std::vector<VarAssignment> assignments_of(const std::vector<Token>& toks, std::size_t first, std::size_t last,
                                          const std::string& x);

/// Token texts printed as C is written: `ACPI_COMPANION(&pdev->dev)`, `f(a, b)`, `struct x *`.
std::string c_text(const std::vector<std::string>& toks);

/// Tokens [first, last] joined with single spaces.
std::string join_tokens(const std::vector<Token>& toks, std::size_t first, std::size_t last);

/// The object path that starts at token i (`a`, `a->b`, `a.b->c`: identifiers joined by -> or .,
/// `a` not itself a member of something) as written without spaces, and the index of its last
/// token; an empty path when none starts there.
std::pair<std::string, std::size_t> object_path(const std::vector<Token>& toks, std::size_t i);

/// The object path whose last token is toks[i] (`adapter->tx_ring` of `tx_ring`), read backwards
/// over identifiers joined by -> or . as written without spaces; empty when toks[i] is no identifier.
std::string path_ending_at(const std::vector<Token>& toks, std::size_t i);

/// The member (or variable) an expression names last: `&p->timer`, `&dev.timer` and `timer` ->
/// timer (blanks, `&` and `*` ignored); empty for anything with a call, index or sum in it.
std::string last_member(std::string_view expr);

/// The type a function declares `name` with (`struct foo_priv *` of `struct foo_priv *p`), among
/// its parameters and locals: the tokens before the name back to `(`, `,`, `;` or `{`, without
/// `const`; empty when it declares none with a `*`.
std::string declared_type(const std::vector<Token>& t, const Unit& fn, const std::string& name);

/// `#include <x>` / `#include "x"` targets of the file, in order.
std::vector<std::string> includes_of(const std::vector<Token>& toks);

/// The functions whose tokens differ between two versions of a file, by name ("" stands for the
/// code outside every function, also reported when nothing inside one changed).
std::set<std::string> changed_functions(std::string_view before, std::string_view after);

/// True if `word` occurs as a whole identifier in `text`.
bool has_word(std::string_view text, std::string_view word);

/// `#define A B` with A and B single identifiers (comments and surrounding blanks allowed): {A, B};
/// nullopt for anything else. The one reader of such aliases.
std::optional<std::pair<std::string, std::string>> define_alias(std::string_view line);

/// The parts of a `#define NAME body` or `#define NAME(params) body` line: the macro's name, its
/// parameter names (none for an object-like macro) and the offset in `line` where its body starts.
struct MacroDefinition {
  std::string name;
  std::set<std::string> params;
  std::size_t body_offset = 0;
};
/// nullopt for any other directive or text.
std::optional<MacroDefinition> macro_definition(std::string_view line);

/// A type as a comparison key: tokens [first, last] without spaces and `const`, integer keywords
/// in one order (gcc prints `unsigned long` as `long unsigned int`).
std::string type_key(const std::vector<Token>& toks, std::size_t first, std::size_t last);
std::string type_key(std::string_view type);

} // namespace autodriver::csrc
