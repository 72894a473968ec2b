#pragma once
// `corpus mine`: DriveBench's method on a kernel git repository. Walks a commit range, keeps the
// commits that change core kernel files and driver files together (mine_rules.hpp), and writes one
// case directory per commit: the core diff, each touched driver file before and after, the message.

#include "autodriver/corpus/mine_rules.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace autodriver::corpus {

enum class IncludeTreewide { yes, no };

struct MineOptions {
  std::filesystem::path repo;
  std::string range; ///< "A..B": commits reachable from B and not from A
  std::filesystem::path out;
  std::size_t treewide_threshold = 50;     ///< more driver files than this: treewide
  std::uint64_t max_file_bytes = 4u << 20; ///< larger driver files are not copied (recorded as skipped)
  IncludeTreewide include_treewide = IncludeTreewide::no;
  std::size_t limit = 0; ///< stop after this many new cases (0: no limit)
};

/// A commit the summary lists instead of a case directory (treewide) or next to it (failed).
struct CommitNote {
  std::string commit;
  std::string subject;
  std::size_t core_files = 0;
  std::size_t driver_files = 0;
  std::size_t driver_units = 0;
  std::string reason;
};

struct MineSummary {
  std::string repo;
  std::string range;
  std::string from_commit;
  std::string to_commit;
  std::size_t commits_in_range = 0;
  std::size_t commits_walked = 0;
  std::map<std::string, std::size_t> by_kind; ///< CommitKind name -> count
  std::size_t cases_written = 0;
  std::size_t cases_present = 0;     ///< written by an earlier run, left alone
  std::vector<std::string> case_ids; ///< written or present, in walk order
  std::vector<CommitNote> treewide;
  std::vector<CommitNote> failed; ///< commits that could not be read; the run went on
  bool stopped_by_limit = false;
  double seconds = 0;

  nlohmann::json to_json() const;
};

struct MineProgress {
  std::size_t done = 0;
  std::size_t total = 0;
  std::size_t cases = 0;
};
using MineProgressFn = std::function<void(const MineProgress&)>;

/// The case directory name of a mined commit.
std::string mined_case_id(const std::string& commit_sha);

/// Mines `opts.range` of `opts.repo` into `opts.out`. Resumable: commits whose case directory
/// exists are not redone. Each case directory appears whole or not at all (temp dir + rename).
/// Errors: not a repository, bad range, unknown revision, output not writable, interrupted.
util::Expected<MineSummary> mine(const MineOptions& opts, const MineProgressFn& progress);

} // namespace autodriver::corpus
