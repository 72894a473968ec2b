#pragma once
// Trees of a recorded run rebuilt from the store (checkpoints), and counterfactual replays of
// `explain`'s attributions: the gate re-run on the tree before and after one accepted edit.

#include "autodriver/store/run_store.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

namespace autodriver::loop {

/// Writes into `tree` (a copy of the run's original tree) the files of every edit `run_id`
/// accepted at or before step `until_step`, after those of its own checkpoint when the run is a
/// rerun. `applied` counts the edits written; returns the seq of the last accept step used (0 = none).
util::Expected<std::int64_t> write_checkpoint(store::RunStore& st, std::int64_t run_id, std::int64_t until_step,
                                              const std::filesystem::path& tree, int& applied);

/// Builds a tree on the run's target kernel and returns the signatures
/// (store::diagnostic_signature) of its errors. Tests pass a fake.
using ReplayBuildFn = std::function<util::Expected<std::set<std::string>>(const std::filesystem::path& tree)>;

struct ReplayOptions {
  int max_replays = 2;                     ///< attributions checked, at most (each one or two builds)
  std::chrono::seconds build_timeout{120}; ///< per build
  std::chrono::seconds total{300};         ///< all replays together; the rest are skipped
};

/// Counterfactual replays where cheap. A `proposer-regression` attributed to an accepted edit is
/// confirmed when the error is absent from the tree just before that edit and present just after
/// it (two builds); an `input` cause when the original tree fails on its own kernel (one build);
/// a `missing-mapping`/`wrong-mapping` when the error is already in the original tree on the
/// target (one build). Each checked attribution gets "replay": {"result": "confirmed"|"refuted"|
/// "skipped", "why", "builds": [...]}; `doc["replays"]` counts them. `build` empty = the real
/// kbuild gate on the kernels of the run's args.
void replay_attributions(store::RunStore& st, const store::RunRow& run, nlohmann::json& doc, const ReplayOptions& options,
                         const ReplayBuildFn& build = {}, const ReplayBuildFn& build_from = {});

} // namespace autodriver::loop
