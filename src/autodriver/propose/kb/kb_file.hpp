#pragma once
// Compat knowledge base, part 2: the versioned KB file (entries with provenance), building it
// from source trees, loading it, and leaving sources out.

#include "autodriver/propose/kb/kb_extract.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::propose {

/// Bumped when the file format changes incompatibly; newer files are refused.
inline constexpr int k_kb_schema_version = 1;

struct KbProvenance {
  std::string package; ///< "v4l2loopback-dkms", or "linux-6.12" for a kernel tree
  std::string version; ///< the .deb file name or kernel release
  std::string file;    ///< relative to the source root
  int line = 0;        ///< line of the `#if`
};

struct KbEntry {
  std::string id;       ///< "kb-<16 hex>" of kind/old/new/boundary (stable across builds)
  std::string boundary; ///< "6.4.0": first kernel with the new form
  KbChange change;
  KbProvenance provenance;
};

struct Kb {
  std::vector<KbEntry> entries;
  std::vector<std::string> sources; ///< packages read
  ExtractStats stats;
};

/// Receives one file's text: its path relative to the source and the version it was read at.
using KbTextVisitor = std::function<void(const std::string& file, const std::string& version, std::string_view text)>;

/// One source to learn from: a package's unpacked source root, or the texts of every version of
/// its files (a git history, where blocks the maintainers dropped later still teach old changes).
struct KbSource {
  std::string package;
  std::string version;
  std::filesystem::path root;
  /// When set, read instead of the files under `root`; a change is kept once per file however
  /// many versions repeat it (the provenance names the first version that has it).
  std::function<void(const KbTextVisitor&)> texts;
};

/// Entries of every .c/.h under each source root (sorted by id, then provenance).
Kb build_kb(const std::vector<KbSource>& sources);

/// Entries of one file's text (used by build_kb and tests).
std::vector<KbEntry> kb_entries_of(std::string_view text, const KbProvenance& where, ExtractStats& stats);

nlohmann::json to_json(const Kb& kb);
/// Refuses a newer schema_version and malformed entries with one clear message.
util::Expected<Kb> kb_from_json(const nlohmann::json& j);

util::Expected<void> save_kb(const Kb& kb, const std::filesystem::path& path);
util::Expected<Kb> load_kb(const std::filesystem::path& path);

/// The KB without entries learned from `packages` (leave-one-source-out benchmarks).
Kb without_packages(const Kb& kb, const std::vector<std::string>& packages);

/// Default KB path: $AUTODRIVER_KB, else <cache_root()>/kb/compat-kb.json.
std::filesystem::path default_kb_path();

/// DKMS sources already unpacked in the cache (<cache>/dkms/<suite>/<pkg>/root/usr/src/<dir>),
/// each package once (its newest cached version), sorted.
std::vector<KbSource> cached_dkms_sources();

} // namespace autodriver::propose
