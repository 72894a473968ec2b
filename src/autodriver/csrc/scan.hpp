#pragma once
// The line view of C source the integrity gate reads, over the one lexer (csrc/tokens.hpp): code
// and comments per line, preprocessor lines, top-level
// items (function definitions and declarations), their statements and member assignments.
// Driver sources are data: nothing here preprocesses, compiles or runs them, and any input
// (binary junk, unbalanced braces, unterminated comments) yields a result, never a throw.

#include <string>
#include <string_view>
#include <vector>

namespace autodriver::csrc {

enum class ItemKind { function, declaration };

/// One top-level item: a function definition or a declaration ending in ';'.
struct TopItem {
  ItemKind kind = ItemKind::declaration;
  std::string name;                    ///< function name, or the declared name ("pp_fops"); may be empty
  int first_line = 0;                  ///< 1-based, inclusive
  int last_line = 0;                   ///< 1-based, inclusive
  int body_line = 0;                   ///< functions: line of the body's '{'
  std::size_t begin = 0, end = 0;      ///< offsets into ScannedFile::text, [begin, end)
  std::vector<std::string> statements; ///< functions: body split at ';' '{' '}', whitespace-normalised
};

/// `.member = value` (designated initializer) or `x->member = value` / `x.member = value`.
struct Assignment {
  std::string scope; ///< name of the enclosing top-level item
  std::string member;
  std::string value; ///< whitespace-normalised expression text
  int line = 0;
};

struct ScannedFile {
  std::vector<std::string> raw;        ///< source lines, [0] is line 1
  std::vector<std::string> code;       ///< the same lines without comments, literal contents blanked
  std::vector<std::string> comment;    ///< comment text found on each line
  std::vector<bool> preproc;           ///< the line belongs to a preprocessor directive
  std::string text;                    ///< code joined by '\n' with preprocessor lines blanked
  std::vector<std::size_t> line_start; ///< offset of each line in `text`
  std::vector<TopItem> items;
  bool balanced = true; ///< braces matched; items are trustworthy

  int line_count() const { return static_cast<int>(raw.size()); }
  /// Line (1-based) has something besides comments and whitespace.
  bool has_code(int line) const;
  bool is_preproc(int line) const;
  const std::string& code_line(int line) const;
  const std::string& comment_line(int line) const;
  /// Innermost (only) top-level item covering `line`, or nullptr.
  const TopItem* item_at(int line) const;
  /// Line number of an offset into `text`.
  int line_of(std::size_t offset) const;
};

/// Scans C source text. Never throws; `balanced` is false when braces do not match.
ScannedFile scan(std::string_view text);

/// Identifiers in a piece of (comment-free) code, in order, keywords included.
std::vector<std::string> identifiers(std::string_view code);

/// Trims and collapses runs of whitespace to one space.
std::string normalize_space(std::string_view s);

/// Every member assignment and designated initializer, with the item it sits in.
std::vector<Assignment> member_assignments(const ScannedFile& f);

} // namespace autodriver::csrc
