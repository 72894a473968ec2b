#pragma once
// Change-type labels for a case (docs/case-format.md "Taxonomy"): from the kinds of the 6.12
// diagnostics and from comparing the declarations of the symbols they name in the 6.1 and 6.12
// headers. Also produces api_delta.patch: the header hunks that declare those symbols.

#include "autodriver/core/diagnostic.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace autodriver::corpus {

/// The taxonomy, in a fixed order (stored on disk as these strings).
const std::vector<std::string>& change_types();

struct HeaderDecl {
  std::string file; ///< relative to the tree, "include/linux/fs.h"
  int line = 0;     ///< 1-based line of the declaration's first line
  std::string kind; ///< "macro", "function", "struct", "typedef", "variable"
  std::string text; ///< the declaration region (up to ~60 lines)
};

/// Declarations in a kernel tree's include/ and arch/x86/include/ (one grep per query).
class HeaderIndex {
public:
  explicit HeaderIndex(std::filesystem::path tree) : m_tree(std::move(tree)) {}
  /// Finds where each symbol is declared; "struct x" finds the struct body. Missing symbols are absent.
  std::map<std::string, HeaderDecl> find(const std::vector<std::string>& symbols) const;
  bool header_exists(const std::string& include_path) const;
  const std::filesystem::path& tree() const { return m_tree; }

private:
  std::filesystem::path m_tree;
};

struct ApiChange {
  std::string symbol;      ///< "class_create", "struct i2c_driver.probe_new", "linux/foo.h"
  std::string change_type; ///< one of change_types()
  std::string evidence;    ///< the first diagnostic message that led to it
  std::string suggestion;  ///< gcc's "did you mean" when present
  std::string decl_from;   ///< "include/linux/device/class.h:245" in the old tree, empty if none
  std::string decl_to;
};

struct Classification {
  std::vector<ApiChange> changes;
  std::vector<std::string> labels; ///< sorted, unique
  std::string description;
  std::string api_delta; ///< unified diff text
};

/// `driver_sources` are the texts of the driver's files (to find which struct a callback belongs to).
Classification classify(const std::vector<core::Diagnostic>& diagnostics, const HeaderIndex& from, const HeaderIndex& to,
                        const std::vector<std::string>& driver_sources);

/// A minimal unified diff of two regions (one hunk), labelled a/<from_file> and b/<to_file>.
std::string region_diff(const HeaderDecl* from, const HeaderDecl* to);

nlohmann::json to_json(const ApiChange& c);

} // namespace autodriver::corpus
