#pragma once
// What the port loop knows of one build: its errors, their signatures and the score that says
// whether a trial made progress. Pure data and decisions, no builds: the loop's tests drive them
// with scripted diagnostics.

#include "autodriver/core/diagnostic.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace autodriver::loop {

struct BuildState {
  bool ok = false;
  bool timed_out = false;
  bool by_budget = false;        ///< the time left in the budget, not --build-timeout, cut it
  std::chrono::seconds limit{0}; ///< the timeout it ran under
  int compiled = 0;              ///< C files compiled (an incremental trial: only what changed)
  long ms = 0;
  /// Judged by compiling the changed files alone (kbuild single objects), the other files'
  /// diagnostics carried over from the build it started from; never `ok` (a full build says that).
  bool objects_only = false;
  /// Objects-only, and a changed header was judged by a sample of the files including it: the
  /// other files' diagnostics may be stale until a full build.
  bool sampled = false;
  bool exited_ok = false;               ///< make exited 0
  std::vector<core::Diagnostic> errors; ///< error/fatal diagnostics
  std::vector<core::Diagnostic> all;
  std::set<std::string> signatures;
  int type_warnings = 0;            ///< int-conversion / incompatible-pointer warnings
  int fatal = 0;                    ///< fatal errors (a missing header stops the file's compilation)
  std::vector<std::string> modules; ///< names of the .ko files built ("vmxnet3")
  /// A build that failed with no diagnostic: its own last lines (gate::build_failure_tail).
  std::string failure;
  /// Errors, plus type-safety warnings: an edit that compiles only by converting a pointer to
  /// an integer (a wrong rename) must not look like progress. A fatal error hides every error
  /// after it, so removing one is progress even when the compiler then finds more.
  /// What reports show: distinct error messages (0 when the build passes).
  int error_count() const { return ok ? 0 : std::max<int>(1, static_cast<int>(signatures.size())); }
  int score() const { return (ok ? 0 : std::max<int>(1, static_cast<int>(signatures.size()))) + type_warnings + 1000 * fatal; }
};

/// How long a build may take and with how many jobs; the loop sets it from the budget left and
/// the first build's measured time.
struct BuildLimit {
  std::chrono::seconds timeout{300};
  bool by_budget = false;
  int jobs = 1;
};

/// File + message: lines move when code is edited, so this identifies an error across builds.
std::string error_signature(const core::Diagnostic& d);

/// Counts one of a build's diagnostics into `s` (its errors and type-safety warnings).
void count_diagnostic(BuildState& s, const core::Diagnostic& d);

/// A build state from a build's diagnostics (`ok`: make exited 0 and a module was linked).
BuildState state_of(const std::vector<core::Diagnostic>& diagnostics, bool ok);

/// The score of a trial against the current state, lower is better: its errors and type
/// warnings, plus one for every new error on a line where an error was removed (an error that
/// moved is no progress); a fatal error that moved further down its file, or a build that got
/// past the compiler, counts as progress.
int trial_score(const BuildState& cur, const BuildState& trial);

/// Whether every error of `trial` was already an error of `cur` (by signature): nothing new.
bool adds_no_error(const BuildState& cur, const BuildState& trial);

/// "file:line: message" of each diagnostic once, with the diagnostic (a header's error is
/// reported by every file including it).
std::vector<std::pair<std::string, const core::Diagnostic*>> distinct(const std::vector<core::Diagnostic>& ds);
std::vector<std::string> distinct_errors(const std::vector<core::Diagnostic>& ds);
nlohmann::json diag_list(const std::vector<core::Diagnostic>& ds);

} // namespace autodriver::loop
