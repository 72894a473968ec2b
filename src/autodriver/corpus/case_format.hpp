#pragma once
// The DriveBench case format (docs/case-format.md), shared by `corpus build` and `corpus mine`:
//   <corpus>/cases/<id>/{metadata.json, before/, golden/, diagnostics.json, api_delta.patch}
// A case directory is written under a temporary name and renamed into place, so a reader never
// sees half a case.

#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::corpus {

/// metadata.json "schema_version". Bump on incompatible changes; readers refuse newer ones.
inline constexpr int k_case_schema_version = 1;
/// corpus.json "schema_version".
inline constexpr int k_corpus_schema_version = 1;

struct CaseFiles {
  nlohmann::json metadata;                              ///< must hold "id"; schema_version is set by write_case
  std::filesystem::path before;                         ///< directory copied to before/
  std::filesystem::path golden;                         ///< directory copied to golden/ (empty: no golden)
  nlohmann::json diagnostics = nlohmann::json::array(); ///< Diagnostic JSON objects
  std::string api_delta;                                ///< unified diff text (may be empty)
};

/// "drivers/hwmon/w83793" -> "drivers__hwmon__w83793" (a directory name).
std::string case_id_from_path(std::string_view unit_path);

/// <corpus>/cases/<id>.
std::filesystem::path case_dir(const std::filesystem::path& corpus, const std::string& id);

/// Writes the case atomically (temp dir + rename; replaces an older copy). On error nothing is left.
util::Expected<std::filesystem::path> write_case(const std::filesystem::path& corpus, const CaseFiles& c);

/// Reads and checks <case>/metadata.json (refuses a newer schema_version).
util::Expected<nlohmann::json> read_case_metadata(const std::filesystem::path& case_dir);

/// Every case directory of a corpus, sorted by id (temporary directories excluded).
std::vector<std::filesystem::path> list_cases(const std::filesystem::path& corpus);

enum class WithFiles { yes, no };

/// One JSON object per case and line: metadata plus (WithFiles::yes) "before"/"golden" as
/// {relative path: text}, "diagnostics" and "api_delta". Written atomically. Returns the count.
util::Expected<std::size_t> export_jsonl(const std::filesystem::path& corpus, const std::filesystem::path& out,
                                         WithFiles with_files, const std::string& split_filter);

/// Creates or checks <corpus>/corpus.json ({schema_version, from, to, ...}); a corpus built for other
/// kernels is refused with a clear message.
util::Expected<void> init_corpus_dir(const std::filesystem::path& corpus, const nlohmann::json& identity);

} // namespace autodriver::corpus
