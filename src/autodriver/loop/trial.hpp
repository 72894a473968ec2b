#pragma once
// One trial of the port loop: a copy of the built work tree, the edits applied in order, and the
// build that judges them.

#include "autodriver/loop/builder.hpp"
#include "autodriver/loop/port.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace autodriver::loop {

struct Trial {
  std::optional<util::TempDir> dir; ///< holds `tree`, built: kept on the work tree when accepted
  std::filesystem::path tree;
  BuildState state;
  long copy_ms = 0;  ///< copying the built work tree
  long apply_ms = 0; ///< applying the edits (spatch, line edits)
  std::vector<std::pair<std::string, std::string>> snapshot;
  bool applied = false;
  bool reused = false; ///< the agents' review built it already: the loop's try took it as it was
  /// Per edit (in order): "file|function" it changed ("file|" for code outside functions).
  std::vector<std::set<std::string>> touched;
};

/// What every trial of a port shares.
struct TrialSetup {
  const std::filesystem::path& work;    ///< the built work tree
  const std::filesystem::path& scratch; ///< where trial copies go
  const core::Kernel& kernel;           ///< the target
  Builder& builder;
  const propose::ApplyOptions& apply_options;
  std::filesystem::path subdir; ///< the driver's folder in the tree (a root around it)
};

/// Copy `work` with its build (objects, .cmd files, timestamps), apply the edits in order, build:
/// kbuild recompiles only the files the edits changed and what depends on them. A trial whose
/// edits touch a few files is judged by compiling their objects alone (trial_objects.hpp) while
/// other files still have errors, and by the whole module once they are clean. Returns the
/// state, the built copy and the changed files' contents.
util::Expected<Trial> try_edits(const std::vector<const propose::Edit*>& edits, const TrialSetup& setup, const BuildLimit& limit,
                                const BuildState& cur);

/// Writes the files of a snapshot (relative path, text) into `work`.
util::Expected<void> write_snapshot(const std::filesystem::path& work,
                                    const std::vector<std::pair<std::string, std::string>>& snap);

/// Replays `accepted` except entry `skip` on a fresh copy of the original tree, recording new
/// snapshots (a later edit's snapshot of a shared file must not carry the dropped edit).
util::Expected<std::vector<AcceptedEdit>> replay_without(const std::vector<AcceptedEdit>& accepted, std::size_t skip,
                                                         const std::filesystem::path& original, const std::filesystem::path& tree,
                                                         const std::filesystem::path& scratch,
                                                         const propose::ApplyOptions& options);

} // namespace autodriver::loop
