#pragma once
// Knowledge base of solved diagnostics in the run store: diagnostic signature -> API change ->
// applied edit -> gate evidence, with provenance; scrubbed bundles to share between teams.

#include "autodriver/store/run_store.hpp"

namespace autodriver::store {

inline constexpr int k_kb_bundle_version = 1;

struct KbEntry {
  std::int64_t id = 0;
  std::string signature; ///< diagnostic_signature() of a diagnostic the edit solved
  std::string change_id; ///< "call:class_create"
  std::string label;     ///< taxonomy label of the change
  std::string title;
  std::string proposer;
  nlohmann::json edit = nlohmann::json::object();     ///< propose::to_json(Edit)
  std::string patch;                                  ///< the patch text (stored as a blob)
  nlohmann::json evidence = nlohmann::json::object(); ///< errors before/after, integrity, gates, kernels
  std::optional<std::int64_t> run_id;
  std::string origin = "local"; ///< "local" or "import:<bundle file name>"
  std::string created_at;
};

/// "kind: message" with quotes normalised, absolute paths reduced to their file name, `file:line`
/// positions reduced to the file and whitespace collapsed: the same error in another tree or on
/// another line has the same key (the message keeps the symbol, member and type names).
std::string diagnostic_signature(const nlohmann::json& diagnostic);

/// Whether a recorded edit is data only: its SmPL has no script/initialize/finalize rule and
/// includes no other file (spatch would run or read them). `why` says what was found.
bool kb_edit_is_data(const nlohmann::json& edit, std::string* why = nullptr);

/// Adds an entry; returns false when the same (signature, change, patch) is already there.
util::Expected<bool> add_kb_entry(RunStore& store, const KbEntry& entry);
/// Entries whose signature equals `signature` (all entries when empty), best evidence first.
util::Expected<std::vector<KbEntry>> kb_entries(RunStore& store, const std::string& signature = "");

/// Removes what must not leave the machine from every string: absolute paths (file name kept),
/// the user's login and home, the host name, and things that look like keys or tokens.
nlohmann::json scrub(const nlohmann::json& value);

/// The versioned bundle {"schema": "autodriver.kb-bundle", "schema_version": 1, "entries": [...]}, scrubbed.
nlohmann::json export_kb_bundle(const std::vector<KbEntry>& entries);
/// Reads a bundle (data only: nothing in it is run); refuses newer versions and malformed
/// entries with one line naming the entry. Returns the number of new entries.
util::Expected<int> import_kb_bundle(RunStore& store, const nlohmann::json& bundle, const std::string& origin);

} // namespace autodriver::store
