#pragma once
// `corpus build`: DriveBench cases from two kernel source trees (in-tree units) and from
// Debian's DKMS packages. Parallel, resumable through the journal, interruptible.

#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace autodriver::corpus {

struct CorpusBuildOptions {
  std::string from = "6.1";
  std::string to = "6.12";
  std::filesystem::path out;
  int jobs = 2;
  std::vector<std::string> only; ///< unit path prefixes ("drivers/hwmon", "dkms/")
  std::size_t limit = 0;         ///< 0: all candidates
  bool dkms = true;              ///< include Debian's *-dkms packages as units "dkms/<name>"
  std::vector<std::string> roots = {"drivers", "sound", "net"};
  std::chrono::seconds build_timeout{300};
  bool dry_run = false; ///< enumerate and write units.jsonl, build nothing
};

struct Progress {
  std::size_t done = 0;  ///< decided units (including ones decided by earlier runs)
  std::size_t total = 0; ///< candidate units
  std::size_t cases = 0;
  std::size_t done_this_run = 0;
  std::chrono::steady_clock::duration elapsed{};
  std::string last_unit;
  std::string last_outcome;
};

using ProgressSink = std::function<void(const Progress&)>;

/// Runs the scan and returns the summary (also written to <out>/summary.json). Tool failures
/// (kernel missing, disk full, interrupted) are Errors; what was decided before stays decided.
util::Expected<nlohmann::json> build_corpus(const CorpusBuildOptions& options, const ProgressSink& progress,
                                            const std::function<void(const std::string&)>& note);

/// Recomputes the summary of a corpus directory from its journal and corpus.json.
util::Expected<nlohmann::json> corpus_summary(const std::filesystem::path& corpus);

} // namespace autodriver::corpus
