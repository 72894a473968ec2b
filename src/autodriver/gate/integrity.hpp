#pragma once
// The integrity gate: does a ported tree differ from the original only where the build
// diagnostics (or the API diff) demand it? Rejects degenerate "fixes": deleted or stubbed
// functions, disabled code, dropped objects, suppressed warnings, silencing casts, removed
// ops assignments and edits no diagnostic points at. Reads both trees, writes nothing.

#include "autodriver/core/diagnostic.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::gate {

struct IntegrityInput {
  std::filesystem::path original;            ///< the driver tree before porting (never modified)
  std::filesystem::path candidate;           ///< the ported tree
  std::vector<core::Diagnostic> diagnostics; ///< build diagnostics of the ORIGINAL tree on the target kernel
                                             ///< (file paths relative to the tree)
  std::vector<std::string> removed_symbols;  ///< identifiers/members the target kernel no longer has
                                             ///< (from the API diff), whose uses may legitimately be deleted;
                                             ///< a driver function among them (a retyped callback) may change
};

/// One rule that fired. `rule` is a stable kebab-case id: function-deleted, function-stubbed,
/// code-disabled, makefile-object-dropped, warning-suppressed, silencing-cast,
/// ops-assignment-removed, unrelated-change, shim-self-reference, shim-emptied.
struct IntegrityViolation {
  std::string rule;
  std::string file;   ///< relative to the tree
  int line = 0;       ///< 1-based line in the candidate (0: the file is gone or the whole file)
  std::string detail; ///< one line for humans, naming the function/member/flag and the original line
};

struct IntegrityReport {
  bool ok = true; ///< no violation
  std::vector<IntegrityViolation> violations;
  std::vector<std::string> changed_files; ///< relative paths that differ (added, removed or edited), sorted
  int hunks = 0;                          ///< change blocks over all changed text files
};

/// Compares the trees file by file (`diff -U0`), scans C sources with a small tokenizer and
/// applies every rule. Build products (*.o, *.ko, .*.cmd, ...) and .git are ignored.
/// Never throws: binary or oversized files that differ are reported as unrelated-change.
IntegrityReport check_integrity(const IntegrityInput& in);

/// {"ok", "hunks", "changed_files", "violations": [{rule, file, line, detail}], "rule_counts": {rule: n}}
nlohmann::json to_json(const IntegrityReport& r);

/// The rule ids, in the order they are checked.
const std::vector<std::string>& integrity_rule_ids();

} // namespace autodriver::gate
