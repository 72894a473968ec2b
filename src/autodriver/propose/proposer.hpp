#pragma once
// Proposers: given the target build's diagnostics, propose edits. One file per proposer,
// registered in one explicit table (proposer_table()).

#include "autodriver/core/diagnostic.hpp"
#include "autodriver/core/kernel.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::propose {

struct Rule;

/// What a proposer may look at. Proposers never write the tree; the loop applies edits.
struct PortContext {
  const core::Kernel* from = nullptr;       ///< the driver's old kernel, null when unknown
  const core::Kernel* to = nullptr;         ///< the target kernel
  std::filesystem::path old_src;            ///< from-kernel source tree, empty when unknown
  std::filesystem::path new_src;            ///< target-kernel source tree
  std::vector<std::string> leave_out;       ///< kernel-relative paths never learned from
  std::filesystem::path tree;               ///< the current work tree (read only)
  std::filesystem::path original_tree;      ///< the user's tree as given (read only)
  std::filesystem::path scratch;            ///< scratch dir proposers may use
  std::vector<std::string> kb_leave_out;    ///< compat-kb: KB provenance packages never learned from
  std::filesystem::path kb_path;            ///< compat-kb: KB file; empty = $AUTODRIVER_KB or the cache
  std::filesystem::path store;              ///< store-kb: run store whose KB entries are replayed; empty = off
  std::string case_id;                      ///< store-kb: bench case whose own entries are never replayed
  const std::vector<Rule>* rules = nullptr; ///< the rule packs in use (rules.hpp); null or empty = none
  /// The run's wall-time budget ends then; proposers that wait (a model) stop there. Unset: none.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

/// A whole-line text replacement in one file of the tree (1-based, inclusive).
struct TextEdit {
  std::string file; ///< relative to the tree
  int line = 0;     ///< insert before this line when `remove` is 0
  int remove = 0;   ///< number of lines replaced
  std::string text; ///< replacement lines, each ending in '\n'
  /// The lines [line, line + remove) as proposed (for an insertion: the line before it), filled
  /// by fill_expectations(); applying relocates the edit to the nearest place they still match,
  /// so an edit stays right after another accepted edit moved lines, and fails when they are gone.
  std::optional<std::string> expect;
};

/// A call rewrite `from(E0..En-1)` -> `to(args)`, args are templates over "$i" (old argument i).
/// Applied on tokens when spatch cannot parse the use (e.g. declaration macros at top level).
struct CallRewrite {
  std::string from;
  std::size_t arity = 0;
  std::string to;
  std::vector<std::string> args;
};

/// One candidate fix for one API change.
struct Edit {
  std::string proposer;                                     ///< id of the proposer that made it
  std::string change_id;                                    ///< stable key of the API change, e.g. "call:class_create"
  std::string label;                                        ///< taxonomy: rename, arguments-changed, return-type-changed,
                                                            ///< member-changed, callback-type-changed, removed-with-replacement,
                                                            ///< header-moved, other
  std::string title;                                        ///< "class_create() lost an argument", for patch subjects
  std::string description;                                  ///< what changed in the kernel and where the rule came from
  std::string smpl;                                         ///< Coccinelle semantic patch, applied with spatch
  std::vector<TextEdit> text_edits;                         ///< used when SmPL cannot express it
  std::vector<std::pair<std::string, std::string>> renames; ///< whole-identifier renames (outside strings/comments)
  std::optional<CallRewrite> call;                          ///< the same rule as `smpl` for calls, as a token fallback
  std::vector<std::string> symbols;                         ///< the kernel symbols involved
  int support = 0;                                          ///< kernel sites that agree with the rule
  int rank = 0;                                             ///< 0 = best alternative for this change
  std::vector<std::string> evidence;                        ///< kernel files the rule was learned from (a few)
  /// A follow-up: this edit goes with an accepted edit of that change (its consequence elsewhere
  /// in the driver: the tests of a call's result), tried on top of it and kept when the build is
  /// no worse; never tried alone. Empty: an edit of its own.
  std::string follows;
};

nlohmann::json to_json(const Edit& e);

/// The inverse of to_json (missing fields keep their defaults; `call` is optional).
Edit edit_from_json(const nlohmann::json& j);

/// The text of the line a diagnostic points at in `tree` (no newline); nullopt when the
/// diagnostic has no line in the tree or the file is shorter.
std::optional<std::string> diagnostic_line(const std::filesystem::path& tree, const core::Diagnostic& d);

/// Records in each text edit the lines of `tree` it was proposed against (TextEdit::expect).
void fill_expectations(Edit& e, const std::filesystem::path& tree);

class Proposer {
public:
  virtual ~Proposer() = default;
  virtual std::string_view id() const = 0;
  /// Candidate edits for the diagnostics; alternatives for one change share change_id.
  virtual std::vector<Edit> propose(const std::vector<core::Diagnostic>& diagnostics, const PortContext& ctx) = 0;
};

/// One row of the proposer table. The loop asks the proposers in table order; an `alone_first`
/// proposer's edits are tried one at a time before any other edit, and an iteration that keeps
/// one ends there (they change which code compiles, so the other proposals may be moot).
struct ProposerEntry {
  std::string_view id;
  std::string_view description;
  std::unique_ptr<Proposer> (*make)();
  bool alone_first = false;
};

const std::vector<ProposerEntry>& proposer_table();

std::unique_ptr<Proposer> make_store_kb();
std::unique_ptr<Proposer> make_learned_rewrite();
std::unique_ptr<Proposer> make_callback_signature();
std::unique_ptr<Proposer> make_void_result();
std::unique_ptr<Proposer> make_return_fit();
std::unique_ptr<Proposer> make_argument_cast();
std::unique_ptr<Proposer> make_entry_points();
std::unique_ptr<Proposer> make_kbuild_vars();
std::unique_ptr<Proposer> make_header_fix();
std::unique_ptr<Proposer> make_compat_kb();
std::unique_ptr<Proposer> make_target_api();
std::unique_ptr<Proposer> make_inline_removed();
std::unique_ptr<Proposer> make_ops_swap();
std::unique_ptr<Proposer> make_struct_convert();
std::unique_ptr<Proposer> make_feature_switch();
std::unique_ptr<Proposer> make_rule_pack();

} // namespace autodriver::propose
